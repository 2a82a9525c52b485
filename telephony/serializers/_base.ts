/**
 * The frame every carrier serializer shares: WsIn dispatch (close, binary audio, JSON control),
 * the call's codec, the stream id, replies owed to the carrier, and the audio result.
 * A carrier file supplies only its event handlers and its outbound message shapes.
 * @module
 */

import type { SerIn, WsIn, WsOut } from "../../core/seams.ts";
import type { AudioFrame } from "../../core/frames.ts";
import { type Encoding, encodingFromName, PayloadCodec } from "./_codec.ts";
import { ignore, type JsonObject, parseObject, shortName, STOP } from "./_json.ts";
import type { CarrierName, CarrierSerializer } from "./_types.ts";

const NO_REPLIES: readonly WsOut[] = Object.freeze([]);
const NO_WARNINGS: readonly string[] = Object.freeze([]);
const ALL_ENCODINGS: readonly Encoding[] = ["pcmu", "pcma", "l16"];

/** How a carrier frames its messages. */
export interface CarrierFraming {
  /** JSON field naming the message kind (`event`, `eventType`, `type`, `command`). */
  readonly eventKey: string;
  /** Whether binary frames carry audio (Vonage, Genesys, Sinch); else they are ignored. */
  readonly binaryAudio: boolean;
  /** Milliseconds of audio the carrier wants per outbound message. */
  readonly chunkMs: number;
}

/** Base class of every carrier serializer; see the module doc. */
export abstract class CarrierBase implements CarrierSerializer {
  /** Which carrier this serializer speaks. */
  abstract readonly carrier: CarrierName;
  /** The call's audio codec; replaced when the start message names another format. */
  protected codec: PayloadCodec;
  /** Stream id from the start message, used in outbound messages. */
  protected streamId: string | undefined;
  readonly #framing: CarrierFraming;
  #replies: WsOut[] = [];
  #warnings: string[] = [];
  #unsupported: string | undefined;
  /** Whether decoded audio may be lent (see {@link CarrierBase.lendAudio}). */
  #lend = false;

  /** A serializer with `framing`, assuming `encoding` at `rate` until the start message. */
  protected constructor(framing: CarrierFraming, encoding: Encoding, rate: number) {
    this.#framing = framing;
    this.codec = new PayloadCodec(encoding, rate);
  }

  /**
   * From now on, G.711 audio results carry lent PCM: the isolate's one decode buffer, valid
   * until the next lent decode in the isolate, so the caller must use it (or copy it) before it
   * decodes another message. For a transport that hands each result on synchronously.
   */
  lendAudio(): void {
    this.#lend = true;
  }

  /** Decode one inbound message; never throws on carrier input. */
  onMessage(msg: WsIn): SerIn {
    // Closing the media socket ends the stream on every carrier (Plivo, Vonage, Sinch send no stop).
    if (msg.type === "close") return STOP;
    if (msg.type === "binary") {
      return this.#framing.binaryAudio
        ? this.onBinary(msg.data)
        : ignore("unexpected binary frame");
    }
    const fast = this.plainAudio(msg.data);
    if (fast !== undefined) return fast;
    const o = parseObject(msg.data);
    if (typeof o === "string") return ignore(o);
    const key = this.#framing.eventKey;
    const event = o[key];
    if (typeof event !== "string") return ignore(`message without a "${key}" string`);
    return this.onEvent(event, o);
  }

  /**
   * The audio of a text message whose shape is unmistakable, read without parsing the JSON (the
   * hot path: 50 a second a call); `undefined` sends the message through the full parse.
   */
  protected plainAudio(_data: string): SerIn | undefined {
    return undefined;
  }

  /** Decode a binary audio frame (carriers with binary audio only). */
  protected onBinary(bytes: Uint8Array): SerIn {
    return this.audioResult(this.codec.decodeBytes(bytes, this.#lend), "odd-length audio frame");
  }

  /** Handle a JSON control or data message whose kind is `event`. */
  protected abstract onEvent(event: string, o: JsonObject): SerIn;

  /** Encode PCM at the carrier rate. */
  abstract encodeAudio(audio: AudioFrame): WsOut;

  /** The carrier's flush-playback message, if it has one. */
  abstract encodeClear(): WsOut | undefined;

  /** The carrier's playback mark, if it has one. */
  abstract encodeMark(name: string): WsOut | undefined;

  /** Sample rate the carrier streams at (known for sure after the start message). */
  carrierRate(): number {
    return this.codec.rate;
  }

  /** Samples per outbound message the carrier wants. */
  chunkSamples(): number {
    return Math.round(this.codec.rate * this.#framing.chunkMs / 1000);
  }

  /** Replies owed for the last inbound message; empty when none. */
  takeReplies(): readonly WsOut[] {
    if (this.#replies.length === 0) return NO_REPLIES;
    const out = this.#replies;
    this.#replies = [];
    return out;
  }

  /** Queue a reply for {@link CarrierBase.takeReplies}. */
  protected reply(msg: WsOut): void {
    this.#replies.push(msg);
  }

  /** Warnings owed for the last inbound message; empty when none. */
  takeWarnings(): readonly string[] {
    if (this.#warnings.length === 0) return NO_WARNINGS;
    const out = this.#warnings;
    this.#warnings = [];
    return out;
  }

  /** Queue a warning for {@link CarrierBase.takeWarnings}. */
  protected warn(message: string): void {
    this.#warnings.push(message);
  }

  /**
   * Adopt the format a start message names (`undefined` keeps the current one). A codec we do not
   * decode, or one the carrier cannot send, makes every later audio message an ignore that says so,
   * while the call itself still starts. Returns whether the format is usable.
   */
  protected setFormat(
    name: string | undefined,
    rate: number | undefined,
    accepted: readonly Encoding[] = ALL_ENCODINGS,
  ): boolean {
    const encoding = name === undefined ? this.codec.encoding : encodingFromName(name);
    if (encoding === undefined || !accepted.includes(encoding)) {
      this.#unsupported = `unsupported ${this.carrier} encoding "${shortName(name ?? "")}"`;
      return false;
    }
    this.#unsupported = undefined;
    const hz = rate ?? this.codec.rate;
    if (encoding !== this.codec.encoding || hz !== this.codec.rate) {
      this.codec = new PayloadCodec(encoding, hz);
    }
    return true;
  }

  /** Audio result from a base64 payload field value. */
  protected base64Audio(payload: unknown): SerIn {
    if (typeof payload !== "string") return ignore("media without a string payload");
    return this.audioResult(
      this.codec.decodeBase64(payload, this.#lend),
      "media payload is not valid base64",
    );
  }

  /** Audio result for decoded PCM, or an ignore with `failure` (or for an empty payload). */
  protected audioResult(pcm: Int16Array | undefined, failure: string): SerIn {
    if (this.#unsupported !== undefined) return ignore(this.#unsupported);
    if (pcm === undefined) return ignore(failure);
    if (pcm.length === 0) return ignore("empty audio payload");
    const audio = { pcm, sampleRate: this.codec.rate, numChannels: 1 };
    return this.#lend ? { type: "audio", audio, lent: true } : { type: "audio", audio };
  }

  /** Ignore result for an event this carrier does not act on. */
  protected unknownEvent(event: string): SerIn {
    return ignore(`unknown ${this.carrier} event "${shortName(event)}"`);
  }
}
