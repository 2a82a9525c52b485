/**
 * Telnyx Media Streaming: Twilio-shaped JSON with snake_case ids; base64 PCMU or PCMA at the
 * negotiated rate. Outbound messages carry no stream id (the socket routes them).
 *
 * Permissions: none (pure).
 *
 * @example
 * ```ts
 * import { createTelnyxSerializer } from "@flowcat/flowcat/telephony/serializers/telnyx";
 * const ser = createTelnyxSerializer();
 * ser.encodeClear(); // '{"event":"clear"}'
 * ```
 * @module
 */

import type { JsonObject } from "./_json.ts";
import { objectAt, pickStrings, rateAt, stringAt } from "./_json.ts";
import { eventFraming, type StartInfo, StreamEventSerializer } from "./_stream_events.ts";
import type { CarrierName, SerializerOptions } from "./_types.ts";

// Start fields passed through as params: the embedder's client_state and the call's numbers.
const PARAM_FIELDS = ["client_state", "from", "to", "user_id"] as const;

/** Serializer for Telnyx Media Streaming (PCMU/PCMA; G722, OPUS and AMR-WB are ignored). */
export class TelnyxSerializer extends StreamEventSerializer {
  /** Which carrier this serializer speaks. */
  readonly carrier: CarrierName = "telnyx";
  /** Telnyx needs no stream id outbound. */
  protected readonly streamKey: undefined = undefined;

  /** A serializer for one Telnyx stream (PCMU 8 kHz until the start message says otherwise). */
  constructor(options: SerializerOptions = {}) {
    super(eventFraming(20), "pcmu", options.sampleRate ?? 8000);
  }

  /** Telnyx's start: stream id top-level, call id and format under `start`. */
  protected readStart(o: JsonObject): StartInfo | string {
    const start = objectAt(o, "start");
    const callId = stringAt(start, "call_control_id");
    if (callId === undefined) return "start without start.call_control_id";
    const format = objectAt(start, "media_format");
    return {
      callId,
      streamId: stringAt(o, "stream_id"),
      params: pickStrings(start, PARAM_FIELDS),
      encoding: stringAt(format, "encoding"),
      rate: rateAt(format, "sample_rate"),
    };
  }
}

/** Make a {@link TelnyxSerializer}. */
export function createTelnyxSerializer(options?: SerializerOptions): TelnyxSerializer {
  return new TelnyxSerializer(options);
}
