/**
 * SignalWire cXML `<Stream>` (Compatibility API): the same wire format as Twilio Media Streams,
 * so this is the shared Twilio-format serializer (`_twilio_wire.ts`) under SignalWire's name.
 * It does not import the Twilio carrier module: one carrier entry point loads one carrier.
 *
 * Permissions: none (pure).
 *
 * @example
 * ```ts
 * import { createSignalWireSerializer } from "@flowcat/flowcat/telephony/serializers/signalwire";
 * const ser = createSignalWireSerializer();
 * ser.carrierRate(); // 8000
 * ```
 * @module
 */

import { TwilioWireSerializer } from "./_twilio_wire.ts";
import type { CarrierName, SerializerOptions } from "./_types.ts";

/** Serializer for SignalWire streams (Twilio wire format; `accountSid` is the Project ID). */
export class SignalWireSerializer extends TwilioWireSerializer {
  /** Which carrier this serializer speaks. */
  readonly carrier: CarrierName = "signalwire";
}

/** Make a {@link SignalWireSerializer}. */
export function createSignalWireSerializer(options?: SerializerOptions): SignalWireSerializer {
  return new SignalWireSerializer(options);
}
