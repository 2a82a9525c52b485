/**
 * The browser playground's static files (server/playground/), served from a fixed list so no
 * request path ever reaches the file system.
 * @module
 */

import type { AgentServerConfig } from "./config.ts";
import { jsonError } from "./router.ts";

/** Files of the playground and their content types. */
export const PLAYGROUND_FILES: Readonly<Record<string, string>> = Object.freeze({
  "index.html": "text/html; charset=utf-8",
  "app.js": "text/javascript; charset=utf-8",
  "style.css": "text/css; charset=utf-8",
});

/** The playground directory (for `--allow-read`). */
export const PLAYGROUND_DIR: URL = new URL("./playground/", import.meta.url);

const cache = new Map<string, Uint8Array>();

/** Serve one playground file, or 404. */
export async function servePlayground(config: AgentServerConfig, file: string): Promise<Response> {
  const type = PLAYGROUND_FILES[file];
  if (!config.playground.enabled || type === undefined || !Object.hasOwn(PLAYGROUND_FILES, file)) {
    return jsonError(404, "not found");
  }
  let bytes = cache.get(file);
  if (bytes === undefined) {
    bytes = await Deno.readFile(new URL(file, PLAYGROUND_DIR));
    cache.set(file, bytes);
  }
  return new Response(bytes as Uint8Array<ArrayBuffer>, {
    headers: {
      "content-type": type,
      "cache-control": "no-cache",
      // The page needs the microphone and talks only to this origin.
      "content-security-policy":
        "default-src 'self'; connect-src 'self'; media-src 'self' blob:; img-src 'self' data:; " +
        "frame-ancestors 'none'",
      "x-content-type-options": "nosniff",
    },
  });
}
