/**
 * RFC 4733 (formerly RFC 2833) telephone-event payloads: encode, decode, the packet sequence
 * of one key press, and a receiver that reports each press once.
 *
 * Payload (4 bytes, network order):
 * ```
 *  0                   1                   2                   3
 *  0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1
 * |     event     |E|R| volume    |          duration             |
 * ```
 * Events 0-9 are the digits, 10 is `*`, 11 is `#`, 12-15 are `A`-`D`. Volume is the power
 * level in -dBm0 (0..63); duration is in RTP timestamp units since the event began. All
 * packets of one event carry the same RTP timestamp (the event start); the first has the RTP
 * marker bit; the end packet is sent three times.
 *
 * @example
 * ```ts
 * import { decodeTelephoneEvent, encodeTelephoneEvent } from "@flowcat/flowcat/audio";
 * const p = encodeTelephoneEvent({ event: 11, end: true, volume: 10, duration: 800 });
 * decodeTelephoneEvent(p); // { event: 11, end: true, volume: 10, duration: 800 }
 * ```
 * @module
 */

import { FlowcatError } from "../errors.ts";
import type { KeypadEntry } from "../frames.ts";

/** One telephone-event payload. */
export interface TelephoneEvent {
  /** Event code (0-255; 0-15 are DTMF). */
  event: number;
  /** E bit: this packet ends the event. */
  end: boolean;
  /** Power level in -dBm0 (0..63); 10 means -10 dBm0. */
  volume: number;
  /** Duration so far, in RTP timestamp units (0..65535). */
  duration: number;
}

/** Payload length of one telephone event. */
export const TELEPHONE_EVENT_BYTES = 4;

const EVENT_KEYS: readonly KeypadEntry[] = Object.freeze([
  "0",
  "1",
  "2",
  "3",
  "4",
  "5",
  "6",
  "7",
  "8",
  "9",
  "*",
  "#",
  "A",
  "B",
  "C",
  "D",
]);

/** RFC 4733 event code of a keypad key. */
export function keyToEvent(key: KeypadEntry): number {
  const code = EVENT_KEYS.indexOf(key);
  if (code < 0) throw new FlowcatError("config", `rfc4733: ${JSON.stringify(key)} is not a key`);
  return code;
}

/** Keypad key of an RFC 4733 event code, or `undefined` for a non-DTMF event (16+). */
export function eventToKey(event: number): KeypadEntry | undefined {
  return EVENT_KEYS[event];
}

/** Encode one telephone event into 4 bytes (into `out` when given). */
export function encodeTelephoneEvent(ev: TelephoneEvent, out?: Uint8Array): Uint8Array {
  const { event, volume, duration } = ev;
  if (!Number.isInteger(event) || event < 0 || event > 255) {
    throw new FlowcatError("protocol", `rfc4733: event ${event} out of range 0..255`);
  }
  if (!Number.isInteger(volume) || volume < 0 || volume > 63) {
    throw new FlowcatError("protocol", `rfc4733: volume ${volume} out of range 0..63`);
  }
  if (!Number.isInteger(duration) || duration < 0 || duration > 0xffff) {
    throw new FlowcatError("protocol", `rfc4733: duration ${duration} out of range 0..65535`);
  }
  const dst = out ?? new Uint8Array(TELEPHONE_EVENT_BYTES);
  if (dst.length < TELEPHONE_EVENT_BYTES) {
    throw new FlowcatError("other", `rfc4733: out holds ${dst.length} < 4`);
  }
  dst[0] = event;
  dst[1] = (ev.end ? 0x80 : 0) | volume; // R bit always 0
  dst[2] = duration >> 8;
  dst[3] = duration & 0xff;
  return dst;
}

/** Decode the first telephone event of an RTP payload; throws on fewer than 4 bytes. */
export function decodeTelephoneEvent(payload: Uint8Array): TelephoneEvent {
  if (payload.length < TELEPHONE_EVENT_BYTES) {
    throw new FlowcatError("protocol", `rfc4733: payload of ${payload.length} bytes (need 4)`);
  }
  return {
    event: payload[0],
    end: (payload[1] & 0x80) !== 0,
    volume: payload[1] & 0x3f,
    duration: (payload[2] << 8) | payload[3],
  };
}

