/**
 * A local Cloud Text-to-Speech `StreamingSynthesize` server for tests, on grpc-js, decoding and
 * encoding with protobufjs from `.proto` text carrying the field numbers of googleapis'
 * `google/cloud/texttospeech/v1/cloud_tts.proto`. Like the service it wants the
 * `streaming_config` first (PCM encoding) and `input` after, checks the bearer
 * (UNAUTHENTICATED otherwise), and answers each input with headerless 16-bit PCM in pieces of
 * odd byte lengths (so a client must carry half samples across pieces), ending OK after the
 * client half-closes.
 * @module
 */

import * as grpc from "npm:@grpc/grpc-js@1.14.7";
import protobuf from "npm:protobufjs@7.6.6";
import { Buffer } from "node:buffer";

const PROTO = `
syntax = "proto3";
package google.cloud.texttospeech.v1;
message StreamingSynthesizeRequest {
  oneof streaming_request { StreamingSynthesizeConfig streaming_config = 1; StreamingSynthesisInput input = 2; }
}
message StreamingSynthesizeConfig { VoiceSelectionParams voice = 1; StreamingAudioConfig streaming_audio_config = 4; }
message VoiceSelectionParams { string language_code = 1; string name = 2; }
message StreamingAudioConfig { int32 audio_encoding = 1; int32 sample_rate_hertz = 2; double speaking_rate = 3; }
message StreamingSynthesisInput { string text = 1; string markup = 5; }
message StreamingSynthesizeResponse { bytes audio_content = 1; }
`;
const root = protobuf.parse(PROTO, { keepCase: true }).root;
const Request = root.lookupType("google.cloud.texttospeech.v1.StreamingSynthesizeRequest");
const Response = root.lookupType("google.cloud.texttospeech.v1.StreamingSynthesizeResponse");

/** The method path served. */
export const STREAM_PATH = "/google.cloud.texttospeech.v1.TextToSpeech/StreamingSynthesize";

/** What the next call does: synthesize (default), fail with a status, or never answer. */
export type StreamTtsPlan = { kind: "fail"; code: number; details: string } | { kind: "hang" };

/** One call as the fake saw it. */
export interface SeenSynthesis {
  /** The decoded `streaming_config`. */
  config: Record<string, unknown> | undefined;
  /** Texts received. */
  texts: string[];
  /** True when the client cancelled. */
  cancelled: boolean;
}

/** The fake server. */
export class GoogleTtsStreamFake {
  /** Every call, in order. */
  readonly calls: SeenSynthesis[] = [];
  /** Plans of the next calls. */
  readonly plans: StreamTtsPlan[] = [];
  /** Milliseconds of audio per input (default 250). */
  audioMs = 250;
  readonly #accept: (token: string) => boolean;
  #server: grpc.Server | undefined;
  #port = 0;

  /** A fake accepting the bearer tokens `accept` approves. */
  constructor(accept: (token: string) => boolean) {
    this.#accept = accept;
  }

  /** Listen on an ephemeral 127.0.0.1 port (plaintext h2c). */
  async start(): Promise<this> {
    const server = new grpc.Server();
    const id = (b: Buffer) => b;
    server.register(
      STREAM_PATH,
      (call: grpc.ServerDuplexStream<Buffer, Buffer>) => this.#handle(call),
      id,
      id,
      "bidi",
    );
    this.#port = await new Promise<number>((res, rej) =>
      server.bindAsync(
        "127.0.0.1:0",
        grpc.ServerCredentials.createInsecure(),
        (e, p) => e ? rej(e) : res(p),
      )
    );
    this.#server = server;
    return this;
  }

  /** The URL to give the client. */
  get url(): string {
    return `http://127.0.0.1:${this.#port}`;
  }

  /** Stop at once. */
  close(): void {
    this.#server?.forceShutdown();
  }

  #handle(call: grpc.ServerDuplexStream<Buffer, Buffer>): void {
    const seen: SeenSynthesis = { config: undefined, texts: [], cancelled: false };
    this.calls.push(seen);
    call.on("cancelled", () => (seen.cancelled = true));
    const bearer = /^Bearer (.+)$/.exec(String(call.metadata.get("authorization")[0] ?? ""))?.[1];
    if (!bearer || !this.#accept(bearer)) {
      call.emit("error", { code: grpc.status.UNAUTHENTICATED, details: "invalid credentials" });
      return;
    }
    const plan = this.plans.shift();
    let rate = 0;
    let failed = false;
    const fail = (code: number, details: string) => {
      failed = true;
      call.emit("error", { code, details });
    };
    call.on("data", (b: Buffer) => {
      if (failed) return;
      const req = Request.toObject(Request.decode(b)) as Record<string, Record<string, unknown>>;
      if (seen.config === undefined) {
        const audio = req.streaming_config?.streaming_audio_config as
          | { audio_encoding?: number; sample_rate_hertz?: number }
          | undefined;
        if (!req.streaming_config || audio?.audio_encoding !== 7) {
          return fail(grpc.status.INVALID_ARGUMENT, "first request: streaming_config with PCM");
        }
        seen.config = req.streaming_config;
        rate = audio.sample_rate_hertz ?? 24000;
        return;
      }
      const text = req.input?.text;
      if (typeof text !== "string") {
        return fail(grpc.status.INVALID_ARGUMENT, "later requests: input only");
      }
      seen.texts.push(text);
      if (plan?.kind === "fail") return fail(plan.code, plan.details);
      if (plan?.kind === "hang") return;
      const pcm = new Int16Array((rate * this.audioMs) / 1000);
      for (let i = 0; i < pcm.length; i++) pcm[i] = Math.round(8000 * Math.sin(i / 5));
      const bytes = new Uint8Array(pcm.buffer);
      // Pieces of 999 bytes: half samples cross piece boundaries.
      for (let at = 0; at < bytes.length; at += 999) {
        const piece = bytes.subarray(at, Math.min(at + 999, bytes.length));
        call.write(Buffer.from(Response.encode({ audio_content: piece }).finish()));
      }
    });
    call.on("end", () => {
      if (!failed && plan?.kind !== "hang") call.end();
    });
  }
}
