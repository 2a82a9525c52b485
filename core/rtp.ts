/**
 * RTP (RFC 3550) packets: decode (version 2, padding, header extension, CSRC list) and encode,
 * plus {@link RtpSender}, the per-stream send state (random SSRC / sequence / timestamp, 20 ms
 * G.711 packets, marker on the first packet of a talkspurt, sequence and timestamp wrap).
 * It lives in core because both the SIP leg and the WebRTC leg packetize with it.
 *
 * Hot path: {@link decodeRtp} returns views into the datagram (no payload copy) and can fill a
 * caller-owned object; {@link RtpSender} writes every packet into one reused buffer.
 *
 * @example
 * ```ts
 * import { decodeRtp, RtpSender } from "@flowcat/flowcat/sip";
 * declare const socket: Deno.DatagramConn;
 * declare const remote: Deno.NetAddr;
 * declare const mulaw160: Uint8Array;
 * declare const datagram: Uint8Array;
 * declare function handle(payloadType: number, payload: Uint8Array): void;
 * const tx = new RtpSender({ payloadType: 0 });
 * socket.send(tx.audio(mulaw160), remote); // 172 bytes, marker set on the first one
 * const pkt = decodeRtp(datagram);
 * if (pkt) handle(pkt.payloadType, pkt.payload);
 * ```
 * @module
 */

import { FlowcatError } from "./errors.ts";

/** Size of the fixed RTP header. */
export const RTP_HEADER_BYTES = 12;
/** G.711 samples (= payload bytes) in a 20 ms packet at 8 kHz. */
export const SAMPLES_PER_20MS = 160;

/** A decoded RTP packet. `payload` and `extension.data` are views into the datagram. */
export interface RtpPacket {
  /** The P bit as received (the padding is already removed from `payload`). */
  padding: boolean;
  /** M bit. */
  marker: boolean;
  /** 7-bit payload type. */
  payloadType: number;
  /** 16-bit sequence number. */
  sequence: number;
  /** 32-bit timestamp (unsigned). */
  timestamp: number;
  /** 32-bit SSRC (unsigned). */
  ssrc: number;
  /** Contributing sources (empty for plain packets). */
  csrc: readonly number[];
  /** Header extension (X bit), when present. */
  extension?: { profile: number; data: Uint8Array };
  /** Payload bytes without padding. */
  payload: Uint8Array;
}

const NO_CSRC: readonly number[] = Object.freeze([]);

/**
 * Decode an RTP datagram; undefined when it is not a valid version-2 packet. When `into` is
 * given it is filled and returned instead of allocating a new object.
 *
 * @example
 * ```ts
 * import { decodeRtp, type RtpPacket } from "@flowcat/flowcat/sip";
 * declare const socket: Deno.DatagramConn;
 * declare function play(payload: Uint8Array): void;
 * const reuse = {} as RtpPacket;
 * for await (const [buf] of socket) { const p = decodeRtp(buf, reuse); if (p) play(p.payload); }
 * ```
 */
export function decodeRtp(buf: Uint8Array, into?: RtpPacket): RtpPacket | undefined {
  if (buf.length < RTP_HEADER_BYTES || (buf[0] & 0xc0) !== 0x80) return undefined;
  const cc = buf[0] & 0x0f;
  let offset = RTP_HEADER_BYTES + cc * 4;
  if (offset > buf.length) return undefined;
  let extension: RtpPacket["extension"];
  if (buf[0] & 0x10) {
    if (offset + 4 > buf.length) return undefined;
    const dataEnd = offset + 4 + u16(buf, offset + 2) * 4;
    if (dataEnd > buf.length) return undefined;
    extension = { profile: u16(buf, offset), data: buf.subarray(offset + 4, dataEnd) };
    offset = dataEnd;
  }
  let end = buf.length;
  const padding = (buf[0] & 0x20) !== 0;
  if (padding) {
    const pad = buf[end - 1];
    if (pad === 0 || offset + pad > end) return undefined;
    end -= pad;
  }
  let csrc = NO_CSRC;
  if (cc > 0) {
    const list: number[] = [];
    for (let i = 0; i < cc; i++) list.push(u32(buf, RTP_HEADER_BYTES + i * 4));
    csrc = list;
  }
  const p = into ?? ({} as RtpPacket);
  p.padding = padding;
  p.marker = (buf[1] & 0x80) !== 0;
  p.payloadType = buf[1] & 0x7f;
  p.sequence = u16(buf, 2);
  p.timestamp = u32(buf, 4);
  p.ssrc = u32(buf, 8);
  p.csrc = csrc;
  if (extension) p.extension = extension;
  else if (into) delete p.extension;
  p.payload = buf.subarray(offset, end);
  return p;
}