/** Options of {@link dtmfEventPackets}. */
export interface DtmfPacketOptions {
  /** RTP clock rate of the telephone-event payload type (default 8000). */
  clockRate?: number;
  /** Length of the key press in ms (default 100). */
  durationMs?: number;
  /** Interval between update packets in ms (default 20, the audio packet time). */
  packetMs?: number;
  /** Power level in -dBm0 (default 10). */
  volume?: number;
  /** How many times the end packet is sent (default 3, as RFC 4733 recommends). */
  endRepeats?: number;
}

/** One RTP packet of a telephone event. */
export interface DtmfPacket {
  /** The 4-byte payload. */
  payload: Uint8Array;
  /** RTP marker bit: set on the first packet of the event only. */
  marker: boolean;
  /** Whether this is one of the end packets. */
  end: boolean;
  /** Duration field, timestamp units. */
  duration: number;
  /** When to send it, ms after the event starts (the RTP timestamp stays the event start). */
  sendAtMs: number;
}

/**
 * The packets of one key press: a start packet (marker set), updates every `packetMs` with a
 * growing duration, then the end packet `endRepeats` times. Every packet uses the same RTP
 * timestamp, the event's start.
 *
 * @example
 * ```ts
 * for (const p of dtmfEventPackets("5", { durationMs: 100 })) {
 *   // 4 packets with durations 160..640, then 3 end packets with 800
 *   // send p.payload at p.sendAtMs with RTP timestamp = event start, marker = p.marker
 * }
 * ```
 */
export function dtmfEventPackets(key: KeypadEntry, opts: DtmfPacketOptions = {}): DtmfPacket[] {
  const clockRate = opts.clockRate ?? 8000;
  const durationMs = opts.durationMs ?? 100;
  const packetMs = opts.packetMs ?? 20;
  const volume = opts.volume ?? 10;
  const endRepeats = opts.endRepeats ?? 3;
  const event = keyToEvent(key);
  const total = Math.round((durationMs * clockRate) / 1000);
  const step = Math.round((packetMs * clockRate) / 1000);
  if (!(step > 0) || !(total > 0) || !(endRepeats >= 1)) {
    throw new FlowcatError(
      "config",
      "rfc4733: duration, packet time and end repeats must be positive",
    );
  }
  if (total > 0xffff) {
    throw new FlowcatError("config", `rfc4733: ${durationMs} ms exceeds the 16-bit duration field`);
  }
  const toMs = (units: number) => (units * 1000) / clockRate;
  const packets: DtmfPacket[] = [];
  // Updates at step, 2*step, ... strictly before the end; at least the start packet.
  const updates = Math.max(1, Math.ceil(total / step) - 1);
  for (let i = 1; i <= updates; i++) {
    const duration = Math.min(i * step, total);
    packets.push({
      payload: encodeTelephoneEvent({ event, end: false, volume, duration }),
      marker: i === 1,
      end: false,
      duration,
      sendAtMs: toMs(duration),
    });
  }
  for (let i = 0; i < endRepeats; i++) {
    packets.push({
      payload: encodeTelephoneEvent({ event, end: true, volume, duration: total }),
      marker: false,
      end: true,
      duration: total,
      sendAtMs: toMs(total),
    });
  }
  return packets;
}

/**
 * Turns received telephone-event packets into key presses, once per press: a press is reported
 * on the first packet seen of an event (start, update or end alike, so a lost start packet
 * does not lose the key); later packets with the same RTP timestamp and event are ignored.
 *
 * @example
 * ```ts
 * import { Rfc4733Receiver } from "@flowcat/flowcat/audio";
 * declare const rtp: { payload: Uint8Array; timestamp: number };
 * const rx = new Rfc4733Receiver();
 * const key = rx.push(rtp.payload, rtp.timestamp); // "5" once, then undefined
 * ```
 */
export class Rfc4733Receiver {
  #timestamp = -1;
  #event = -1;

  /** Feed one packet's payload and RTP timestamp; returns the key when a new press starts. */
  push(payload: Uint8Array, rtpTimestamp: number): KeypadEntry | undefined {
    if (payload.length < TELEPHONE_EVENT_BYTES) return undefined;
    const event = payload[0];
    if (rtpTimestamp === this.#timestamp && event === this.#event) return undefined;
    this.#timestamp = rtpTimestamp;
    this.#event = event;
    return eventToKey(event);
  }

  /** Forget the last event (e.g. on a new RTP stream / SSRC). */
  reset(): void {
    this.#timestamp = -1;
    this.#event = -1;
  }
}
