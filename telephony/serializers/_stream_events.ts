/**
 * The Twilio-shaped JSON family (Twilio, SignalWire, Telnyx, Exotel, Plivo): an `event` field,
 * `start` / `media` / `dtmf` / `mark` / `stop` in, base64 `media` / `mark` / `clear` out. A
 * carrier supplies where its start message keeps the ids and which key (if any) carries the
 * stream id outbound.
 * @module
 */

import type { SerIn, WsOut } from "../../core/seams.ts";
import type { AudioFrame } from "../../core/frames.ts";
import { CarrierBase, type CarrierFraming } from "./_base.ts";
import {
  dtmfResult,
  ignore,
  isInboundTrack,
  type JsonObject,
  markResult,
  objectAt,
  shortName,
  STOP,
  stringAt,
} from "./_json.ts";

/** What a carrier's start message says. */
export interface StartInfo {
  /** The carrier's call id (e.g. Twilio `callSid`). */
  callId: string;
  /** The carrier's stream id, when it has one. */
  streamId?: string;
  /** String parameters of the stream (custom parameters; on some carriers also from / to). */
  params?: Record<string, string>;
  /** Encoding name as the carrier writes it (`audio/x-mulaw`, `PCMU`); absent keeps the default. */
  encoding?: string;
  /** Sample rate; absent keeps the current one. */
  rate?: number;
}

/** Framing of every carrier in this family except the chunk size. */
export function eventFraming(chunkMs: number): CarrierFraming {
  return { eventKey: "event", binaryAudio: false, chunkMs };
}

/** Base of the Twilio-shaped carriers; see the module doc. */
export abstract class StreamEventSerializer extends CarrierBase {
  /** `,"<streamKey>":"<id>"` once the stream id is known: spliced into outbound JSON. */
  protected streamField = "";

  /** Read the ids and format from a start message; a string is why it is unusable. */
  protected abstract readStart(o: JsonObject): StartInfo | string;

  /** Outbound JSON key of the stream id; `undefined` when the carrier routes by socket. */
  protected abstract readonly streamKey: string | undefined;

  /** Handle one JSON message of the family. */
  protected onEvent(event: string, o: JsonObject): SerIn {
    switch (event) {
      case "media":
        return this.#onMedia(objectAt(o, "media"));
      case "start":
        return this.#onStart(o);
      case "dtmf":
        return dtmfResult(objectAt(o, "dtmf")?.digit);
      case "mark":
        return markResult(objectAt(o, "mark")?.name);
      case "stop":
        return STOP;
      case "connected":
        return ignore("connected handshake");
      case "error":
        return ignore(`carrier error: ${errorText(objectAt(o, "payload"))}`);
      default:
        return this.unknownEvent(event);
    }
  }

  /** A plain inbound media message's audio, without the JSON parse (see {@link plainPayload}). */
  protected override plainAudio(data: string): SerIn | undefined {
    const payload = plainPayload(data);
    if (payload === undefined) return undefined;
    const r = this.base64Audio(payload);
    return r.type === "audio" ? r : undefined;
  }

  /** Audio from a `media` object (caller's track only). */
  #onMedia(media: JsonObject | undefined): SerIn {
    if (media === undefined) return ignore("media without a media object");
    if (!isInboundTrack(media.track)) return ignore("media on a non-inbound track");
    return this.base64Audio(media.payload);
  }

  /** The start message: remember the stream id and the format. */
  #onStart(o: JsonObject): SerIn {
    const info = this.readStart(o);
    if (typeof info === "string") return ignore(info);
    this.streamId = info.streamId;
    this.streamField = info.streamId !== undefined && this.streamKey !== undefined
      ? `,${JSON.stringify(this.streamKey)}:${JSON.stringify(info.streamId)}`
      : "";
    this.setFormat(info.encoding, info.rate);
    return { type: "start", callId: info.callId, streamId: info.streamId, params: info.params };
  }

  /** `{"event":"media", <stream>, "media":{"payload": base64}}` */
  encodeAudio(audio: AudioFrame): WsOut {
    const payload = this.codec.encodeBase64(audio.pcm);
    return `{"event":"media"${this.streamField},"media":{"payload":"${payload}"}}`;
  }

  /** `{"event":"clear", <stream>}` */
  encodeClear(): WsOut | undefined {
    return `{"event":"clear"${this.streamField}}`;
  }

  /** `{"event":"mark", <stream>, "mark":{"name": name}}` */
  encodeMark(name: string): WsOut | undefined {
    return `{"event":"mark"${this.streamField},"mark":{"name":${JSON.stringify(name)}}}`;
  }
}

