/**
 * Twilio Media Streams (`<Connect><Stream>`): JSON text frames, base64 mu-law 8 kHz both ways,
 * every outbound message keyed by `streamSid`.
 *
 * @example
 * ```ts
 * import { createTwilioSerializer } from "./twilio.ts";
 * const ser = createTwilioSerializer();
 * ser.onMessage({ type: "text", data: startJson }); // { type: "start", callId: "CA...", ... }
 * ser.encodeClear(); // '{"event":"clear","streamSid":"MZ..."}'
 * ```
 * @module
 */

import type { JsonObject } from "./_json.ts";
import { objectAt, rateAt, stringAt, stringParams } from "./_json.ts";
import { eventFraming, type StartInfo, StreamEventSerializer } from "./_stream_events.ts";
import type { CarrierName, SerializerOptions } from "./_types.ts";

/** Twilio's start message: ids and format under `start`, stream id also at the top level. */
export function readTwilioStart(o: JsonObject): StartInfo | string {
  const start = objectAt(o, "start");
  const callId = stringAt(start, "callSid");
  if (callId === undefined) return "start without start.callSid";
  const format = objectAt(start, "mediaFormat");
  return {
    callId,
    streamId: stringAt(start, "streamSid") ?? stringAt(o, "streamSid"),
    params: stringParams(start?.customParameters),
    encoding: stringAt(format, "encoding"),
    rate: rateAt(format, "sampleRate"),
  };
}

/** Serializer for Twilio Media Streams (mu-law 8 kHz, `streamSid`-keyed JSON). */
export class TwilioSerializer extends StreamEventSerializer {
  /** Which carrier this serializer speaks. */
  readonly carrier: CarrierName = "twilio";
  /** Twilio keys outbound messages by `streamSid`. */
  protected readonly streamKey = "streamSid";

  /** A serializer for one Twilio stream. */
  constructor(_options: SerializerOptions = {}) {
    super(eventFraming(20), "pcmu", 8000);
  }

  /** Twilio's start message layout. */
  protected readStart(o: JsonObject): StartInfo | string {
    return readTwilioStart(o);
  }
}

/** Make a {@link TwilioSerializer}. */
export function createTwilioSerializer(options?: SerializerOptions): TwilioSerializer {
  return new TwilioSerializer(options);
}
