/**
 * ICE settings for the werift answerer, and the Deno permissions each choice needs.
 *
 * werift skips loopback when it gathers host candidates, and an ordinary Chrome never pairs its
 * own (non-loopback) candidates with a 127.0.0.1 one: a loopback-only server is reachable only
 * from a Chromium started with `--allow-loopback-in-peer-connection` (sandboxes, tests). A
 * human's browser, even on the same machine, needs a LAN address, hence `"interfaces"`.
 * @module
 */

/** A STUN or TURN server, as in the browser's RTCIceServer. */
export interface IceServer {
  /** Server URL or URLs (`stun:host:port`, `turn:host:port?transport=udp`). */
  urls: string | string[];
  /** TURN username. */
  username?: string;
  /** TURN password. */
  credential?: string;
}

/**
 * Where ICE gathers host candidates:
 * - `"loopback"`: 127.0.0.1 only, sockets bound there. No interface scan, no wildcard bind.
 * - `"interfaces"`: every non-internal IPv4 interface plus 127.0.0.1, sockets on 0.0.0.0
 *   (werift's default scan, `os.networkInterfaces()`).
 * - `{ address }`: that IPv4 address only, sockets bound there.
 */
export type IceMode = "loopback" | "interfaces" | { address: string };

/** The subset of werift's peer configuration this module sets. */
export interface IcePeerConfig {
  /** STUN / TURN servers handed to werift. */
  iceServers: IceServer[];
  /** Whether werift scans interfaces for IPv4 host candidates. */
  iceUseIpv4: boolean;
  /** Whether werift scans interfaces for IPv6 host candidates (always false here). */
  iceUseIpv6: boolean;
  /** Whether ICE-TCP candidates are gathered (always false here). */
  iceUseTcp: boolean;
  /** Host addresses advertised besides the scanned ones. */
  iceAdditionalHostAddresses: string[] | undefined;
  /** Address the UDP sockets bind to; undefined binds the wildcard. */
  iceInterfaceAddresses: { udp4?: string; udp6?: string } | undefined;
}

/** Deno permissions an {@link IceMode} needs: `net` null means unrestricted. */
export interface IcePermissions {
  /** Hosts `--allow-net` must grant; null means unrestricted network access is needed. */
  net: string[] | null;
  /** `--allow-sys` names needed (e.g. `networkInterfaces`). */
  sys: string[];
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
 * The mode that mirrors an HTTP listen address: loopback stays on loopback, a literal IPv4
 * address pins ICE to it, anything else (`0.0.0.0`, a hostname, undefined) uses every
 * interface. Remember that `"loopback"` shuts out ordinary browsers (see the module notes).
 */
export function iceModeForHost(host: string | undefined): IceMode {
  if (isLoopbackHost(host)) return "loopback";
  const h = host?.trim();
  if (h !== undefined && isIpv4Literal(h) && h !== "0.0.0.0") return { address: h };
  return "interfaces";
}

/**
 * werift ICE settings for `mode`. `extraHosts` are advertised too (e.g. the public address of
 * a 1:1 NAT in front of this host).
 */
export function icePeerConfig(
  mode: IceMode,
  extraHosts: string[] = [],
  iceServers: IceServer[] = [],
): IcePeerConfig {
  if (mode === "interfaces") {
    return {
      iceServers,
      iceUseIpv4: true,
      iceUseIpv6: false,
      iceUseTcp: false,
      // No 127.0.0.1 here: an ordinary browser never pairs with loopback, and werift would
      // answer it from a wildcard socket whose replies leave from another address.
      iceAdditionalHostAddresses: extraHosts.length > 0 ? [...extraHosts] : undefined,
      iceInterfaceAddresses: undefined,
    };
  }
  const pinned = mode === "loopback" ? "127.0.0.1" : mode.address;
  // With the scan off werift neither calls os.networkInterfaces() (no --allow-sys) nor binds
  // the wildcard address: every socket sits on `pinned`.
  return {
    iceServers,
    iceUseIpv4: false,
    iceUseIpv6: false,
    iceUseTcp: false,
    iceAdditionalHostAddresses: [pinned, ...extraHosts.filter((h) => h !== pinned)],
    iceInterfaceAddresses: { udp4: pinned },
  };
}

/**
 * Deno permissions the WebRTC leg needs in `mode`. UDP goes to the browser's addresses, which
 * are known in advance only for `"loopback"`; otherwise `net` is null (unrestricted). A browser
 * on the same machine needs no more than `0.0.0.0` (`"interfaces"` binds the wildcard) plus
 * this machine's addresses.
 */
export function icePermissions(mode: IceMode): IcePermissions {
  if (mode === "loopback") return { net: ["127.0.0.1"], sys: [] };
  return { net: null, sys: mode === "interfaces" ? ["networkInterfaces"] : [] };
}

/**
 * The permission flags `mode` lacks in this process, e.g. `["--allow-net=0.0.0.0"]`; empty
 * when all are granted. Checked before werift starts: a wildcard bind without permission
 * throws from inside node:dgram where nothing can catch it, and a refused interface scan
 * silently yields no candidates.
 */
export function missingIcePermissions(mode: IceMode): string[] {
  const granted = (d: Deno.PermissionDescriptor) =>
    Deno.permissions.querySync(d).state === "granted";
  const missing: string[] = [];
  const bind = mode === "interfaces" ? "0.0.0.0" : mode === "loopback" ? "127.0.0.1" : mode.address;
  if (!granted({ name: "net", host: bind })) missing.push(`--allow-net=${bind}`);
  if (mode === "interfaces" && !granted({ name: "sys", kind: "networkInterfaces" })) {
    missing.push("--allow-sys=networkInterfaces");
  }
  return missing;
}
