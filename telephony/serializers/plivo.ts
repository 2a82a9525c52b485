/**
 * Plivo Audio Stream (`<Stream bidirectional="true">`): Twilio-shaped JSON in (no `connected`,
 * no `stop`: the socket closes), `playAudio` / `checkpoint` / `clearAudio` out, keyed by
 * `streamId`. Audio is base64 mu-law 8 kHz or L16 at 8 or 16 kHz, as the `contentType` chose.
 *
 * Permissions: none (pure).
 *
 * @example
 * ```ts
 * import { createPlivoSerializer } from "@flowcat/flowcat/telephony/serializers/plivo";
 * const ser = createPlivoSerializer();
 * ser.encodeMark("utt-7"); // '{"event":"checkpoint","name":"utt-7"}' (plus streamId after start)
 * ```
 * @module
 */

import type { SerIn, WsOut } from "../../core/seams.ts";
import type { AudioFrame } from "../../core/frames.ts";
import type { Encoding } from "./_codec.ts";
import type { JsonObject } from "./_json.ts";
import { ignore, markResult, objectAt, rateAt, stringAt } from "./_json.ts";
import { eventFraming, type StartInfo, StreamEventSerializer } from "./_stream_events.ts";
import type { CarrierName, SerializerOptions } from "./_types.ts";

const CONTENT_TYPES: Record<Encoding, string> = {
  pcmu: "audio/x-mulaw",
  pcma: "audio/x-alaw",
  l16: "audio/x-l16",
};

/** Plivo's `extra_headers` string (`"k1=v1;k2=v2"`, `,` also accepted) as params. */
export function parseExtraHeaders(value: unknown): Record<string, string> | undefined {
  if (typeof value !== "string" || value === "") return undefined;
  const params: Record<string, string> = {};
  for (const pair of value.split(/[;,]/)) {
    const eq = pair.indexOf("=");
    if (eq > 0) params[pair.slice(0, eq).trim()] = pair.slice(eq + 1).trim();
  }
  return params;
}

/** Serializer for Plivo Audio Stream. */
export class PlivoSerializer extends StreamEventSerializer {
  /** Which carrier this serializer speaks. */
  readonly carrier: CarrierName = "plivo";
  /** Plivo keys outbound messages by `streamId`. */
  protected readonly streamKey = "streamId";

  /** A serializer for one Plivo stream; Plivo's default content type is L16 8 kHz. */
  constructor(options: SerializerOptions = {}) {
    super(eventFraming(20), "l16", options.sampleRate ?? 8000);
  }

  /** Plivo's acknowledgements on top of the shared events. */
  protected override onEvent(event: string, o: JsonObject): SerIn {
    switch (event) {
      // `played` is the older name of the checkpoint acknowledgement.
      case "playedStream":
      case "played":
        return markResult(o.name);
      case "clearedAudio":
        return ignore("clearAudio acknowledged");
      default:
        return super.onEvent(event, o);
    }
  }

  /** Plivo's start: ids and format under `start`, custom headers in top-level `extra_headers`. */
  protected readStart(o: JsonObject): StartInfo | string {
    const start = objectAt(o, "start");
    const callId = stringAt(start, "callId");
    if (callId === undefined) return "start without start.callId";
    const format = objectAt(start, "mediaFormat");
    return {
      callId,
      streamId: stringAt(start, "streamId") ?? stringAt(o, "streamId"),
      params: parseExtraHeaders(o.extra_headers),
      encoding: stringAt(format, "encoding"),
      rate: rateAt(format, "sampleRate"),
    };
  }

  /** `playAudio` with the stream's content type and rate. */
  override encodeAudio(audio: AudioFrame): WsOut {
    const payload = this.codec.encodeBase64(audio.pcm);
    const type = CONTENT_TYPES[this.codec.encoding];
    return `{"event":"playAudio"${this.streamField},"media":{"contentType":"${type}","sampleRate":${this.codec.rate},"payload":"${payload}"}}`;
  }

  /** `clearAudio`; Plivo answers `clearedAudio`. */
  override encodeClear(): WsOut {
    return `{"event":"clearAudio"${this.streamField}}`;
  }

  /** `checkpoint`; Plivo answers `playedStream` with the same name once played. */
  override encodeMark(name: string): WsOut {
    return `{"event":"checkpoint"${this.streamField},"name":${JSON.stringify(name)}}`;
  }
}

/** Make a {@link PlivoSerializer}. */
export function createPlivoSerializer(options?: SerializerOptions): PlivoSerializer {
  return new PlivoSerializer(options);
}