// Byte reads instead of a DataView: no allocation per packet on the receive path.
function u16(b: Uint8Array, i: number): number {
  return (b[i] << 8) | b[i + 1];
}

function u32(b: Uint8Array, i: number): number {
  return ((b[i] << 24) | (b[i + 1] << 16) | (b[i + 2] << 8) | b[i + 3]) >>> 0;
}

/** Fields for {@link encodeRtp}. */
export interface RtpPacketInit {
  /** Marker bit (set on the first packet of a talkspurt); default false. */
  marker?: boolean;
  /** RTP payload type, 0 to 127. */
  payloadType: number;
  /** Sequence number, 0 to 65535. */
  sequence: number;
  /** Media timestamp in clock-rate units (samples for G.711). */
  timestamp: number;
  /** Synchronization source id (32-bit). */
  ssrc: number;
  /** Contributing sources (at most 15). */
  csrc?: readonly number[];
  /** Header extension; `data` length must be a multiple of 4. */
  extension?: { profile: number; data: Uint8Array };
  /** Padding bytes to append (1 to 255), for encryption block sizes; none by default. */
  padding?: number;
  /** Payload bytes after the header. */
  payload: Uint8Array;
}

/** Encoded size of `p`. */
export function rtpPacketLength(p: RtpPacketInit): number {
  return RTP_HEADER_BYTES + (p.csrc?.length ?? 0) * 4 +
    (p.extension ? 4 + p.extension.data.length : 0) + p.payload.length + (p.padding ?? 0);
}

/**
 * Encode an RTP packet into `out` (or a new buffer); returns the view of the written bytes.
 *
 * @example
 * ```ts
 * import { encodeRtp } from "@flowcat/flowcat/sip";
 * declare const payload: Uint8Array;
 * encodeRtp({ payloadType: 0, sequence: 1, timestamp: 160, ssrc: 0x1234, payload });
 * ```
 */
export function encodeRtp(p: RtpPacketInit, out?: Uint8Array): Uint8Array {
  const cc = p.csrc?.length ?? 0;
  const pad = p.padding ?? 0;
  if (cc > 15 || pad < 0 || pad > 255 || (p.extension && p.extension.data.length % 4 !== 0)) {
    throw new FlowcatError("protocol", "encodeRtp: bad CSRC count, padding or extension length");
  }
  const len = rtpPacketLength(p);
  const buf = out && out.length >= len ? out.subarray(0, len) : new Uint8Array(len);
  const view = new DataView(buf.buffer, buf.byteOffset, buf.byteLength);
  buf[0] = 0x80 | (pad > 0 ? 0x20 : 0) | (p.extension ? 0x10 : 0) | cc;
  buf[1] = (p.marker ? 0x80 : 0) | (p.payloadType & 0x7f);
  view.setUint16(2, p.sequence & 0xffff);
  view.setUint32(4, p.timestamp >>> 0);
  view.setUint32(8, p.ssrc >>> 0);
  let offset = RTP_HEADER_BYTES;
  for (let i = 0; i < cc; i++, offset += 4) view.setUint32(offset, p.csrc![i] >>> 0);
  if (p.extension) {
    view.setUint16(offset, p.extension.profile);
    view.setUint16(offset + 2, p.extension.data.length / 4);
    buf.set(p.extension.data, offset + 4);
    offset += 4 + p.extension.data.length;
  }
  buf.set(p.payload, offset);
  offset += p.payload.length;
  if (pad > 0) {
    buf.fill(0, offset, offset + pad - 1);
    buf[offset + pad - 1] = pad;
  }
  return buf;
}

