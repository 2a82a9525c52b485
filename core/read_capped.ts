/**
 * Read a byte stream (an HTTP body) to the end, refusing to buffer more than a cap.
 *
 * @example
 * ```ts
 * declare const req: Request;
 * async function handle(): Promise<Response | undefined> {
 *   const bytes = await readCapped(req.body, 64 * 1024);
 *   if (bytes === undefined) return new Response("too large", { status: 413 });
 * }
 * ```
 * @module
 */

/** All bytes of `body` (empty when `null`), or `undefined` once more than `max` arrive. */
export async function readCapped(
  body: ReadableStream<Uint8Array> | null,
  max: number,
): Promise<Uint8Array | undefined> {
  if (body === null) return new Uint8Array();
  const reader = body.getReader();
  const chunks: Uint8Array[] = [];
  let size = 0;
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    size += value.byteLength;
    if (size > max) {
      await reader.cancel();
      return undefined;
    }
    chunks.push(value);
  }
  const out = new Uint8Array(size);
  let at = 0;
  for (const c of chunks) {
    out.set(c, at);
    at += c.byteLength;
  }
  return out;
}
