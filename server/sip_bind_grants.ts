/**
 * The `--allow-net` entries for the sockets a SIP trunk binds on the wildcard address: the SIP
 * port (UDP, and TCP on the same port), the SIP TLS port when the agent accepts TLS, and every
 * even RTP port it may try (`rtp_port_base`, +2, ... `rtp_port_tries` of them) with the odd RTCP
 * port above it. Deno takes no
 * port ranges (`0.0.0.0:16000-16398` is refused), so each port is its own entry.
 *
 * @example
 * ```ts
 * import { sipBindGrants } from "./sip_bind_grants.ts";
 * sipBindGrants({ sipPort: 5060, rtpPortBase: 16000, rtpPortTries: 2 }, "0.0.0.0");
 * // ["0.0.0.0:5060", "0.0.0.0:16000", "0.0.0.0:16001", "0.0.0.0:16002", "0.0.0.0:16003"]
 * ```
 * @module
 */

import type { SipTrunkConfig } from "./config_types.ts";

/**
 * Above this many ports the bind address is granted whole. Deno checks every UDP send against
 * the list one entry at a time (measured on Deno 2.9.6: about 2 µs more per send with 200
 * entries, 17 µs with 2000), and one argument may not exceed 128 KiB on Linux (about 9000
 * entries).
 */
export const MAX_EXACT_BIND_PORTS = 512;

/** The ports of `sip` bound on `host`, one `host:port` entry each; `[host]` past the cap. */
export function sipBindGrants(
  sip: Pick<SipTrunkConfig, "sipPort" | "rtpPortBase" | "rtpPortTries" | "tls">,
  host: string,
): string[] {
  const ports = [sip.sipPort];
  const tls = sip.tls;
  if (tls !== undefined && tls.certFile !== undefined && tls.keyFile !== undefined) {
    // Port 0 asks for any free port: only the whole address covers it.
    if (tls.port === 0) return [host];
    ports.push(tls.port);
  }
  for (let i = 0; i < sip.rtpPortTries; i++) {
    const port = sip.rtpPortBase + 2 * i;
    if (port > 65534) break;
    ports.push(port, port + 1); // RTP, and RTCP on the port above it
  }
  const unique = [...new Set(ports)];
  if (unique.length > MAX_EXACT_BIND_PORTS) return [host];
  return unique.map((p) => `${host}:${p}`);
}
