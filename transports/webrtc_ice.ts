/**
 * ICE settings for the werift answerer, chosen from the address the HTTP server listens on.
 *
 * werift skips loopback when it gathers host candidates, so a server on 127.0.0.1 (the
 * default) must add 127.0.0.1 itself and bind its sockets there. Turning werift's own interface
 * scan off in that case also keeps it from calling `os.networkInterfaces()` (no `--allow-sys`)
 * and from binding the wildcard address (no `--allow-net=0.0.0.0`).
 * @module
 */

/** A STUN or TURN server, as in the browser's RTCIceServer. */
export interface IceServer {
  urls: string | string[];
  username?: string;
  credential?: string;
}

/** The subset of werift's peer configuration this module sets. */
export interface IcePeerConfig {
  iceServers: IceServer[];
  iceUseIpv4: boolean;
  iceUseIpv6: boolean;
  iceUseTcp: boolean;
  iceAdditionalHostAddresses: string[] | undefined;
  iceInterfaceAddresses: { udp4?: string; udp6?: string } | undefined;
}

/** True for `localhost`, 127.0.0.0/8 and `::1` (bracketed or not). */
export function isLoopbackHost(host: string | undefined): boolean {
  if (host === undefined) return false;
  const h = host.trim().toLowerCase().replace(/^\[|\]$/g, "");
  return h === "localhost" || h === "::1" || /^127\.\d+\.\d+\.\d+$/.test(h);
}

function isIpv4Literal(host: string): boolean {
  const parts = host.split(".");
  return parts.length === 4 && parts.every((p) => /^\d{1,3}$/.test(p) && Number(p) <= 255);
}

/**
 * werift ICE settings for a server listening on `host`:
 * - loopback: bind and advertise 127.0.0.1 only (UDP);
 * - a literal IPv4 other than 0.0.0.0: bind and advertise that address only;
 * - anything else: every non-internal interface, sockets on the wildcard address.
 * `extraHosts` are advertised too (e.g. a 1:1 NAT's public address).
 */
export function peerConfigForHost(
  host: string | undefined,
  extraHosts: string[] = [],
  iceServers: IceServer[] = [],
): IcePeerConfig {
  const pinned = isLoopbackHost(host)
    ? "127.0.0.1"
    : host !== undefined && isIpv4Literal(host.trim()) && host.trim() !== "0.0.0.0"
    ? host.trim()
    : undefined;
  if (pinned !== undefined) {
    return {
      iceServers,
      iceUseIpv4: false,
      iceUseIpv6: false,
      iceUseTcp: false,
      iceAdditionalHostAddresses: [pinned, ...extraHosts.filter((h) => h !== pinned)],
      iceInterfaceAddresses: { udp4: pinned },
    };
  }
  return {
    iceServers,
    iceUseIpv4: true,
    iceUseIpv6: false,
    iceUseTcp: false,
    iceAdditionalHostAddresses: extraHosts.length > 0 ? extraHosts : undefined,
    iceInterfaceAddresses: undefined,
  };
}
