/**
 * What every streaming speech-to-text client owes `runStt`, whatever its link to the service (a
 * WebSocket kept for the whole call, providers/stt_connection.ts, or a gRPC stream an utterance,
 * providers/grpc_stt.ts): the frames that came in since the last call, a failure thrown once,
 * an interval after a failure before the link is tried again, and the audio held while a link
 * is being opened.
 * @module
 */

import type { FlowcatError } from "../core/errors.ts";
import type { Frame } from "../core/frames.ts";

/** Frames and failures between a streaming STT client's link and its `runStt` calls. */
export class SttExchange {
  readonly #retryIntervalMs: number;
  #frames: Frame[] = [];
  #error: FlowcatError | undefined;
  #failedAt = -Infinity;

  /** After a failure, {@link SttExchange.retryDue} waits `retryIntervalMs`. */
  constructor(retryIntervalMs: number) {
    this.#retryIntervalMs = retryIntervalMs;
  }

  /** Queue a frame for the next {@link SttExchange.take}. */
  emit(frame: Frame): void {
    this.#frames.push(frame);
  }

  /** An error the next take throws (the latest wins). */
  report(err: FlowcatError): void {
    this.#error = err;
  }

  /** The error the next take throws, if any. */
  get pending(): FlowcatError | undefined {
    return this.#error;
  }

  /** The link failed now: the retry interval starts over. */
  failed(): void {
    this.#failedAt = performance.now();
  }

  /** True when no failure happened within the retry interval. */
  get retryDue(): boolean {
    return performance.now() - this.#failedAt >= this.#retryIntervalMs;
  }

  /**
   * One `runStt`: reject with the error not yet thrown, if any (and send nothing); else run
   * `send` and resolve with the frames queued since the last take.
   */
  take(send: () => void): Promise<Frame[]> {
    const err = this.#error;
    if (err !== undefined) {
      this.#error = undefined;
      return Promise.reject(err);
    }
    send();
    const out = this.#frames;
    this.#frames = [];
    return Promise.resolve(out);
  }
}

/** Audio held for a link that is being opened; past `maxBytes` the oldest goes first. */
export class HeldAudio {
  readonly #maxBytes: number;
  #chunks: Uint8Array[] = [];
  #bytes = 0;

  /** Holds up to `maxBytes` (0: holds nothing). */
  constructor(maxBytes: number) {
    this.#maxBytes = maxBytes;
  }

  /** Hold `bytes` (the caller's to keep: not copied). */
  push(bytes: Uint8Array): void {
    this.#chunks.push(bytes);
    this.#bytes += bytes.length;
    while (this.#bytes > this.#maxBytes) this.#bytes -= this.#chunks.shift()?.length ?? 0;
  }

  /** What is held, oldest first, with its length in bytes; the hold is empty after. */
  take(): { chunks: Uint8Array[]; bytes: number } {
    const held = { chunks: this.#chunks, bytes: this.#bytes };
    this.clear();
    return held;
  }

  /** Drop what is held. */
  clear(): void {
    this.#chunks = [];
    this.#bytes = 0;
  }
}
