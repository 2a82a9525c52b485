/**
 * Twilio Media Streams (`<Connect><Stream>`): JSON text frames, base64 mu-law 8 kHz both ways,
 * every outbound message keyed by `streamSid`.
 *
 * Permissions: none (pure).
 *
 * @example
 * ```ts
 * import { createTwilioSerializer } from "@flowcat/flowcat/telephony/serializers/twilio";
 * declare const startJson: string; // the Twilio "start" event
 * const ser = createTwilioSerializer();
 * ser.onMessage({ type: "text", data: startJson }); // { type: "start", callId: "CA...", ... }
 * ser.encodeClear(); // '{"event":"clear","streamSid":"MZ..."}'
 * ```
 * @module
 */

import type { CarrierName, SerializerOptions } from "./_types.ts";
import { TwilioWireSerializer } from "./_twilio_wire.ts";

export { readTwilioStart } from "./_twilio_wire.ts";

/** Serializer for Twilio Media Streams (mu-law 8 kHz, `streamSid`-keyed JSON). */
export class TwilioSerializer extends TwilioWireSerializer {
  /** Which carrier this serializer speaks. */
  readonly carrier: CarrierName = "twilio";
}

/**
 * Make a {@link TwilioSerializer}, one per call (it remembers the stream id).
 *
 * @example
 * ```ts
 * import { createTwilioSerializer } from "@flowcat/flowcat/telephony/serializers/twilio";
 * declare const twilioJson: string;
 * declare const socket: { send(data: string | Uint8Array): void };
 * const ser = createTwilioSerializer();
 * const event = ser.onMessage({ type: "text", data: twilioJson }); // start, audio, dtmf, ...
 * const clear = ser.encodeClear(); // barge-in: flush what Twilio is still playing
 * if (clear !== undefined) socket.send(clear);
 * ```
 */
export function createTwilioSerializer(options?: SerializerOptions): TwilioSerializer {
  return new TwilioSerializer(options);
}
