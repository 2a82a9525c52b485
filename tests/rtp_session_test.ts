/**
 * RtpSession on 127.0.0.1: G.711 both ways between two sessions, RFC 4733 in and out, the
 * jitter buffer reordering and concealing loss, symmetric-RTP drops, RTP port probing
 * (skipping taken ports, a clear error when all are taken), and what a SIP leg over a session
 * reports as dropped media (late, discarded, overflow, barge-in).
 */

import assert from "node:assert/strict";
import { alawDecode, alawEncode, ulawDecode, ulawEncode } from "../core/audio/g711.ts";
import { dtmfEventPackets } from "../core/audio/dtmf_rfc4733.ts";
import { FlowcatError } from "../core/errors.ts";
import type { KeypadEntry } from "../core/frames.ts";
import { decodeRtp, encodeRtp } from "../core/rtp.ts";
import { RtpSession } from "../telephony/sip/rtp_session.ts";
import type { RtpSessionOptions } from "../telephony/sip/rtp_session_types.ts";
import { SipMediaTransport } from "../telephony/sip/sip_transport.ts";
import type { NegotiatedMedia } from "../telephony/sip/sdp.ts";
import { freeEvenPortBase, sine8k } from "./_sipp.ts";

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

async function until(cond: () => boolean, ms = 2000, what = "condition"): Promise<void> {
  const end = performance.now() + ms;
  while (!cond()) {
    if (performance.now() > end) throw new Error(`timed out waiting for ${what}`);
    await sleep(5);
  }
}

function opts(base: number, extra: Partial<RtpSessionOptions> = {}): RtpSessionOptions {
  return { bindHost: "127.0.0.1", portBase: base, portTries: 4, keepAliveSilence: false, ...extra };
}

function media(remotePort: number, extra: Partial<NegotiatedMedia> = {}): NegotiatedMedia {
  return {
    codec: "PCMU",
    payloadType: 0,
    telephoneEventPt: 101,
    remoteAddress: "127.0.0.1",
    remotePort,
    ptime: 20,
    remoteDirection: "sendrecv",
    localDirection: "sendrecv",
    hold: false,
    ...extra,
  };
}

/** A session plus what it received. */
function collector() {
  const audio: Int16Array[] = [];
  const keys: KeypadEntry[] = [];
  return {
    audio,
    keys,
    handlers: {
      onAudio: (p: Int16Array) => audio.push(p),
      onDtmf: (k: KeypadEntry) => keys.push(k),
    },
  };
}

/** A raw UDP socket on 127.0.0.1 for hand-made packets. */
function rawSocket() {
  const conn = Deno.listenDatagram({ transport: "udp", hostname: "127.0.0.1", port: 0 });
  return {
    conn,
    port: (conn.addr as Deno.NetAddr).port,
    send: (bytes: Uint8Array, port: number) =>
      conn.send(bytes, { transport: "udp", hostname: "127.0.0.1", port }),
  };
}

function voicePacket(seq: number, fill: number, ssrc = 0x42): Uint8Array {
  return encodeRtp({
    payloadType: 0,
    sequence: seq,
    timestamp: seq * 160,
    ssrc,
    payload: new Uint8Array(160).fill(fill),
  });
}

Deno.test("two sessions exchange PCMU and PCMA audio, 160 samples a packet, bit-exact", async () => {
  for (const codec of ["PCMU", "PCMA"] as const) {
    const base = freeEvenPortBase(4);
    const a = RtpSession.open(opts(base));
    const b = RtpSession.open(opts(base));
    assert.equal(a.port, base);
    assert.equal(b.port, base + 2, "the second session probes the next even port");
    const pt = codec === "PCMU" ? 0 : 8;
    const ra = collector();
    const rb = collector();
    a.start(media(b.port, { codec, payloadType: pt }), ra.handlers);
    b.start(media(a.port, { codec, payloadType: pt }), rb.handlers);
    const tone = sine8k(480, 1000);
    // Odd-sized pieces: the session regroups them into 20 ms packets.
    a.sendPcm8k(tone.subarray(0, 100));
    a.sendPcm8k(tone.subarray(100, 480));
    b.sendPcm8k(tone.subarray(0, 160));
    await until(() => rb.audio.length === 3 && ra.audio.length === 1, 2000, "audio");
    const roundTrip = codec === "PCMU"
      ? ulawDecode(ulawEncode(tone))
      : alawDecode(alawEncode(tone));
    assert.deepEqual(rb.audio.map((x) => x.length), [160, 160, 160]);
    assert.deepEqual(Int16Array.from(rb.audio.flatMap((x) => [...x])), roundTrip);
    assert.equal(a.stats.packetsSent, 3);
    assert.equal(b.stats.packetsReceived, 3);
    await a.close();
    await b.close();
  }
});

