/**
 * Who may use the browser playground. The playground has no login (it is meant for the person
 * at the server), so two checks keep other web pages from using it through a visitor's browser:
 *
 * - the `Host` header must name this server (loopback names, the listen address, this host's
 *   interface addresses when listening on a wildcard, or `playground.hosts`), which defeats DNS
 *   rebinding (a page whose name resolves to 127.0.0.1);
 * - a `POST` must come from the page's own origin: `Origin` equal to the request's scheme and
 *   Host, and no `Sec-Fetch-Site: cross-site`. A request without `Origin` (curl, a script) is not
 *   a browser acting for another site, and passes.
 *
 * @example
 * ```ts
 * declare const req: Request;
 * const hosts = playgroundHosts("127.0.0.1", [], []);
 * const refused = browserRequestRefusal(req, hosts); // undefined when allowed
 * ```
 * @module
 */

import type { InterfaceAddress } from "./webrtc_peers.ts";

const LOOPBACK_NAMES = ["localhost", "127.0.0.1", "[::1]"];
const WILDCARDS = new Set(["0.0.0.0", "[::]", "::", ""]);

/** `host` (a name or address, `[v6]` or bare) in the lower-case form Host headers carry. */
function hostKey(host: string): string {
  const h = host.trim().toLowerCase();
  return h.includes(":") && !h.startsWith("[") ? `[${h}]` : h;
}

/**
 * The host names (without port) the playground answers to when the server listens on
 * `listenHost`: loopback names always; the listen address itself, or every interface address
 * when it is a wildcard; and `extra` (the config's `playground.hosts`, e.g. a LAN name).
 */
export function playgroundHosts(
  listenHost: string,
  interfaces: readonly InterfaceAddress[],
  extra: readonly string[],
): Set<string> {
  const out = new Set(LOOPBACK_NAMES);
  const listen = hostKey(listenHost);
  if (WILDCARDS.has(listen)) { for (const i of interfaces) out.add(hostKey(i.address)); }
  else out.add(listen);
  for (const h of extra) out.add(hostKey(h));
  return out;
}

/** The host part of a Host header (`name`, `name:port`, `[v6]:port`); undefined if malformed. */
export function hostOfHeader(header: string | null): string | undefined {
  if (header === null) return undefined;
  const m = header.trim().toLowerCase().match(/^(\[[0-9a-f:.]+\]|[a-z0-9.-]+)(?::(\d{1,5}))?$/);
  return m ? m[1] : undefined;
}

/**
 * Why `req` may not use the playground, or undefined when it may. `needSameOrigin` is for
 * state-changing requests (the offer that starts a call).
 */
export function browserRequestRefusal(
  req: Request,
  hosts: ReadonlySet<string>,
  needSameOrigin = false,
): string | undefined {
  // HTTP/2 carries the authority in the URL only; HTTP/1.1 always sends Host.
  const rawHost = req.headers.get("host") ?? new URL(req.url).host;
  const host = hostOfHeader(rawHost);
  if (host === undefined || !hosts.has(host)) {
    return "this server does not answer to that host name (see playground.hosts)";
  }
  if (!needSameOrigin) return undefined;
  if (req.headers.get("sec-fetch-site") === "cross-site") return "cross-site request refused";
  const origin = req.headers.get("origin");
  if (origin === null) return undefined;
  const scheme = new URL(req.url).protocol;
  if (origin.toLowerCase() !== `${scheme}//${rawHost.trim().toLowerCase()}`) {
    return "cross-origin request refused";
  }
  return undefined;
}

/**
 * A per-client token bucket: `burst` requests at once, refilled at `perMinute`. Clients are
 * forgotten once full again, so the map holds only recent callers.
 */
export class RateLimiter {
  readonly #burst: number;
  readonly #perMs: number;
  readonly #now: () => number;
  readonly #buckets = new Map<string, { tokens: number; at: number }>();

  /** A limiter allowing `burst` at once and `perMinute` sustained. */
  constructor(burst: number, perMinute: number, now: () => number = () => performance.now()) {
    this.#burst = burst;
    this.#perMs = perMinute / 60_000;
    this.#now = now;
  }

  /** Take one token for `client`; false when it has none left. */
  take(client: string): boolean {
    const now = this.#now();
    if (this.#buckets.size > 10_000) this.#forgetFull(now);
    const b = this.#buckets.get(client) ?? { tokens: this.#burst, at: now };
    b.tokens = Math.min(this.#burst, b.tokens + (now - b.at) * this.#perMs);
    b.at = now;
    if (b.tokens < 1) {
      this.#buckets.set(client, b);
      return false;
    }
    b.tokens -= 1;
    this.#buckets.set(client, b);
    return true;
  }

  #forgetFull(now: number): void {
    for (const [k, b] of this.#buckets) {
      if (b.tokens + (now - b.at) * this.#perMs >= this.#burst) this.#buckets.delete(k);
    }
  }
}
