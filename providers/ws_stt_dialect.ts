/**
 * What a vendor module tells the shared streaming STT client (providers/ws_stt.ts) about its
 * wire: where to dial, what to send, and what the server's messages mean.
 * @module
 */

import type { FlowcatErrorKind } from "../core/errors.ts";

/** What a vendor's server said, decoded. */
export type SttEvent =
  /** The session is ready for audio (dialects with `awaitReady`). */
  | { type: "ready" }
  /** Words that may still change. */
  | { type: "partial"; text: string; language?: string }
  /** Words that will not change; held until `end`. */
  | { type: "final"; text: string; language?: string }
  /** The utterance ended: held final words become one Transcription. */
  | { type: "end" }
  /** The vendor reported a fault. */
  | { type: "error"; kind: FlowcatErrorKind; message: string };

/** Where one connection goes. */
export interface WsSttEndpoint {
  /** `wss://` URL with its query. */
  url: string;
  /** Upgrade request headers (the key, usually). */
  headers: Record<string, string>;
}

/** One vendor's streaming wire. */
export interface WsSttDialect {
  /** Sample rate the vendor gets PCM s16le mono at. */
  sampleRate: number;
  /** Audio per message, ms (0: each frame as it comes). */
  chunkMs?: number;
  /** Wait for a `ready` event after the opening messages before the socket counts as open. */
  awaitReady?: boolean;
  /** Where to dial; may ask an HTTP API first (aborted by `signal` on stop). */
  endpoint(signal: AbortSignal): Promise<WsSttEndpoint>;
  /** Text messages sent as soon as the socket opens (a configuration). */
  opening?(): string[];
  /** One chunk of PCM s16le as the vendor wants it on the wire. */
  audio(pcm: Uint8Array): string | Uint8Array;
  /** Decode one server message (text or binary) into events; none for ones to ignore. */
  parse(data: unknown): SttEvent[];
  /** Sent when the local VAD hears the end of speech (ask the vendor to finish now). */
  finalize?(): string | undefined;
  /** Sent on stop before the close; `sent` is how many audio messages this socket carried. */
  closing?(sent: number): string | Uint8Array | undefined;
  /** Sent every `keepaliveMs` while no audio flows (muted, or the caller stopped feeding). */
  keepalive?: { message: string; everyMs: number };
}