Deno.test("RFC 4733 out and in: keys sent as events arrive once each, voice muted meanwhile", async () => {
  const base = freeEvenPortBase(4);
  const a = RtpSession.open(opts(base));
  const b = RtpSession.open(opts(base));
  const rb = collector();
  a.start(media(b.port), collector().handlers);
  b.start(media(a.port), rb.handlers);
  const sending = a.sendDtmf(["5", "#"], { durationMs: 60, gapMs: 20 });
  a.sendPcm8k(new Int16Array(160)); // muted: an event is on the wire
  await sending;
  await until(() => rb.keys.length === 2, 2000, "keys");
  assert.deepEqual(rb.keys, ["5", "#"]);
  assert.equal(a.stats.dtmfOut, 2);
  assert.equal(b.stats.dtmfIn, 2);
  assert.equal(rb.audio.length, 0, "voice was muted during the events");
  await a.close();
  await b.close();
});

Deno.test("sendDtmf wire format: one timestamp per event, marker first, three end packets", async () => {
  const base = freeEvenPortBase(2);
  const raw = rawSocket();
  const a = RtpSession.open(opts(base));
  a.start(media(raw.port), collector().handlers);
  const packets: Uint8Array[] = [];
  const reading = (async () => {
    const buf = new Uint8Array(2048);
    while (packets.length < 7) packets.push((await raw.conn.receive(buf))[0].slice());
  })();
  await a.sendDtmf(["9"], { durationMs: 100, gapMs: 0 });
  await reading;
  const decoded = packets.map((p) => decodeRtp(p)!);
  assert.ok(decoded.every((p) => p.payloadType === 101));
  assert.equal(new Set(decoded.map((p) => p.timestamp)).size, 1);
  assert.deepEqual(decoded.map((p) => p.marker), [true, false, false, false, false, false, false]);
  assert.deepEqual(decoded.map((p) => p.payload[0]), [9, 9, 9, 9, 9, 9, 9]);
  assert.deepEqual(decoded.map((p) => (p.payload[1] & 0x80) !== 0), [
    false,
    false,
    false,
    false,
    true,
    true,
    true,
  ]);
  const seqs = decoded.map((p) => p.sequence);
  assert.deepEqual(seqs, seqs.map((_, i) => (seqs[0] + i) & 0xffff));
  await a.close();
  raw.conn.close();
});

Deno.test("RFC 4733 in: start, updates and three end packets of one press report the key once", async () => {
  const base = freeEvenPortBase(2);
  const raw = rawSocket();
  const s = RtpSession.open(opts(base));
  const got = collector();
  s.start(media(raw.port), got.handlers);
  let seq = 100;
  for (const ts of [8000, 9600]) {
    for (const p of dtmfEventPackets("7")) {
      await raw.send(
        encodeRtp({
          payloadType: 101,
          marker: p.marker,
          sequence: seq++,
          timestamp: ts,
          ssrc: 7,
          payload: p.payload,
        }),
        s.port,
      );
    }
  }
  await until(() => s.stats.packetsReceived === 14, 2000, "packets");
  assert.deepEqual(got.keys, ["7", "7"], "two presses, one report each");
  await s.close();
  raw.conn.close();
});

Deno.test("jitter buffer: reordered packets come out in order; a lost one is concealed", async () => {
  const base = freeEvenPortBase(2);
  const raw = rawSocket();
  const s = RtpSession.open(opts(base, { jitterDepth: 3 }));
  const got = collector();
  s.start(media(raw.port), got.handlers);
  // 0xff is µ-law silence (0); 0x80 is a loud positive sample, 0x00 a loud negative one.
  const order: [number, number][] = [[1, 0x80], [3, 0x82], [2, 0x81], [4, 0x83], [6, 0x85], [
    7,
    0x86,
  ], [8, 0x87]];
  for (const [seq, fill] of order) await raw.send(voicePacket(seq, fill), s.port);
  await until(() => got.audio.length >= 8, 2000, "frames");
  const firsts = got.audio.map((f) => f[0]);
  const v = (b: number) => ulawDecode(new Uint8Array([b]))[0];
  // 1, 2, 3, 4 in order; 5 never came: once three packets wait it is concealed as half of 4.
  assert.deepEqual(firsts, [
    v(0x80),
    v(0x81),
    v(0x82),
    v(0x83),
    v(0x83) >> 1,
    v(0x85),
    v(0x86),
    v(0x87),
  ]);
  assert.equal(s.stats.lost, 1);
  await s.close();
  raw.conn.close();
});

