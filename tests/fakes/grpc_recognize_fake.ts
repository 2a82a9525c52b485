/**
 * A local gRPC `StreamingRecognize` server for tests, on the real gRPC stack (`@grpc/grpc-js`
 * over HTTP/2, plaintext or TLS) and encoding with protobufjs from `.proto` text whose field
 * numbers are the vendors' (google/cloud/speech/v1/cloud_speech.proto of googleapis,
 * riva/proto/riva_asr.proto of nvidia-riva/common), so it checks the client's hand-written
 * encoding independently. Like the real services it wants a `streaming_config` first and audio
 * after, answers a missing or wrong credential with UNAUTHENTICATED, sends interim results while
 * audio flows and the final one when the client half-closes, and can be told to fail a stream
 * with any status or to drop every connection.
 * @module
 */

import * as grpc from "npm:@grpc/grpc-js@1.14.7";
import protobuf from "npm:protobufjs@7.6.6";
import { Buffer } from "node:buffer";

/** The subset of google.cloud.speech.v1 the client speaks (field numbers as upstream). */
export const GOOGLE_SPEECH_PROTO = `
syntax = "proto3";
package google.cloud.speech.v1;
message StreamingRecognizeRequest {
  oneof streaming_request { StreamingRecognitionConfig streaming_config = 1; bytes audio_content = 2; }
}
message StreamingRecognitionConfig {
  RecognitionConfig config = 1; bool single_utterance = 2; bool interim_results = 3;
}
message RecognitionConfig {
  int32 encoding = 1; int32 sample_rate_hertz = 2; string language_code = 3;
  int32 max_alternatives = 4; bool profanity_filter = 5; repeated SpeechContext speech_contexts = 6;
  bool enable_automatic_punctuation = 11; string model = 13; bool use_enhanced = 14;
}
message SpeechContext { repeated string phrases = 1; }
message Status { int32 code = 1; string message = 2; }
message StreamingRecognizeResponse {
  Status error = 1; repeated StreamingRecognitionResult results = 2; int32 speech_event_type = 4;
}
message StreamingRecognitionResult {
  repeated SpeechRecognitionAlternative alternatives = 1; bool is_final = 2; float stability = 3;
}
message SpeechRecognitionAlternative { string transcript = 1; float confidence = 2; }
`;

/** The subset of nvidia.riva.asr the client speaks (field numbers as upstream). */
export const RIVA_ASR_PROTO = `
syntax = "proto3";
package nvidia.riva.asr;
message StreamingRecognizeRequest {
  oneof streaming_request { StreamingRecognitionConfig streaming_config = 1; bytes audio_content = 2; }
}
message StreamingRecognitionConfig { RecognitionConfig config = 1; bool interim_results = 2; }
message RecognitionConfig {
  int32 encoding = 1; int32 sample_rate_hertz = 2; string language_code = 3;
  int32 max_alternatives = 4; bool profanity_filter = 5; repeated SpeechContext speech_contexts = 6;
  int32 audio_channel_count = 7; bool enable_automatic_punctuation = 11; string model = 13;
  bool verbatim_transcripts = 14; map<string, string> custom_configuration = 24;
}
message SpeechContext { repeated string phrases = 1; float boost = 4; }
message StreamingRecognizeResponse { repeated StreamingRecognitionResult results = 1; }
message StreamingRecognitionResult {
  repeated SpeechRecognitionAlternative alternatives = 1; bool is_final = 2; float stability = 3;
  int32 channel_tag = 5; float audio_processed = 6;
}
message SpeechRecognitionAlternative { string transcript = 1; float confidence = 2; }
`;

/** What to do with the next stream. */
export type StreamPlan =
  | { kind: "transcribe"; interim?: string; final: string }
  /** Send these responses (each a list of results) once 100 ms of audio has arrived. */
  | { kind: "script"; responses: { transcript: string; isFinal: boolean }[][] }
  /** End with this status once the first audio arrives (RESOURCE_EXHAUSTED, INTERNAL...). */
  | { kind: "fail"; code: number; details: string }
  /** Call {@link GrpcRecognizeFake.onDrop} once the first audio arrives (cut the TCP path). */
  | { kind: "drop" }
  /** Send the google.rpc.Status in-band (Google's `error` field), then end OK. */
  | { kind: "inband_error"; code: number; message: string };

/** One stream as the fake saw it. */
export interface SeenStream {
  /** Request metadata. */
  metadata: Record<string, string>;
  /** The decoded `streaming_config` (protobufjs object, field names as in the proto). */
  config: Record<string, unknown> | undefined;
  /** Bytes of audio received. */
  audioBytes: number;
  /** True once the client half-closed. */
  halfClosed: boolean;
  /** True when the client cancelled. */
  cancelled: boolean;
}

/** Options of {@link GrpcRecognizeFake}. */
export interface RecognizeFakeOptions {
  /** `.proto` text of the service's messages. */
  proto: string;
  /** Package of the messages (`google.cloud.speech.v1`). */
  pkg: string;
  /** The method path served. */
  path: string;
  /** Checks the `authorization: Bearer` token; absent: no credential wanted. */
  bearer?: (token: string) => boolean;
  /** TLS: PEM key, certificate and its CA (plaintext h2c when absent). */
  tls?: { key: string; cert: string; ca: string };
}

type Duplex = grpc.ServerDuplexStream<Buffer, Buffer>;

