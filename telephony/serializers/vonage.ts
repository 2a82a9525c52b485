/**
 * Vonage Voice API WebSocket (NCCO `connect` to a `websocket` endpoint): binary frames of 16-bit
 * little-endian PCM at 8, 16 or 24 kHz both ways, JSON text for control. Vonage sends no call id
 * of its own: put one in the NCCO `headers` as `call_uuid` (it is echoed in the first message),
 * or give {@link VonageOptions.callId}.
 *
 * Permissions: none (pure).
 *
 * @example
 * ```ts
 * import { createVonageSerializer } from "@flowcat/flowcat/telephony/serializers/vonage";
 * const ser = createVonageSerializer({ sampleRate: 16000 });
 * ser.encodeMark("utt-7"); // '{"action":"notify","payload":{"mark":"utt-7"}}'
 * ```
 * @module
 */

import type { SerIn, WsOut } from "../../core/seams.ts";
import type { AudioFrame } from "../../core/frames.ts";
import { CarrierBase } from "./_base.ts";
import { rateFromContentType } from "./_codec.ts";
import { dtmfResult, ignore, type JsonObject, markResult, objectAt, stringAt } from "./_json.ts";
import type { CarrierName, SerializerOptions } from "./_types.ts";

/** Options of {@link createVonageSerializer}. */
export interface VonageOptions extends SerializerOptions {
  /** Call id to report when the connected message carries no `call_uuid` header. */
  callId?: string;
}

// Fields of `websocket:connected` that are Vonage's own, not NCCO headers echoed back.
const OWN_FIELDS = new Set(["event", "content-type"]);

/** Serializer for the Vonage Voice API WebSocket (L16, binary audio). */
export class VonageSerializer extends CarrierBase {
  /** Which carrier this serializer speaks. */
  readonly carrier: CarrierName = "vonage";
  readonly #fallbackCallId: string | undefined;

  /** A serializer for one Vonage socket; `sampleRate` is the NCCO `content-type` rate. */
  constructor(options: VonageOptions = {}) {
    super(
      { eventKey: "event", binaryAudio: true, chunkMs: 20 },
      "l16",
      options.sampleRate ?? 16000,
    );
    this.#fallbackCallId = options.callId;
  }

  /** Handle one JSON text message. */
  protected onEvent(event: string, o: JsonObject): SerIn {
    switch (event) {
      case "websocket:connected":
        return this.#connected(o);
      case "websocket:dtmf":
        return dtmfResult(o.digit ?? objectAt(o, "dtmf")?.digit);
      case "websocket:notify":
        return markResult(objectAt(o, "payload")?.mark);
      case "websocket:cleared":
        return ignore("clear acknowledged");
      default:
        return this.unknownEvent(event);
    }
  }

  #connected(o: JsonObject): SerIn {
    const callId = stringAt(o, "call_uuid") ?? this.#fallbackCallId;
    if (callId === undefined) {
      return ignore("websocket:connected without call_uuid: add it to the NCCO headers");
    }
    const contentType = stringAt(o, "content-type");
    if (contentType !== undefined) {
      this.setFormat(contentType, rateFromContentType(contentType), ["l16"]);
    }
    const params: Record<string, string> = {};
    for (const [k, v] of Object.entries(o)) {
      if (typeof v === "string" && !OWN_FIELDS.has(k)) params[k] = v;
    }
    return { type: "start", callId, params };
  }

  /** A binary frame of PCM16LE (a view over `audio.pcm`; send frames of exactly 20 ms). */
  encodeAudio(audio: AudioFrame): WsOut {
    return this.codec.encodeBytes(audio.pcm);
  }

  /** `{"action":"clear"}`; Vonage answers `websocket:cleared`. */
  encodeClear(): WsOut {
    return '{"action":"clear"}';
  }

  /** `notify` with the mark in its payload; echoed as `websocket:notify` once played. */
  encodeMark(name: string): WsOut {
    return JSON.stringify({ action: "notify", payload: { mark: name } });
  }
}

/** Make a {@link VonageSerializer}. */
export function createVonageSerializer(options?: VonageOptions): VonageSerializer {
  return new VonageSerializer(options);
}
