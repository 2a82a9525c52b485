/**
 * A streaming speech-to-text client for the gRPC `StreamingRecognize` services (Google Cloud
 * Speech, NVIDIA Riva), which share one shape: a bidirectional stream whose first request
 * carries the recognition config and the rest raw audio, answered by results that are interim
 * (`is_final` false) or final. Each provider supplies its wire (message encoding, method path,
 * auth metadata); this client runs the streams.
 *
 * A stream is opened at `start` (a token that cannot be had fails there; a refusal by the
 * server arrives as the stream's status, on the next `runStt`). It is half-closed, which makes
 * the server send its final results and end the stream, when the VAD says the user stopped
 * speaking (the next stream is opened at once) and when the input is muted (no audio flows
 * then, and the services end streams that idle; the next audio opens one). So each stream
 * carries about one utterance, well inside the services' stream-length limits. Audio arriving
 * while a stream opens is held (up to 1 s) and sent after its config. A stream that fails
 * (auth, quota, server error, dropped connection) makes the next `runStt` throw its
 * FlowcatError once; later audio reopens, at most once per `retry_interval_ms` (default 1000),
 * and is dropped meanwhile.
 *
 * @example
 * ```ts
 * import { GrpcStreamingStt, type RecognizeWire } from "./grpc_stt.ts";
 * declare const wire: RecognizeWire;
 * const stt = new GrpcStreamingStt({ provider: "riva" }, wire);
 * ```
 *
 * Permissions: `--allow-net` to the service's `host:port` (and its token host, if any).
 * @module
 */

import { FlowcatError } from "../core/errors.ts";
import { type AudioFrame, type Frame, makeFrame, type StartParams } from "../core/frames.ts";
import { type Logger, silentLogger } from "../core/log.ts";
import type { SttService } from "../core/seams.ts";
import { int16ToBytes } from "../core/audio/pcm.ts";
import { Resampler } from "../core/audio/resample.ts";
import { type GrpcBidiCall, GrpcChannel, grpcCodeOf, type GrpcTarget } from "./grpc.ts";
import type { ServiceOptions } from "./service_options.ts";
import { HeldAudio, SttExchange } from "./stt_exchange.ts";

/** One recognition result, decoded from a provider's response. */
export interface RecognizedText {
  /** The top alternative's transcript. */
  transcript: string;
  /** True when the service will not revise it. */
  isFinal: boolean;
}

/** What a provider tells {@link GrpcStreamingStt} about its wire. */
export interface RecognizeWire {
  /** Where the service listens. */
  target: GrpcTarget;
  /** The method: `/package.Service/StreamingRecognize`. */
  path: string;
  /** Sample rate the audio is sent at (16-bit mono PCM). */
  sampleRate: number;
  /** The first request of a stream: the recognition config. */
  configRequest(): Uint8Array;
  /** A request carrying `pcm` (16-bit little-endian bytes). */
  audioRequest(pcm: Uint8Array): Uint8Array;
  /** The results in one response; throws a FlowcatError for an in-band error. */
  parseResponse(message: Uint8Array): RecognizedText[];
  /** Request metadata (auth) for a new stream. */
  metadata(signal: AbortSignal): Promise<Record<string, string>>;
  /** The server refused that metadata (UNAUTHENTICATED, PERMISSION_DENIED). */
  refused?(): void;
}

/** A streaming-recognize client; one instance per call. */
export class GrpcStreamingStt implements SttService {
  readonly #provider: string;
  readonly #wire: RecognizeWire;
  readonly #language: string | undefined;
  readonly #log: Logger;
  readonly #exchange: SttExchange;
  readonly #stopped = new AbortController();
  #channel: GrpcChannel | undefined;
  #call: GrpcBidiCall | undefined;
  #opening: Promise<GrpcBidiCall> | undefined;
  /** Audio (wire-rate PCM bytes) that came while a stream opens, sent once it is open. */
  readonly #held: HeldAudio;
  #muted = false;
  #resampler: Resampler | undefined;

  /** A client speaking `wire`; nothing is dialled until {@link GrpcStreamingStt.start}. */
  constructor(opts: ServiceOptions, wire: RecognizeWire) {
    this.#provider = opts.provider;
    this.#wire = wire;
    this.#language = opts.language;
    this.#log = opts.logger ?? silentLogger;
    const retry = opts.options?.retry_interval_ms;
    this.#exchange = new SttExchange(typeof retry === "number" && retry >= 0 ? retry : 1000);
    // One second of 16-bit audio at the wire's rate.
    this.#held = new HeldAudio(wire.sampleRate * 2);
  }

  /** The provider name from the config. */
  name(): string {
    return this.#provider;
  }

  /** Connect and open the first stream; a credential the server refuses throws here. */
  async start(_params: StartParams): Promise<void> {
    if (this.#channel !== undefined || this.#stopped.signal.aborted) return;
    this.#channel = await GrpcChannel.open(this.#provider, this.#wire.target);
    await this.#open();
  }

  /** Send audio (unless muted) and return the transcripts that arrived since the last call. */
  runStt(audio: AudioFrame): Promise<Frame[]> {
    return this.#exchange.take(() => {
      if (!this.#muted && audio.pcm.length > 0) this.#send(audio);
    });
  }

