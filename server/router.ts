/**
 * A small route table over `Deno.serve` and `URLPattern`: routes read as a table of method,
 * path, guards and handler; handlers are thin. A route's guards run in order before its handler,
 * and the first that refuses answers instead. Unknown paths get 404 JSON, a known path with
 * another method 405 (with `Allow`), a body announced larger than the cap 413, and a guard or
 * handler that throws 500 with no stack trace on the wire (it is logged).
 *
 * @example
 * ```ts
 * declare const logger: Parameters<typeof router>[1]["logger"];
 * const handle = router([
 *   { method: "GET", path: "/healthz", handler: () => json(200, { ok: true }) },
 * ], { maxBodyBytes: 65536, logger });
 * Deno.serve(handle);
 * ```
 * @module
 */

import { errorMessage } from "../core/errors.ts";
import { readCapped } from "../core/read_capped.ts";
import type { Logger } from "../core/log.ts";

/** What a handler gets besides the request. */
export interface RouteContext {
  /** Named groups of the matched path. */
  params: Record<string, string>;
  url: URL;
  /** The request body, read with the size cap; `undefined` when it was too large. */
  body(): Promise<Uint8Array | undefined>;
  /** Peer address, when known. */
  remote?: string;
}

/**
 * A check a route makes before its handler (a token, a signature, the request's origin): the
 * refusal to answer with, or `undefined` to let the request through.
 */
export interface Guard {
  /** What it checks, as the route table shows it. */
  readonly name: string;
  /** The refusal for this request, or `undefined`. */
  check(req: Request, ctx: RouteContext): Response | undefined | Promise<Response | undefined>;
}

/** One row of the table. */
export interface Route {
  method: "GET" | "POST" | "PUT" | "DELETE";
  /** URLPattern pathname, e.g. `/telephony/answer/:carrier/:run` */
  path: string;
  /** Checks run in order before the handler; the first refusal is the answer. */
  guards?: readonly Guard[];
  handler: (req: Request, ctx: RouteContext) => Response | Promise<Response>;
}

/** Options of {@link router}. */
export interface RouterOptions {
  maxBodyBytes: number;
  logger: Logger;
  /** Also told of each handler that threw (error reporting). */
  onError?: (err: unknown, path: string) => void;
}

/** A JSON response. */
export function json(
  status: number,
  body: unknown,
  headers: Record<string, string> = {},
): Response {
  return new Response(JSON.stringify(body), {
    status,
    headers: { "content-type": "application/json; charset=utf-8", ...headers },
  });
}

/** The JSON error every non-2xx reply of the server carries: `{error}`. */
export function jsonError(
  status: number,
  error: string,
  headers?: Record<string, string>,
): Response {
  return json(status, { error }, headers);
}

/** The origin a request's pathname is matched under (the patterns constrain the path only). */
const ORIGIN = "http://route.invalid";

/** Compile a route table into a `Deno.serve` handler. */
export function router(
  routes: readonly Route[],
  opts: RouterOptions,
): (req: Request, info?: Deno.ServeHandlerInfo) => Promise<Response> {
  const compiled = routes.map((r) => ({ ...r, pattern: new URLPattern({ pathname: r.path }) }));
  return async (req, info) => {
    let url: URL;
    try {
      // Deno builds the URL from the Host header: a malformed one throws here.
      url = new URL(req.url);
    } catch {
      return jsonError(400, "malformed Host header");
    }
    let allowed: string[] = [];
    for (const r of compiled) {
      // A whole URL and a base: Deno caches match inputs given without a base in an isolate-wide
      // LRU keyed by the input, and a `{pathname}` object is a new key every time (each media
      // socket's request left about 0.6 KB there until 4,096 entries).
      const m = r.pattern.exec(`${ORIGIN}${url.pathname}`, ORIGIN);
      if (m === null) continue;
      if (r.method !== req.method && !(r.method === "GET" && req.method === "HEAD")) {
        allowed.push(r.method);
        continue;
      }
      const declared = Number(req.headers.get("content-length") ?? "0");
      if (declared > opts.maxBodyBytes) return jsonError(413, "request body too large");
      let cached: Promise<Uint8Array | undefined> | undefined;
      const ctx: RouteContext = {
        params: Object.fromEntries(
          Object.entries(m.pathname.groups).filter((e): e is [string, string] => e[1] != null),
        ),
        url,
        body: () => (cached ??= readCapped(req.body, opts.maxBodyBytes)),
        remote: info && "hostname" in info.remoteAddr ? info.remoteAddr.hostname : undefined,
      };
      try {
        for (const guard of r.guards ?? []) {
          const refused = await guard.check(req, ctx);
          if (refused !== undefined) return refused;
        }
        return await r.handler(req, ctx);
      } catch (err) {
        opts.logger.error("handler failed", { path: url.pathname, err: errorMessage(err) });
        opts.onError?.(err, url.pathname);
        return jsonError(500, "internal error");
      }
    }
    if (allowed.length > 0) {
      allowed = [...new Set(allowed)];
      return jsonError(405, "method not allowed", { allow: allowed.join(", ") });
    }
    return jsonError(404, "not found");
  };
}