/** Options for {@link RtpSender}. */
export interface RtpSenderOptions {
  /** Payload type of voice packets (0 PCMU, 8 PCMA, or the peer's number). */
  payloadType: number;
  /** SSRC; random by default. */
  ssrc?: number;
  /** First sequence number; random by default. */
  sequence?: number;
  /** First timestamp; random by default. */
  timestamp?: number;
  /** Largest payload accepted, bytes; default 1024. */
  maxPayload?: number;
}

/**
 * Send-side state of one RTP stream. Packets are written into one internal buffer; the
 * returned view stays valid only until the next call (send it before building the next).
 */
export class RtpSender {
  /** SSRC of this stream. */
  readonly ssrc: number;
  /** Voice payload type. */
  payloadType: number;
  #seq: number;
  #ts: number;
  #marker = true;
  #buf: Uint8Array;
  #view: DataView;
  #packet: Uint8Array;

  /** A sender with random (or given) SSRC, sequence and timestamp. */
  constructor(opts: RtpSenderOptions) {
    const rnd = crypto.getRandomValues(new Uint32Array(3));
    this.ssrc = (opts.ssrc ?? rnd[0]) >>> 0;
    this.#seq = (opts.sequence ?? rnd[1]) & 0xffff;
    this.#ts = (opts.timestamp ?? rnd[2]) >>> 0;
    this.payloadType = opts.payloadType;
    this.#buf = new Uint8Array(RTP_HEADER_BYTES + (opts.maxPayload ?? 1024));
    this.#view = new DataView(this.#buf.buffer);
    this.#buf[0] = 0x80;
    this.#view.setUint32(8, this.ssrc);
    this.#packet = this.#buf.subarray(0, 0);
  }

  /** Sequence number the next packet will carry. */
  get sequence(): number {
    return this.#seq;
  }

  /** Timestamp the next voice packet will carry. */
  get timestamp(): number {
    return this.#ts;
  }

  #write(payload: Uint8Array, pt: number, ts: number, marker: boolean): Uint8Array {
    if (payload.length > this.#buf.length - RTP_HEADER_BYTES) {
      throw new FlowcatError("protocol", "RtpSender: payload larger than maxPayload");
    }
    this.#buf[1] = (marker ? 0x80 : 0) | (pt & 0x7f);
    this.#view.setUint16(2, this.#seq);
    this.#view.setUint32(4, ts);
    this.#buf.set(payload, RTP_HEADER_BYTES);
    this.#seq = (this.#seq + 1) & 0xffff;
    // Keep the last view: packets of one stream almost always have the same size.
    const len = RTP_HEADER_BYTES + payload.length;
    if (this.#packet.length !== len) this.#packet = this.#buf.subarray(0, len);
    return this.#packet;
  }

  /**
   * A voice packet carrying `payload` (`samples` defaults to its length, right for G.711).
   * The first packet of the stream and the first after {@link silence} carry the marker.
   */
  audio(payload: Uint8Array, samples: number = payload.length): Uint8Array {
    const pkt = this.#write(payload, this.payloadType, this.#ts, this.#marker);
    this.#marker = false;
    this.#ts = (this.#ts + samples) >>> 0;
    return pkt;
  }

  /**
   * A packet with an explicit payload type and timestamp that leaves the voice timestamp
   * alone: RFC 4733 events, whose packets all carry the event's start timestamp.
   */
  event(payload: Uint8Array, payloadType: number, timestamp: number, marker: boolean): Uint8Array {
    return this.#write(payload, payloadType, timestamp >>> 0, marker);
  }

  /** Let `samples` of time pass without sending; the next voice packet starts a talkspurt. */
  silence(samples: number): void {
    this.#ts = (this.#ts + samples) >>> 0;
    this.#marker = true;
  }
}
