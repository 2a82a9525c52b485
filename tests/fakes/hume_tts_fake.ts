/**
 * A local Hume Octave TTS server for tests, speaking the real wire protocol:
 * `POST /v0/tts/stream/json` with `X-Hume-Api-Key` (401 otherwise) and a JSON body, answered
 * with newline-delimited JSON records (`type: "audio"` with base64 PCM, then a `timestamp`
 * record). Failures, stalls and cuts come from tests/fakes/_http_stream_fake.ts.
 * @module
 */

import { HttpStreamFake } from "./_http_stream_fake.ts";

/** The fake server; fields are public knobs a test may change. */
export class HumeFake extends HttpStreamFake {
  /** A fake, listening on 127.0.0.1. */
  constructor(opts: { key?: string; audio?: Uint8Array[] } = {}) {
    const key = opts.key ?? "test-hume-key";
    super(
      {
        accepts: (path) => path === "/v0/tts/stream/json",
        authorized: (req) => req.headers.get("x-hume-api-key") === key,
        records: (_req, chunks, complete) => {
          const generation = crypto.randomUUID();
          const line = (record: unknown) => `${JSON.stringify(record)}\n`;
          const audio = chunks.map((bytes, i) =>
            line({
              type: "audio",
              audio: bytes.toBase64(),
              audio_format: "pcm",
              chunk_index: i,
              generation_id: generation,
              is_last_chunk: complete && i === chunks.length - 1,
              request_id: "req-1",
              snippet_id: "snip-1",
              text: "",
            })
          );
          return complete
            ? [...audio, line({ type: "timestamp", generation_id: generation })]
            : audio;
        },
      },
      key,
      opts.audio ?? [],
    );
  }
}
