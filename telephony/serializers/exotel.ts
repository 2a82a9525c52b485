/**
 * Exotel Voicebot applet (AgentStream): Twilio-shaped JSON keyed by snake_case `stream_sid`;
 * audio is base64 16-bit little-endian PCM at 8 kHz (16 or 24 kHz when the URL asks for it).
 * Exotel wants outbound chunks of at least 100 ms in multiples of 20 ms, hence
 * {@link ExotelSerializer.chunkSamples} is 100 ms. An unknown `media_format.encoding` (streams
 * seen with `"base64"`) is taken as that PCM, with one warning.
 *
 * Permissions: none (pure).
 *
 * @example
 * ```ts
 * import { createExotelSerializer } from "@flowcat/flowcat/telephony/serializers/exotel";
 * const ser = createExotelSerializer();
 * ser.chunkSamples(); // 800 at 8 kHz
 * ```
 * @module
 */

import type { JsonObject } from "./_json.ts";
import { encodingFromName } from "./_codec.ts";
import { objectAt, pickStrings, rateAt, shortName, stringAt, stringParams } from "./_json.ts";
import { eventFraming, type StartInfo, StreamEventSerializer } from "./_stream_events.ts";
import type { CarrierName, SerializerOptions } from "./_types.ts";

// Shaped like the other StreamEventSerializer carriers (telnyx.ts, plivo.ts): the same members
// overridden, each reading its own start message.
/** Serializer for Exotel AgentStream (PCM16LE, `stream_sid`-keyed JSON). */
export class ExotelSerializer extends StreamEventSerializer {
  /** Which carrier this serializer speaks. */
  readonly carrier: CarrierName = "exotel";
  /** Exotel keys outbound messages by `stream_sid`. */
  protected readonly streamKey = "stream_sid";

  /** A serializer for one Exotel stream; `sampleRate` is the `?sample-rate=` the URL asked for. */
  constructor(options: SerializerOptions = {}) {
    super(eventFraming(100), "l16", options.sampleRate ?? 8000);
  }

  /** Exotel's start: ids under `start` (stream id also top-level), rate as a string. */
  protected readStart(o: JsonObject): StartInfo | string {
    const start = objectAt(o, "start");
    const callId = stringAt(start, "call_sid");
    if (callId === undefined) return "start without start.call_sid";
    const format = objectAt(start, "media_format");
    return {
      callId,
      streamId: stringAt(start, "stream_sid") ?? stringAt(o, "stream_sid"),
      params: pickStrings(start, ["from", "to"], stringParams(start?.custom_parameters)),
      encoding: this.#encoding(stringAt(format, "encoding")),
      rate: rateAt(format, "sample_rate"),
    };
  }

  /**
   * The encoding to use for what the start message names. Exotel documents `audio/x-raw` (PCM16LE)
   * and streams nothing else, but streams in the wild name other things (`"base64"`, the payload's
   * transport encoding): those are taken as the documented 16-bit PCM, with one warning, rather
   * than dropping every frame.
   */
  #encoding(name: string | undefined): string | undefined {
    if (name === undefined || encodingFromName(name) !== undefined) return name;
    this.warn(
      `exotel: unknown media_format.encoding "${shortName(name)}"; taking it as the ` +
        "documented 16-bit PCM (audio/x-raw)",
    );
    return "audio/x-raw";
  }
}

/** Make an {@link ExotelSerializer}. */
export function createExotelSerializer(options?: SerializerOptions): ExotelSerializer {
  return new ExotelSerializer(options);
}
