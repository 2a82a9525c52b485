/**
 * Genesys Cloud AudioHook, protocol version "2": JSON text control messages with a shared
 * envelope (`version`, `id`, `type`, `seq`, `clientseq`/`serverseq`, `position`, `parameters`)
 * and binary audio (PCMU 8 kHz; L16 also defined). The serializer runs the handshake itself:
 * `open` -> `opened`, `ping` -> `pong`, `close` -> `closed`, through
 * {@link GenesysSerializer.takeReplies}. Barge-in is an `event` with a `barge_in` entity.
 *
 * Permissions: none (pure).
 *
 * @example
 * ```ts
 * import { createGenesysSerializer } from "@flowcat/flowcat/telephony/serializers/genesys";
 * declare const openJson: string; // the Genesys "open" message
 * const ser = createGenesysSerializer();
 * ser.onMessage({ type: "text", data: openJson }); // { type: "start", callId: conversationId }
 * ser.takeReplies(); // [opened message]
 * ```
 * @module
 */

import type { SerIn, WsOut } from "../../core/seams.ts";
import type { AudioFrame } from "../../core/frames.ts";
import { CarrierBase } from "./_base.ts";
import { encodingFromName } from "./_codec.ts";
import {
  dtmfResult,
  ignore,
  isObject,
  type JsonObject,
  numberAt,
  objectAt,
  pickStrings,
  shortName,
  STOP,
  stringAt,
  stringParams,
} from "./_json.ts";
import type { CarrierName, SerializerOptions } from "./_types.ts";

/** One entry of the `media` list in `open` / `opened`. */
export interface MediaOffer {
  /** Media type; only audio offers are usable. */
  type: "audio";
  /** Wire encoding name (`PCMU`, `L16`, ...). */
  format: string;
  /** Channel names in order (`external` is the customer, `internal` the agent). */
  channels: string[];
  /** Sample rate, Hz. */
  rate: number;
}

/** The offer we take: audio we decode at 8 kHz with the customer (external) channel first. */
export function chooseMedia(offers: unknown): MediaOffer | undefined {
  if (!Array.isArray(offers)) return undefined;
  const usable: MediaOffer[] = [];
  for (const m of offers) {
    if (!isObject(m) || m.type !== "audio" || typeof m.format !== "string") continue;
    if (encodingFromName(m.format) === undefined || numberAt(m, "rate") !== 8000) continue;
    const channels = Array.isArray(m.channels) ? m.channels : [];
    if (channels[0] !== "external" || channels.length > 2) continue;
    usable.push({ type: "audio", format: m.format, channels: channels as string[], rate: 8000 });
  }
  // Mono saves Genesys the bandwidth of the agent channel we would throw away.
  return usable.find((m) => m.channels.length === 1) ?? usable[0];
}

/** Seconds as the ISO-8601 duration AudioHook uses, e.g. `PT12.340S`. */
export function isoPosition(seconds: number): string {
  return `PT${seconds.toFixed(3)}S`;
}

/** The seconds of an ISO-8601 `PT<n>S` duration (hours/minutes accepted); `undefined` if not one. */
export function parseIsoPosition(value: unknown): number | undefined {
  if (typeof value !== "string") return undefined;
  const m = /^PT(?:(\d+)H)?(?:(\d+)M)?(?:(\d+(?:\.\d+)?)S)?$/.exec(value);
  if (m === null || value === "PT") return undefined;
  return Number(m[1] ?? 0) * 3600 + Number(m[2] ?? 0) * 60 + Number(m[3] ?? 0);
}

/** Serializer for one Genesys AudioHook session. */
export class GenesysSerializer extends CarrierBase {
  /** Which carrier this serializer speaks. */
  readonly carrier: CarrierName = "genesys";
  #seq = 0;
  #clientSeq = 0;
  /** Caller audio received so far, in samples (the `position` of our messages). */
  #samples = 0;
  #stereo = false;
  #open = false;
  #paused = false;
  #outputVariables: Record<string, unknown> | undefined;

  /** A serializer for one AudioHook session (PCMU 8 kHz). */
  constructor(_options: SerializerOptions = {}) {
    super({ eventKey: "type", binaryAudio: true, chunkMs: 200 }, "pcmu", 8000);
  }

  /** Variables handed back to the Architect flow in `closed` and `disconnect`. */
  setOutputVariables(vars: Record<string, unknown>): void {
    this.#outputVariables = vars;
  }

