/**
 * Carrier media-stream serializers by name. Each carrier is also its own module
 * (`telephony/serializers/twilio.ts`, ...) for programs that need only one.
 *
 * Permissions: none (pure).
 *
 * @example
 * ```ts
 * import { createSerializer } from "@flowcat/flowcat/telephony/serializers";
 * const ser = createSerializer("twilio");
 * ser.carrierRate(); // 8000
 * ```
 * @module
 */

import { FlowcatError } from "../../core/errors.ts";
import { CARRIER_NAMES, type CarrierName, type CarrierSerializer } from "./_types.ts";
import type { SerializerOptions } from "./_types.ts";
import { createBandwidthSerializer } from "./bandwidth.ts";
import { createExotelSerializer } from "./exotel.ts";
import { createGenesysSerializer } from "./genesys.ts";
import { createPlivoSerializer } from "./plivo.ts";
import { createSignalWireSerializer } from "./signalwire.ts";
import { createSinchSerializer } from "./sinch.ts";
import { createTelnyxSerializer } from "./telnyx.ts";
import { createTwilioSerializer } from "./twilio.ts";
import { createVonageSerializer, type VonageOptions } from "./vonage.ts";

export { CARRIER_NAMES };
export type { CarrierName, CarrierSerializer, SerializerOptions, VonageOptions };
// The base classes and shapes the carrier classes are built from, so their docs are complete.
export type { CarrierBase, CarrierFraming } from "./_base.ts";
export type { StartInfo, StreamEventSerializer } from "./_stream_events.ts";
export type { TwilioWireSerializer } from "./_twilio_wire.ts";
export type { JsonObject } from "./_json.ts";
export type { Encoding, PayloadCodec } from "./_codec.ts";

/** Options any carrier accepts (the union of the per-carrier options). */
export type AnySerializerOptions = VonageOptions;

/** Makes a fresh serializer for one call. */
export type SerializerFactory = (options?: AnySerializerOptions) => CarrierSerializer;

/** Factory of each carrier's serializer, by carrier name. */
export const SERIALIZER_FACTORIES: Readonly<Record<CarrierName, SerializerFactory>> = Object.freeze(
  {
    twilio: createTwilioSerializer,
    telnyx: createTelnyxSerializer,
    plivo: createPlivoSerializer,
    vonage: createVonageSerializer,
    exotel: createExotelSerializer,
    genesys: createGenesysSerializer,
    signalwire: createSignalWireSerializer,
    bandwidth: createBandwidthSerializer,
    sinch: createSinchSerializer,
  },
);

/** Whether `name` is a carrier with a serializer. */
export function isCarrierName(name: string): name is CarrierName {
  return Object.hasOwn(SERIALIZER_FACTORIES, name);
}

/**
 * A fresh serializer for carrier `name` (one per call: it remembers the stream id).
 * Throws a `config` {@link FlowcatError} for an unknown carrier.
 *
 * @example
 * ```ts
 * const ser = createSerializer("vonage", { sampleRate: 8000 });
 * ser.carrierRate(); // 8000
 * ```
 */
export function createSerializer(name: string, options?: AnySerializerOptions): CarrierSerializer {
  if (!isCarrierName(name)) {
    throw new FlowcatError(
      "config",
      `unknown carrier "${name.slice(0, 40)}"; expected one of: ${CARRIER_NAMES.join(", ")}`,
    );
  }
  return SERIALIZER_FACTORIES[name](options);
}
