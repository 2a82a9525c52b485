/**
 * The public origin of a request that came through a reverse proxy (HAProxy, nginx, a cloud
 * load balancer): carriers sign the URL they called, which is the proxy's, not this server's.
 * `X-Forwarded-Proto` and `X-Forwarded-Host` say what it was, but anyone can send them, so they
 * are believed only from the proxy addresses the operator configured (`server.trusted_proxies`);
 * from any other peer the request's own URL is the origin.
 *
 * @example
 * ```ts
 * import { forwardedOrigin } from "./forwarded.ts";
 * const req = new Request("http://10.0.0.7:6210/telephony/answer/twilio", {
 *   headers: { "x-forwarded-proto": "https", "x-forwarded-host": "agent.example.com" },
 * });
 * forwardedOrigin(req, "10.0.0.2", new Set(["10.0.0.2"])); // "https://agent.example.com"
 * forwardedOrigin(req, "192.0.2.9", new Set(["10.0.0.2"])); // "http://10.0.0.7:6210"
 * ```
 * @module
 */

/** A host (name, IPv4, or bracketed IPv6) with an optional port: nothing that alters a URL. */
const HOST = /^(?:[A-Za-z0-9.-]+|\[[0-9A-Fa-f:.]+\])(?::\d{1,5})?$/;

/**
 * The last value of a comma-separated header: the one the trusted proxy itself wrote when it
 * appends (anything before it came from its client, who may have made it up).
 */
function last(headers: Headers, name: string): string | undefined {
  const v = headers.get(name)?.split(",").at(-1)?.trim();
  return v === undefined || v === "" ? undefined : v;
}

/**
 * `remote` as a key of the trusted set: IPv6 without brackets, lower case, and an IPv4 peer of a
 * dual-stack listener (`::ffff:10.0.0.5`) as its IPv4 address.
 */
export function peerKey(remote: string): string {
  return remote.replace(/^\[|\]$/g, "").toLowerCase().replace(
    /^::ffff:(\d+\.\d+\.\d+\.\d+)$/,
    "$1",
  );
}

/**
 * The origin `req` was sent to: from `X-Forwarded-Proto` / `X-Forwarded-Host` when `remote`
 * (the peer address) is one of `trusted` and they are well formed, else the request's URL.
 * A trusted proxy that sends only one of them keeps the request's value for the other.
 */
export function forwardedOrigin(
  req: Request,
  remote: string | undefined,
  trusted: ReadonlySet<string>,
): string {
  const own = new URL(req.url);
  if (remote === undefined || !trusted.has(peerKey(remote))) return own.origin;
  const proto = last(req.headers, "x-forwarded-proto")?.toLowerCase();
  const host = last(req.headers, "x-forwarded-host") ?? req.headers.get("host") ?? own.host;
  const scheme = proto === "https" || proto === "http" ? proto : own.protocol.slice(0, -1);
  return HOST.test(host) ? `${scheme}://${host.toLowerCase()}` : own.origin;
}