function errorText(payload: JsonObject | undefined): string {
  const code = payload?.code;
  const parts = [
    typeof code === "number" || typeof code === "string" ? String(code) : undefined,
    stringAt(payload, "title"),
    stringAt(payload, "detail"),
  ].filter((p) => p !== undefined);
  return parts.length > 0 ? shortName(parts.join(" "), 160) : "no detail";
}

const MEDIA_HEAD = '{"event":"media",';
const MEDIA_OBJECT = '"media":{';
const PAYLOAD_KEY = '"payload":"';
const TRACK_KEY = '"track":"';
const EVENT = '"event"';

/**
 * The base64 payload of `{"event":"media", ..., "media":{ ..., "payload":"..."}, ...}` sliced
 * out of the text, when nothing about the message could read otherwise under a full parse: it
 * starts with the event, names one event, one media object that the payload is directly inside,
 * one payload and at most one track, before the payload and inbound. Anything else (escapes
 * included: they fail the base64 decode) goes through `JSON.parse`. Only the text around the
 * payload is searched, not the payload itself.
 */
function plainPayload(data: string): string | undefined {
  if (!data.startsWith(MEDIA_HEAD) || data.charCodeAt(data.length - 1) !== 0x7d) return undefined;
  const key = data.indexOf(PAYLOAD_KEY, MEDIA_HEAD.length);
  if (key < 0) return undefined;
  const start = key + PAYLOAD_KEY.length;
  const end = data.indexOf('"', start);
  if (end < 0) return undefined;
  // One pass over the text before the payload key (from the comma after the event) and one
  // after the payload, a character at a time: each string search costs more than the short
  // texts they search, and this runs for every inbound message.
  for (let i = end + 1; i < data.length; i++) {
    if (data.charCodeAt(i) === 0x22 && keyAt(data, i, data.length) !== NO_KEY) return undefined;
  }
  let media = -1;
  let track = -1;
  for (let i = MEDIA_HEAD.length - 1; i < key; i++) {
    const c = data.charCodeAt(i);
    if (c === 0x22) {
      const k = keyAt(data, i, key);
      if (k === EVENT_KEY) return undefined;
      if (k === MEDIA_KEY) {
        if (media >= 0) return undefined;
        media = i;
        i += MEDIA_OBJECT.length - 1; // its own brace opens the object
      } else if (k === TRACK) {
        if (track >= 0) return undefined;
        track = i;
      }
    } else if ((c === 0x7b || c === 0x7d) && media >= 0) {
      // The payload directly inside the media object: no object opens or closes in between.
      return undefined;
    }
  }
  if (media < 0) return undefined;
  if (track >= 0 && !data.startsWith("inbound", track + TRACK_KEY.length)) return undefined;
  return data.slice(start, end);
}

const NO_KEY = 0;
const EVENT_KEY = 1;
const MEDIA_KEY = 2;
const TRACK = 3;
const PAYLOAD = 4;

/** Which key of a media message starts at the quote `data[i]` and ends by `to`, if any. */
function keyAt(data: string, i: number, to: number): number {
  switch (data.charCodeAt(i + 1)) {
    case 0x65: // e
      return found(data, i, to, EVENT) ? EVENT_KEY : NO_KEY;
    case 0x6d: // m
      return found(data, i, to, MEDIA_OBJECT) ? MEDIA_KEY : NO_KEY;
    case 0x74: // t
      return found(data, i, to, TRACK_KEY) ? TRACK : NO_KEY;
    case 0x70: // p
      return found(data, i, to, PAYLOAD_KEY) ? PAYLOAD : NO_KEY;
  }
  return NO_KEY;
}

/** Whether `text` starts at `data[i]` and ends by `to`. */
function found(data: string, i: number, to: number, text: string): boolean {
  return i + text.length <= to && data.startsWith(text, i);
}
