/**
 * Small pieces of the connection guard (server/conn_guard.ts): its listeners, the key a client
 * is counted under, whole writes, and the https view of a request that came in over TLS.
 * @module
 */

import { errorMessage, FlowcatError } from "../core/errors.ts";
import type { TlsPem } from "./tls.ts";

/** The loopback address of the hop to `Deno.serve`. */
export const GUARD_HOP_HOST = "127.0.0.1";

/** The key a client counts under: its IPv4 address, or its IPv6 /64. */
export function clientKey(hostname: string): string {
  if (!hostname.includes(":")) return hostname;
  const groups = hostname.split(":");
  // An IPv4-mapped address counts as its IPv4 one.
  const last = groups[groups.length - 1];
  if (last.includes(".")) return last;
  return expandV6(hostname).slice(0, 4).join(":");
}

function expandV6(h: string): string[] {
  const [head, tail] = h.split("::");
  const a = head === "" ? [] : head.split(":");
  const b = tail === undefined || tail === "" ? [] : tail.split(":");
  const zeros = tail === undefined ? [] : new Array(8 - a.length - b.length).fill("0");
  return [...a, ...zeros, ...b].map((g) => g.toLowerCase().replace(/^0+(?=.)/, ""));
}

/**
 * `req` with an https URL. Its signal is not carried over: Deno warns once on reading a served
 * request's signal, and no handler here watches it.
 */
export function asHttps(req: Request): Request {
  const init: RequestInit & { duplex?: "half" } = { method: req.method, headers: req.headers };
  if (req.body !== null) {
    init.body = req.body;
    init.duplex = "half";
  }
  return new Request(req.url.replace(/^http:/, "https:"), init);
}

/** Whether `buf[0, n)` starts with `prefix`. */
export function startsWith(buf: Uint8Array, n: number, prefix: Uint8Array): boolean {
  if (n < prefix.length) return false;
  for (let i = 0; i < prefix.length; i++) if (buf[i] !== prefix[i]) return false;
  return true;
}

/** Write all of `bytes`, in as many writes as the socket takes. */
export async function writeAll(conn: Deno.Conn, bytes: Uint8Array): Promise<void> {
  let off = 0;
  while (off < bytes.length) off += await conn.write(off === 0 ? bytes : bytes.subarray(off));
}

/** `Deno.serve` on the hop port; a port in use is a config error naming `hop_port`. */
export function serveHop(
  port: number,
  onListen: () => void,
  handler: Deno.ServeHandler<Deno.NetAddr>,
): Deno.HttpServer<Deno.NetAddr> {
  try {
    return Deno.serve({ hostname: GUARD_HOP_HOST, port, onListen }, handler);
  } catch (e) {
    throw new FlowcatError(
      "config",
      `connection guard: cannot listen on ${GUARD_HOP_HOST}:${port} (server.guard.hop_port, ` +
        `default the listen port + 1; set it to a free port): ${errorMessage(e)}`,
    );
  }
}

/** The public listener: TLS (HTTP/1.1 only) when a certificate is given. */
export function listenPublic(
  opts: { hostname: string; port: number; reusePort?: boolean; tls?: TlsPem },
): Deno.Listener {
  return opts.tls
    ? Deno.listenTls({
      hostname: opts.hostname,
      port: opts.port,
      cert: opts.tls.cert,
      key: opts.tls.key,
      alpnProtocols: ["http/1.1"],
      reusePort: opts.reusePort === true,
    })
    : Deno.listen({ hostname: opts.hostname, port: opts.port, reusePort: opts.reusePort === true });
}