Deno.test("a SIP leg counts late and discarded packets, inbound overflow, audio a barge-in cleared", async () => {
  const base = freeEvenPortBase(2);
  const raw = rawSocket();
  const s = RtpSession.open(opts(base, { jitterDepth: 3 }));
  const leg = new SipMediaTransport("call-1", s, () => Promise.resolve());
  s.start(media(raw.port), {
    onAudio: (p) => leg.pushAudio(p),
    onDtmf: (k) => leg.pushDtmf(k),
  });
  try {
    assert.deepEqual(leg.droppedMedia(), { overflow: 0, late: 0, jitter_discard: 0, barge_in: 0 });
    // 4 is missing until it is concealed; when it comes after all, it is late.
    for (const seq of [1, 2, 3, 5, 6, 7, 8]) await raw.send(voicePacket(seq, 0x80), s.port);
    await until(() => s.stats.lost === 1, 2000, "4 concealed");
    await raw.send(voicePacket(4, 0x80), s.port);
    await until(() => leg.droppedMedia().late === 1, 2000, "the late packet counted");
    // A burst of 20 packets at once, more than the buffer's 200 ms: the oldest are discarded.
    for (let seq = 9; seq < 29; seq++) await raw.send(voicePacket(seq, 0x80), s.port);
    await until(() => leg.droppedMedia().jitter_discard > 0, 2000, "discards counted");
    // Nobody reads the leg: beyond 500 queued events the oldest are dropped.
    for (let i = 0; i < 520; i++) leg.pushAudio(new Int16Array(160));
    assert.ok(leg.droppedMedia().overflow >= 20, `overflow ${leg.droppedMedia().overflow}`);
    // A second of bot audio, then a barge-in: what the RTP clock had not sent is cleared.
    await leg.sendAudio({ pcm: new Int16Array(8000).fill(1000), sampleRate: 8000, numChannels: 1 });
    await leg.sendClear();
    const cleared = leg.droppedMedia().barge_in;
    assert.ok(cleared >= 40 && cleared <= 50, `cleared ${cleared}`);
  } finally {
    await s.close();
    raw.conn.close();
  }
});

Deno.test("symmetric RTP: after latching, packets from another source are dropped and counted", async () => {
  const base = freeEvenPortBase(2);
  const peer = rawSocket();
  const rogue = rawSocket();
  const s = RtpSession.open(opts(base));
  const got = collector();
  s.start(media(peer.port), got.handlers);
  await peer.send(voicePacket(1, 0x80), s.port);
  await until(() => got.audio.length === 1, 2000, "first packet");
  await rogue.send(voicePacket(2, 0x10, 0x99), s.port);
  await rogue.send(voicePacket(3, 0x10, 0x99), s.port);
  await peer.send(voicePacket(2, 0x81), s.port);
  await until(() => got.audio.length === 2, 2000, "second packet");
  assert.equal(s.stats.droppedForeign, 2);
  assert.equal(got.audio[1][0], ulawDecode(new Uint8Array([0x81]))[0]);
  assert.deepEqual(s.remote, { hostname: "127.0.0.1", port: peer.port });
  // With latching off only the SDP address and port count, even for the first packet.
  const strict = RtpSession.open(opts(base, { latch: "off" }));
  const got2 = collector();
  strict.start(media(peer.port), got2.handlers);
  await rogue.send(voicePacket(1, 0x10), strict.port);
  await peer.send(voicePacket(1, 0x80), strict.port);
  await until(() => got2.audio.length === 1, 2000, "strict packet");
  assert.equal(strict.stats.droppedForeign, 1);
  await s.close();
  await strict.close();
  peer.conn.close();
  rogue.conn.close();
});

Deno.test("port probing skips taken even ports and says clearly when all are taken", async () => {
  const base = freeEvenPortBase(3);
  const held = [base, base + 2].map((port) =>
    Deno.listenDatagram({ transport: "udp", hostname: "127.0.0.1", port })
  );
  try {
    const s = RtpSession.open(opts(base, { portTries: 3 }));
    assert.equal(s.port, base + 4);
    await s.close();
    const err = (() => {
      try {
        RtpSession.open(opts(base, { portTries: 2 }));
      } catch (e) {
        return e;
      }
    })();
    assert.ok(err instanceof FlowcatError);
    assert.match(err.message, new RegExp(`all 2 even UDP ports ${base}\\.\\.${base + 2}`));
    assert.match(err.message, /rtpPortTries/);
  } finally {
    for (const c of held) c.close();
  }
});

Deno.test("idle sessions keep the line alive with 20 ms silence packets", async () => {
  const base = freeEvenPortBase(2);
  const raw = rawSocket();
  const s = RtpSession.open(opts(base, { keepAliveSilence: true }));
  s.start(media(raw.port), collector().handlers);
  const buf = new Uint8Array(2048);
  const [pkt] = await raw.conn.receive(buf);
  const p = decodeRtp(pkt)!;
  assert.equal(p.payloadType, 0);
  assert.equal(p.payload.length, 160);
  assert.ok(p.payload.every((b) => b === 0xff), "µ-law silence");
  await s.close();
  raw.conn.close();
});
