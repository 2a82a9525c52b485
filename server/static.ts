/**
 * The browser playground's static files, served from a fixed list. Their text is bundled in
 * ./playground_assets.ts (generated from server/playground/ by `deno task playground`), so no
 * request path ever reaches the file system, no read grant is needed, and the page is served
 * the same when the package is imported from a registry over `https:`.
 * @module
 */

import type { AgentServerConfig } from "./config.ts";
import { PLAYGROUND_ASSETS } from "./playground_assets.ts";
import { jsonError } from "./router.ts";

/** Files of the playground and their content types. */
export const PLAYGROUND_FILES: Readonly<Record<string, string>> = Object.freeze({
  "index.html": "text/html; charset=utf-8",
  "app.js": "text/javascript; charset=utf-8",
  "style.css": "text/css; charset=utf-8",
});

const encoded = new Map<string, Uint8Array<ArrayBuffer>>();

/** Serve one playground file, or 404. */
export function servePlayground(config: AgentServerConfig, file: string): Promise<Response> {
  const type = PLAYGROUND_FILES[file];
  const text = Object.hasOwn(PLAYGROUND_ASSETS, file) ? PLAYGROUND_ASSETS[file] : undefined;
  if (
    !config.playground.enabled || type === undefined || text === undefined ||
    !Object.hasOwn(PLAYGROUND_FILES, file)
  ) {
    return Promise.resolve(jsonError(404, "not found"));
  }
  let bytes = encoded.get(file);
  if (bytes === undefined) {
    bytes = new TextEncoder().encode(text);
    encoded.set(file, bytes);
  }
  return Promise.resolve(
    new Response(bytes, {
      headers: {
        "content-type": type,
        "cache-control": "no-cache",
        // The page needs the microphone and talks only to this origin.
        "content-security-policy":
          "default-src 'self'; connect-src 'self'; media-src 'self' blob:; img-src 'self' data:; " +
          "frame-ancestors 'none'",
        "x-content-type-options": "nosniff",
      },
    }),
  );
}