  /** Muted: end the stream (its finals still arrive); the next audio after unmuting opens one. */
  setMuted(muted: boolean): void {
    this.#muted = muted;
    if (muted) this.#halfClose();
  }

  /**
   * The user stopped speaking: end the stream so the service finalizes what it heard, and open
   * the next one now, so the caller's next words have a stream waiting.
   */
  speechStopped(): Promise<Frame[]> {
    this.#halfClose();
    if (!this.#muted && this.#channel !== undefined && this.#mayOpen()) {
      this.#open().catch(() => {});
    }
    return Promise.resolve([]);
  }

  /** Cancel any stream and close the connection. Idempotent. */
  async stop(): Promise<void> {
    if (this.#stopped.signal.aborted) return;
    this.#stopped.abort();
    await this.#opening?.catch(() => {});
    this.#call?.cancel();
    this.#call = undefined;
    this.#channel?.close();
  }

  #halfClose(): void {
    this.#call?.end();
    this.#call = undefined;
  }

  #send(audio: AudioFrame): void {
    if (this.#resampler?.inRate !== audio.sampleRate) {
      this.#resampler = new Resampler(audio.sampleRate, this.#wire.sampleRate);
    }
    const pcm = this.#resampler.process(audio.pcm);
    if (pcm.length === 0 || this.#channel === undefined) return;
    // Copy: the request is queued in the HTTP/2 stream (or held), and the caller may reuse its
    // buffer.
    const bytes = int16ToBytes(pcm).slice();
    if (this.#call !== undefined) {
      this.#call.write(this.#wire.audioRequest(bytes));
      return;
    }
    // No stream: hold the audio for the one opening (or about to), unless a failure is too
    // recent; then it is dropped, as there is no stream to take it.
    if (this.#opening === undefined) {
      if (!this.#mayOpen()) return;
      this.#open().catch(() => {});
    }
    this.#held.push(bytes);
  }

  #mayOpen(): boolean {
    return this.#opening === undefined && this.#exchange.retryDue;
  }

  #open(): Promise<GrpcBidiCall> {
    const opening = (async () => {
      let metadata: Record<string, string>;
      try {
        metadata = await this.#wire.metadata(this.#stopped.signal);
      } catch (err) {
        this.#exchange.failed();
        this.#held.clear();
        throw err;
      }
      if (this.#stopped.signal.aborted || this.#channel === undefined) {
        throw new FlowcatError("closed", `${this.#provider}: stopped`);
      }
      const call = this.#channel.bidi(this.#wire.path, metadata);
      call.write(this.#wire.configRequest());
      for (const pcm of this.#held.take().chunks) call.write(this.#wire.audioRequest(pcm));
      this.#call = call;
      return call;
    })();
    this.#opening = opening;
    const settled = () => {
      if (this.#opening === opening) this.#opening = undefined;
    };
    opening.then((call) => {
      settled();
      this.#read(call);
    }, (err) => {
      settled();
      // A failure while opening a later stream is said by the next runStt.
      if (!this.#stopped.signal.aborted && err instanceof FlowcatError) this.#reportFirst(err);
    });
    return opening;
  }

  async #read(call: GrpcBidiCall): Promise<void> {
    try {
      for await (const msg of call.responses) {
        this.#onResults(this.#wire.parseResponse(msg));
      }
    } catch (err) {
      if (this.#call === call) this.#call = undefined;
      if (this.#stopped.signal.aborted) return;
      const e = err instanceof FlowcatError
        ? err
        : new FlowcatError("protocol", `${this.#provider}: ${String(err)}`);
      // Google ends a stream at its length limit with OUT_OF_RANGE: reopen on the next audio.
      if (grpcCodeOf(e) === 11) return;
      this.#exchange.failed();
      if (e.kind === "auth") this.#wire.refused?.();
      this.#log.warn(`${this.#provider}: stream failed`, { kind: e.kind });
      this.#reportFirst(e);
      return;
    }
    if (this.#call === call) this.#call = undefined;
  }

  /** Of the failures between two runStt calls (an ended stream's, the next's), the first. */
  #reportFirst(err: FlowcatError): void {
    if (this.#exchange.pending === undefined) this.#exchange.report(err);
  }

  /**
   * One response's results: each final one a Transcription; the interim ones, which are
   * consecutive pieces of the audio still open (a steadier piece first), one
   * InterimTranscription of them joined.
   */
  #onResults(results: RecognizedText[]): void {
    const language = this.#language ? { language: this.#language } : {};
    let interim = "";
    for (const r of results) {
      if (!r.isFinal) {
        interim += r.transcript;
        continue;
      }
      const text = r.transcript.trim();
      if (text) {
        this.#exchange.emit(
          makeFrame("Transcription", { text, userId: "user", final: true, ...language }),
        );
      }
    }
    const text = interim.trim().replace(/\s+/g, " ");
    if (text) {
      this.#exchange.emit(makeFrame("InterimTranscription", { text, userId: "user", ...language }));
    }
  }
}