  /** Handle one JSON control message. */
  protected onEvent(type: string, o: JsonObject): SerIn {
    const seq = numberAt(o, "seq");
    if (seq !== undefined && Number.isInteger(seq)) this.#clientSeq = seq;
    const position = parseIsoPosition(o.position);
    if (position !== undefined) this.#samples = Math.round(position * this.codec.rate);
    const params = objectAt(o, "parameters");
    switch (type) {
      case "open":
        return this.#onOpen(o, params);
      case "ping":
        this.reply(this.#message("pong", {}));
        return ignore("ping answered");
      case "close":
        this.#open = false;
        this.reply(this.#message("closed", this.#closingParams()));
        return STOP;
      case "dtmf":
        return dtmfResult(params?.digit);
      case "pause":
        this.#paused = true;
        return ignore("session paused: audio dropped until encodeResumed()");
      case "error":
        return ignore(
          `genesys error ${String(params?.code)}: ${
            shortName(stringAt(params, "message") ?? "", 160)
          }`,
        );
      case "update":
      case "playback_started":
      case "playback_completed":
        return ignore(`${type} noted`);
      default:
        return this.unknownEvent(type);
    }
  }

  #onOpen(o: JsonObject, params: JsonObject | undefined): SerIn {
    const id = stringAt(o, "id");
    if (id === undefined) return ignore("open without a session id");
    this.streamId = id;
    const media = chooseMedia(params?.media);
    if (media === undefined) {
      this.reply(this.#message("disconnect", { reason: "error", info: "no supported media" }));
      return ignore("open offers no PCMU/L16 8 kHz media with the external channel");
    }
    this.setFormat(media.format, media.rate);
    this.#stereo = media.channels.length === 2;
    this.#open = true;
    this.#paused = false;
    this.reply(this.#message("opened", { startPaused: false, media: [media] }, false));
    const vars = stringParams(params?.inputVariables) ?? {};
    const participant = pickStrings(objectAt(params, "participant"), ["ani", "dnis"]);
    return {
      type: "start",
      callId: stringAt(params, "conversationId") ?? id,
      streamId: id,
      params: { ...participant, ...vars },
    };
  }

  /** Caller audio; stereo frames keep the external (left) channel. */
  protected override onBinary(bytes: Uint8Array): SerIn {
    if (!this.#open) return ignore("audio before open");
    if (this.#paused) return ignore("audio while paused");
    const result = super.onBinary(bytes);
    if (result.type !== "audio") return result;
    let pcm = result.audio.pcm;
    if (this.#stereo) {
      const mono = new Int16Array(pcm.length >> 1);
      for (let i = 0; i < mono.length; i++) mono[i] = pcm[i * 2];
      pcm = mono;
    }
    this.#samples += pcm.length;
    return this.#stereo ? this.audioResult(pcm, "") : result;
  }

  #message(type: string, parameters: JsonObject, withPosition = true): string {
    return JSON.stringify({
      version: "2",
      id: this.streamId,
      type,
      seq: ++this.#seq,
      clientseq: this.#clientSeq,
      ...(withPosition ? { position: isoPosition(this.#samples / this.codec.rate) } : {}),
      parameters,
    });
  }

  #closingParams(): JsonObject {
    return this.#outputVariables === undefined ? {} : { outputVariables: this.#outputVariables };
  }

  /** Binary PCMU (or L16) mono; send about 200 ms per frame to stay under Genesys' rate limit. */
  encodeAudio(audio: AudioFrame): WsOut {
    return this.codec.encodeBytes(audio.pcm);
  }

  /** The barge-in `event`: Genesys flushes its playback. */
  encodeClear(): WsOut {
    return this.#message("event", { entities: [{ type: "barge_in", data: {} }] });
  }

  /** AudioHook has no playback mark. */
  encodeMark(_name: string): WsOut | undefined {
    return undefined;
  }

  /** `resumed`: take caller audio again after a `pause`. */
  encodeResumed(): WsOut {
    this.#paused = false;
    return this.#message("resumed", {});
  }

  /**
   * `disconnect`: end the session from our side (`reason` e.g. `completed`, `error`); Genesys then
   * sends `close`. Output variables set with {@link GenesysSerializer.setOutputVariables} go along.
   */
  encodeDisconnect(reason = "completed"): WsOut {
    return this.#message("disconnect", { reason, ...this.#closingParams() });
  }
}

/** Make a {@link GenesysSerializer}. */
export function createGenesysSerializer(options?: SerializerOptions): GenesysSerializer {
  return new GenesysSerializer(options);
}