/** The fake server. */
export class GrpcRecognizeFake {
  /** Every stream, in arrival order. */
  readonly streams: SeenStream[] = [];
  /** Plans for the next streams; with none left a stream transcribes "hello world". */
  readonly plans: StreamPlan[] = [];
  /** What a `drop` plan does: by default the server shuts down (a test may cut a proxy). */
  onDrop: () => void = () => this.close();
  readonly #opts: RecognizeFakeOptions;
  readonly #req: protobuf.Type;
  readonly #res: protobuf.Type;
  #server: grpc.Server | undefined;
  #port = 0;

  /** A fake for the service `opts` describes. */
  constructor(opts: RecognizeFakeOptions) {
    this.#opts = opts;
    const root = protobuf.parse(opts.proto, { keepCase: true }).root;
    this.#req = root.lookupType(`${opts.pkg}.StreamingRecognizeRequest`);
    this.#res = root.lookupType(`${opts.pkg}.StreamingRecognizeResponse`);
  }

  /** Listen on an ephemeral 127.0.0.1 port. */
  async start(): Promise<this> {
    const server = new grpc.Server();
    const id = (b: Buffer) => b;
    server.register(this.#opts.path, (call: Duplex) => this.#handle(call), id, id, "bidi");
    const creds = this.#opts.tls
      // The CA given, so grpc-js does not load GRPC_DEFAULT_SSL_ROOTS_FILE_PATH.
      ? grpc.ServerCredentials.createSsl(Buffer.from(this.#opts.tls.ca), [{
        private_key: Buffer.from(this.#opts.tls.key),
        cert_chain: Buffer.from(this.#opts.tls.cert),
      }])
      : grpc.ServerCredentials.createInsecure();
    this.#port = await new Promise<number>((res, rej) =>
      server.bindAsync("127.0.0.1:0", creds, (e, p) => e ? rej(e) : res(p))
    );
    this.#server = server;
    return this;
  }

  /** The URL to give the client (TLS by host name: Deno's TLS takes no IP as server name). */
  get url(): string {
    return this.#opts.tls ? `https://localhost:${this.#port}` : `http://127.0.0.1:${this.#port}`;
  }

  /** The port listened on. */
  get port(): number {
    return this.#port;
  }

  /** Stop at once, dropping every connection. */
  close(): void {
    this.#server?.forceShutdown();
    this.#server = undefined;
  }

  #encode(results: { transcript: string; isFinal: boolean }[]): Buffer {
    const msg = this.#res.fromObject({
      results: results.map((r) => ({
        alternatives: [{ transcript: r.transcript, confidence: r.isFinal ? 0.9 : 0 }],
        is_final: r.isFinal,
        stability: r.isFinal ? 0 : 0.5,
      })),
    });
    return Buffer.from(this.#res.encode(msg).finish());
  }

  #handle(call: Duplex): void {
    const md = Object.fromEntries(
      Object.entries(call.metadata.getMap()).map(([k, v]) => [k, String(v)]),
    );
    const seen: SeenStream = {
      metadata: md,
      config: undefined,
      audioBytes: 0,
      halfClosed: false,
      cancelled: false,
    };
    this.streams.push(seen);
    call.on("cancelled", () => (seen.cancelled = true));
    const bearer = /^Bearer (.+)$/.exec(md.authorization ?? "")?.[1];
    if (this.#opts.bearer && (!bearer || !this.#opts.bearer(bearer))) {
      call.emit("error", {
        code: grpc.status.UNAUTHENTICATED,
        details: "Request had invalid authentication credentials.",
      });
      return;
    }
    const plan = this.plans.shift() ??
      { kind: "transcribe", interim: "hello", final: "hello world" };
    let first = true;
    let interimSent = false;
    let done = false;
    const fail = (code: number, details: string) => {
      if (done) return;
      done = true;
      call.emit("error", { code, details });
    };
    call.on("data", (b: Buffer) => {
      if (done) return;
      const req = this.#req.toObject(this.#req.decode(b), { defaults: false }) as Record<
        string,
        unknown
      >;
      if (first) {
        first = false;
        if (!req.streaming_config) {
          return fail(grpc.status.INVALID_ARGUMENT, "first request must hold streaming_config");
        }
        seen.config = req.streaming_config as Record<string, unknown>;
        return;
      }
      if (req.streaming_config || !(req.audio_content instanceof Uint8Array)) {
        return fail(grpc.status.INVALID_ARGUMENT, "later requests must hold audio_content only");
      }
      seen.audioBytes += req.audio_content.length;
      if (plan.kind === "fail") return fail(plan.code, plan.details);
      if (plan.kind === "drop") {
        done = true;
        this.onDrop();
        return;
      }
      if (plan.kind === "inband_error") {
        done = true;
        call.write(Buffer.from(
          this.#res.encode(this.#res.fromObject({
            error: { code: plan.code, message: plan.message },
          })).finish(),
        ));
        call.end();
        return;
      }
      if (plan.kind === "script") {
        if (!interimSent && seen.audioBytes >= 3200) {
          interimSent = true;
          for (const r of plan.responses) call.write(this.#encode(r));
        }
        return;
      }
      if (!interimSent && plan.interim && seen.audioBytes >= 3200) {
        interimSent = true;
        call.write(this.#encode([{ transcript: plan.interim, isFinal: false }]));
      }
    });
    call.on("end", () => {
      seen.halfClosed = true;
      if (done) return;
      done = true;
      if (plan.kind === "transcribe" && seen.audioBytes > 0) {
        call.write(this.#encode([{ transcript: plan.final, isFinal: true }]));
      }
      call.end();
    });
  }
}
