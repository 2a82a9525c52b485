/**
 * Sinch Voice `connectStream`: a text `connect` command first (answered with
 * `{"command":"answer"}`), then binary frames of 16-bit little-endian PCM at the announced rate
 * both ways. `{"command":"clear"}` drops unplayed audio. Sinch has no mark; no DTMF on the socket
 * is confirmed.
 *
 * Permissions: none (pure).
 *
 * @example
 * ```ts
 * import { createSinchSerializer } from "@flowcat/flowcat/telephony/serializers/sinch";
 * declare const connectJson: string; // the Sinch "connect" event
 * const ser = createSinchSerializer();
 * ser.onMessage({ type: "text", data: connectJson }); // start
 * ser.takeReplies(); // ['{"command":"answer"}']
 * ```
 * @module
 */

import type { SerIn, WsOut } from "../../core/seams.ts";
import type { AudioFrame } from "../../core/frames.ts";
import { CarrierBase } from "./_base.ts";
import { ignore, type JsonObject, rateAt, stringAt, stringParams } from "./_json.ts";
import type { CarrierName, SerializerOptions } from "./_types.ts";

const ANSWER = '{"command":"answer"}';
const REJECT = '{"command":"reject"}';

/** Serializer for Sinch `connectStream` (PCM16LE, binary audio). */
export class SinchSerializer extends CarrierBase {
  /** Which carrier this serializer speaks. */
  readonly carrier: CarrierName = "sinch";

  /** A serializer for one Sinch stream (the `connect` command sets the rate). */
  constructor(options: SerializerOptions = {}) {
    super(
      { eventKey: "command", binaryAudio: true, chunkMs: 20 },
      "l16",
      options.sampleRate ?? 16000,
    );
  }

  /** Handle one JSON text command. */
  protected onEvent(command: string, o: JsonObject): SerIn {
    return command === "connect" ? this.#connect(o) : this.unknownEvent(command);
  }

  #connect(o: JsonObject): SerIn {
    const callId = stringAt(o, "callId");
    if (callId === undefined) return ignore("connect without callId");
    // Sinch names the codec `PCM`; anything else we cannot decode, so the call is refused.
    if (!this.setFormat(stringAt(o, "codec"), rateAt(o, "sampleRate"), ["l16"])) {
      this.reply(REJECT);
      return ignore(`unsupported sinch codec "${String(o.codec).slice(0, 40)}"; call rejected`);
    }
    this.reply(ANSWER);
    return { type: "start", callId, params: stringParams(o.callHeaders) };
  }

  /** A binary frame of PCM16LE (a view over `audio.pcm`). */
  encodeAudio(audio: AudioFrame): WsOut {
    return this.codec.encodeBytes(audio.pcm);
  }

  /** `{"command":"clear"}`: Sinch drops buffered, unplayed audio. */
  encodeClear(): WsOut {
    return '{"command":"clear"}';
  }

  /** Sinch has no playback mark. */
  encodeMark(_name: string): WsOut | undefined {
    return undefined;
  }

  /** `{"command":"heartbeat"}`, the keep-alive the transport may send when idle. */
  encodeHeartbeat(): WsOut {
    return '{"command":"heartbeat"}';
  }
}

/** Make a {@link SinchSerializer}. */
export function createSinchSerializer(options?: SerializerOptions): SinchSerializer {
  return new SinchSerializer(options);
}
