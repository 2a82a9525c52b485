/**
 * Bandwidth `<StartStream mode="bidirectional">`: JSON keyed by `eventType`; base64 PCMU 8 kHz
 * in and out (`playAudio`), and `{"eventType":"clear"}` flushes the audio Bandwidth has queued
 * (barge-in). No mark equivalent is known, and DTMF does not travel on the socket (use
 * `<StartGather>` webhooks).
 *
 * Permissions: none (pure).
 *
 * @example
 * ```ts
 * import { createBandwidthSerializer } from "@flowcat/flowcat/telephony/serializers/bandwidth";
 * const ser = createBandwidthSerializer();
 * ser.encodeClear(); // '{"eventType":"clear"}'
 * ```
 * @module
 */

import type { SerIn, WsOut } from "../../core/seams.ts";
import type { AudioFrame } from "../../core/frames.ts";
import { CarrierBase } from "./_base.ts";
import {
  ignore,
  isInboundTrack,
  isObject,
  type JsonObject,
  objectAt,
  rateAt,
  STOP,
  stringAt,
  stringParams,
} from "./_json.ts";
import type { CarrierName, SerializerOptions } from "./_types.ts";

/** Serializer for Bandwidth bidirectional media streams. */
export class BandwidthSerializer extends CarrierBase {
  /** Which carrier this serializer speaks. */
  readonly carrier: CarrierName = "bandwidth";

  /** A serializer for one Bandwidth stream (PCMU 8 kHz). */
  constructor(_options: SerializerOptions = {}) {
    super({ eventKey: "eventType", binaryAudio: false, chunkMs: 20 }, "pcmu", 8000);
  }

  /** Handle one `eventType` message. */
  protected onEvent(event: string, o: JsonObject): SerIn {
    switch (event) {
      case "media":
        if (!isInboundTrack(o.track)) return ignore("media on a non-inbound track");
        return this.base64Audio(o.payload);
      case "start":
        return this.#start(o);
      case "stop":
        return STOP;
      default:
        return this.unknownEvent(event);
    }
  }

  #start(o: JsonObject): SerIn {
    const meta = objectAt(o, "metadata");
    const callId = stringAt(meta, "callId");
    if (callId === undefined) return ignore("start without metadata.callId");
    this.streamId = stringAt(meta, "streamId");
    const tracks = Array.isArray(meta?.tracks) ? meta.tracks : [];
    const inbound = tracks.find((t) => isObject(t) && t.name === "inbound");
    const format = isObject(inbound) ? objectAt(inbound, "mediaFormat") : undefined;
    this.setFormat(stringAt(format, "encoding"), rateAt(format, "sampleRate"), ["pcmu"]);
    return { type: "start", callId, streamId: this.streamId, params: stringParams(o.streamParams) };
  }

  /** `{"eventType":"playAudio","media":{"contentType":"audio/pcmu","payload": base64}}` */
  encodeAudio(audio: AudioFrame): WsOut {
    const payload = this.codec.encodeBase64(audio.pcm);
    return `{"eventType":"playAudio","media":{"contentType":"audio/pcmu","payload":"${payload}"}}`;
  }

  /** `{"eventType":"clear"}`: drop the audio Bandwidth queued but has not played. */
  encodeClear(): WsOut | undefined {
    return '{"eventType":"clear"}';
  }

  /** Bandwidth has no confirmed mark message. */
  encodeMark(_name: string): WsOut | undefined {
    return undefined;
  }
}

/** Make a {@link BandwidthSerializer}. */
export function createBandwidthSerializer(options?: SerializerOptions): BandwidthSerializer {
  return new BandwidthSerializer(options);
}
