/**
 * Twilio's Media Streams wire format, shared by every carrier that speaks it (Twilio itself and
 * SignalWire's Compatibility API): JSON text frames, base64 mu-law 8 kHz both ways, ids and
 * format under `start`, every outbound message keyed by `streamSid`. It names no carrier, so a
 * carrier entry point built on it loads no other carrier's module.
 * @module
 */

import type { JsonObject } from "./_json.ts";
import { objectAt, rateAt, stringAt, stringParams } from "./_json.ts";
import { eventFraming, type StartInfo, StreamEventSerializer } from "./_stream_events.ts";
import type { SerializerOptions } from "./_types.ts";

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

/** Base of the serializers that speak Twilio's wire format; a subclass names the carrier. */
export abstract class TwilioWireSerializer extends StreamEventSerializer {
  /** Twilio's format keys outbound messages by `streamSid`. */
  protected readonly streamKey = "streamSid";

  /** A serializer for one stream (mu-law 8 kHz, 20 ms messages). */
  constructor(_options: SerializerOptions = {}) {
    super(eventFraming(20), "pcmu", 8000);
  }

  /** Twilio's start message layout. */
  protected readStart(o: JsonObject): StartInfo | string {
    return readTwilioStart(o);
  }
}
