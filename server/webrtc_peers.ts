/**
 * Where the playground's WebRTC media may be sent, as `--allow-net` entries, from this host's
 * network interfaces. The server answers each ICE check to the address it came from, and Deno
 * checks every datagram's destination, so the grant has to name the browsers' addresses:
 *
 * - a browser on this machine sends from one of this host's own interface addresses (browsers
 *   never use loopback for WebRTC), so those addresses are granted;
 * - when the server listens beyond loopback, browsers on the same LAN segments may call too, so
 *   each interface's subnet is granted as a CIDR range (Deno accepts `a.b.c.d/n`).
 *
 * Anything further away (routed LANs, the internet) is the operator's choice:
 * `playground.media_hosts`, or `"*"`.
 *
 * @example
 * ```ts
 * webrtcPeerHosts("127.0.0.1", [{ address: "192.0.2.2", cidr: "192.0.2.2/24" }]);
 * // ["192.0.2.2"]
 * webrtcPeerHosts("0.0.0.0", [{ address: "192.0.2.2", cidr: "192.0.2.2/24" }]);
 * // ["192.0.2.2", "192.0.2.0/24"]
 * ```
 * @module
 */

/** The part of `Deno.NetworkInterfaceInfo` the grant needs. */
export interface InterfaceAddress {
  /** The interface's address, e.g. `192.0.2.2`. */
  address: string;
  /** Address with prefix length, e.g. `192.0.2.2/24`; absent when unknown. */
  cidr?: string | null;
}

function isIpv4(address: string): boolean {
  const parts = address.split(".");
  return parts.length === 4 && parts.every((p) => /^\d{1,3}$/.test(p) && Number(p) <= 255);
}

function isLoopbackAddress(host: string): boolean {
  const h = host.replace(/^\[|\]$/g, "").toLowerCase();
  return h === "localhost" || h === "::1" || /^127\.\d{1,3}\.\d{1,3}\.\d{1,3}$/.test(h);
}

/** `192.0.2.77/24` -> `192.0.2.0/24`; undefined for anything but an IPv4 CIDR. */
export function ipv4Network(cidr: string): string | undefined {
  const [address, bits] = cidr.split("/");
  const n = Number(bits);
  if (address === undefined || !isIpv4(address) || !/^\d{1,2}$/.test(bits ?? "") || n > 32) {
    return undefined;
  }
  const value = address.split(".").reduce((acc, p) => (acc << 8 | Number(p)) >>> 0, 0);
  const mask = n === 0 ? 0 : (0xffffffff << (32 - n)) >>> 0;
  const net = (value & mask) >>> 0;
  return `${[24, 16, 8, 0].map((s) => (net >>> s) & 0xff).join(".")}/${n}`;
}

/**
 * The `--allow-net` entries for WebRTC peers when the HTTP server listens on `listenHost`:
 * this host's IPv4 interface addresses, plus their subnets unless `listenHost` is loopback.
 */
export function webrtcPeerHosts(
  listenHost: string,
  interfaces: readonly InterfaceAddress[],
): string[] {
  const v4 = interfaces.filter((i) => isIpv4(i.address) && !isLoopbackAddress(i.address));
  const out = v4.map((i) => i.address);
  if (!isLoopbackAddress(listenHost)) {
    for (const i of v4) {
      const net = i.cidr ? ipv4Network(i.cidr) : undefined;
      // A /32 (or a host route) is the address itself, already granted.
      if (net !== undefined && !net.endsWith("/32")) out.push(net);
    }
  }
  return [...new Set(out)];
}

/** This host's interface addresses; empty when `--allow-sys=networkInterfaces` is missing. */
export function hostInterfaces(): InterfaceAddress[] {
  try {
    return Deno.networkInterfaces();
  } catch {
    return [];
  }
}

/**
 * This host's IPv4 interface addresses that `--allow-net` does not cover (`granted` says
 * whether a host, any port, is allowed): a browser on this machine sends its WebRTC media from
 * one of them, and the server's answers to it would be refused. Flags baked into a compiled
 * program at build time cannot know the addresses of the machine it runs on.
 */
export function ungrantedPeerAddresses(
  interfaces: readonly InterfaceAddress[],
  granted: (host: string) => boolean,
): string[] {
  return webrtcPeerHosts("127.0.0.1", interfaces).filter((a) => !granted(a));
}

/** The start-up warning for {@link ungrantedPeerAddresses}; undefined when all are granted. */
export function playgroundPeerWarning(missing: readonly string[]): string | undefined {
  if (missing.length === 0) return undefined;
  return `  warning: --allow-net does not cover this host's address ${missing.join(", ")}: a ` +
    "browser on this machine gets no playground audio (a compiled program's flags are fixed " +
    "when it is built). Add them to playground.media_hosts and rebuild, or run deno task start";
}
