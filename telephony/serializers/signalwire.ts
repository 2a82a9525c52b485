/**
 * SignalWire cXML `<Stream>` (Compatibility API): the same wire format as Twilio Media Streams,
 * so this is the Twilio serializer under SignalWire's name.
 *
 * @example
 * ```ts
 * import { createSignalWireSerializer } from "./signalwire.ts";
 * const ser = createSignalWireSerializer();
 * ser.carrierRate(); // 8000
 * ```
 * @module
 */

import { TwilioSerializer } from "./twilio.ts";
import type { CarrierName, SerializerOptions } from "./_types.ts";

/** Serializer for SignalWire streams (Twilio wire format; `accountSid` is the Project ID). */
export class SignalWireSerializer extends TwilioSerializer {
  /** Which carrier this serializer speaks. */
  override readonly carrier: CarrierName = "signalwire";
}

/** Make a {@link SignalWireSerializer}. */
export function createSignalWireSerializer(options?: SerializerOptions): SignalWireSerializer {
  return new SignalWireSerializer(options);
}
