/**
 * A local Neuphonic SSE text-to-speech server for tests, speaking the real wire protocol:
 * `POST /sse/speak/<lang>` with `X-API-KEY` (401 otherwise) and a JSON body, answered with an
 * event stream of `data: {status_code, data: {audio, text, sampling_rate}}` lines, or an
 * `errors` event. Failures, stalls and cuts come from tests/fakes/_http_stream_fake.ts.
 * @module
 */

import { HttpStreamFake } from "./_http_stream_fake.ts";

/** The fake server; fields are public knobs a test may change. */
export class NeuphonicFake extends HttpStreamFake {
  /** An `errors` event instead of audio (a 200 stream that reports a failure). */
  streamError: string | undefined;

  /** A fake, listening on 127.0.0.1. */
  constructor(opts: { key?: string; audio?: Uint8Array[] } = {}) {
    const key = opts.key ?? "test-neuphonic-key";
    super(
      {
        accepts: (path) => path.startsWith("/sse/speak/"),
        authorized: (req) => req.headers.get("x-api-key") === key,
        records: (req, chunks) => {
          const event = (payload: unknown) => `data: ${JSON.stringify(payload)}\n\n`;
          if (this.streamError) return [event({ status_code: 400, errors: [this.streamError] })];
          const rate = req.body.sampling_rate;
          return chunks.map((bytes) =>
            event({
              status_code: 200,
              data: { audio: bytes.toBase64(), text: "word ", sampling_rate: rate },
            })
          );
        },
      },
      key,
      opts.audio ?? [],
    );
  }
}
