/**
 * Types shared by the carrier serializers: the carrier names and the serializer surface the
 * WebSocket transport sees beyond the core {@link MediaSerializer} seam.
 * @module
 */

import type { MediaSerializer, WsOut } from "../../core/seams.ts";

/** The carriers Flowcat has a media-stream serializer for (see docs/carriers.md). */
export const CARRIER_NAMES = [
  "twilio",
  "telnyx",
  "plivo",
  "vonage",
  "exotel",
  "genesys",
  "signalwire",
  "bandwidth",
  "sinch",
] as const;

/** Name of a supported carrier, e.g. `"twilio"`. */
export type CarrierName = typeof CARRIER_NAMES[number];

/** Options every serializer factory accepts. */
export interface SerializerOptions {
  /**
   * Sample rate to assume until the carrier's start message says otherwise (carriers whose rate
   * is configured in the answer document: Vonage, Sinch, Exotel, Plivo L16).
   */
  sampleRate?: number;
}

/**
 * A carrier serializer: the core seam plus what a transport needs to drive carrier handshakes.
 *
 * @example
 * ```ts
 * import { createSerializer } from "@flowcat/flowcat/telephony/serializers";
 * import type { MediaSocket } from "@flowcat/flowcat";
 * declare const openMessage: string;
 * declare const socket: MediaSocket;
 * const ser = createSerializer("genesys");
 * const got = ser.onMessage({ type: "text", data: openMessage });
 * for (const reply of ser.takeReplies()) await socket.sendText(reply as string);
 * ```
 */
export interface CarrierSerializer extends MediaSerializer {
  /** Which carrier this serializer speaks. */
  readonly carrier: CarrierName;
  /** The carrier's playback mark; `undefined` where the carrier has none. */
  encodeMark(name: string): WsOut | undefined;
  /**
   * Messages owed to the carrier because of the last inbound one (Genesys `opened`/`pong`/
   * `closed`, Sinch `answer`). Call after every {@link MediaSerializer.onMessage}; empty when none.
   */
  takeReplies(): readonly WsOut[];
  /**
   * Things an operator should hear about the last inbound message, each said once per stream
   * (an unknown encoding taken as the carrier's default). Call after every
   * {@link MediaSerializer.onMessage}; empty when none.
   */
  takeWarnings(): readonly string[];
  /** Samples per outbound audio message the carrier wants, at {@link MediaSerializer.carrierRate}. */
  chunkSamples(): number;
}
