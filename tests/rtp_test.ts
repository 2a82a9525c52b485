import assert from "node:assert/strict";
import { decodeRtp, encodeRtp, RTP_HEADER_BYTES, type RtpPacket, RtpSender } from "../core/rtp.ts";
import { RtpSourceFilter } from "../telephony/sip/rtp_source.ts";
import { FlowcatError } from "../core/errors.ts";

const hex = (s: string) => Uint8Array.from(s.match(/../g)!.map((b) => parseInt(b, 16)));

/** RFC 4733 digit "1" as recorded in sipp's /usr/share/sip-tester/dtmf_2833_1.pcap (UDP payloads). */
const SIPP_DTMF_1 = [
  "80e51f30000033e00e05384e010a0000",
  "80651f31000033e00e05384e010a0140",
  "80651f32000033e00e05384e010a0280",
  "80651f37000033e00e05384e018a08c0",
  "80651f37000033e00e05384e018a08c0",
].map(hex);

Deno.test("decode: sipp's recorded PCMA and telephone-event packets", () => {
  const pcma = decodeRtp(hex("8088e6fd000000f0dee0ee8f" + "d5".repeat(240)));
  assert.ok(pcma);
  assert.deepEqual(
    [pcma.marker, pcma.payloadType, pcma.sequence, pcma.timestamp, pcma.ssrc, pcma.payload.length],
    [true, 8, 0xe6fd, 0xf0, 0xdee0ee8f, 240],
  );
  const first = decodeRtp(SIPP_DTMF_1[0])!;
  assert.deepEqual([first.marker, first.payloadType, first.sequence, first.timestamp], [
    true,
    101,
    0x1f30,
    0x33e0,
  ]);
  assert.deepEqual([...first.payload], [1, 0x0a, 0, 0]);
  const end = decodeRtp(SIPP_DTMF_1[3])!;
  assert.equal(end.marker, false);
  assert.equal(end.payload[1] & 0x80, 0x80, "E bit set");
  assert.equal((end.payload[2] << 8) | end.payload[3], 2240);
});

Deno.test("encode/decode round trip with CSRC, extension and padding", () => {
  const payload = Uint8Array.from({ length: 160 }, (_, i) => i);
  const ext = { profile: 0xbede, data: Uint8Array.of(1, 2, 3, 4, 5, 6, 7, 8) };
  const bytes = encodeRtp({
    marker: true,
    payloadType: 0,
    sequence: 65535,
    timestamp: 0xfffffff0,
    ssrc: 0xcafebabe,
    csrc: [1, 0xffffffff],
    extension: ext,
    padding: 4,
    payload,
  });
  assert.equal(bytes.length, 12 + 8 + 12 + 160 + 4);
  assert.equal(bytes[0], 0x80 | 0x20 | 0x10 | 2);
  assert.equal(bytes.at(-1), 4);
  const p = decodeRtp(bytes)!;
  assert.ok(p.padding && p.marker);
  assert.deepEqual([p.payloadType, p.sequence, p.timestamp, p.ssrc], [
    0,
    65535,
    0xfffffff0,
    0xcafebabe,
  ]);
  assert.deepEqual(p.csrc, [1, 0xffffffff]);
  assert.equal(p.extension?.profile, 0xbede);
  assert.deepEqual([...p.extension!.data], [...ext.data]);
  assert.deepEqual([...p.payload], [...payload], "padding removed from the payload");
  assert.equal(p.payload.buffer, bytes.buffer, "payload is a view, not a copy");
});

Deno.test("decode rejects short, wrong-version and inconsistent packets", () => {
  const ok = encodeRtp({
    payloadType: 0,
    sequence: 1,
    timestamp: 2,
    ssrc: 3,
    payload: new Uint8Array(4),
  });
  assert.ok(decodeRtp(ok));
  assert.equal(decodeRtp(ok.subarray(0, 11)), undefined);
  const v1 = ok.slice();
  v1[0] = 0x40;
  assert.equal(decodeRtp(v1), undefined);
  const cc = ok.slice();
  cc[0] = 0x8f; // 15 CSRCs announced, none present
  assert.equal(decodeRtp(cc), undefined);
  const ext = ok.slice();
  ext[0] = 0x90;
  ext[15] = 5; // extension of 5 words announced, only 4 payload bytes present
  assert.equal(decodeRtp(ext), undefined);
  const pad = ok.slice();
  pad[0] = 0xa0;
  pad[pad.length - 1] = 200; // padding longer than the packet
  assert.equal(decodeRtp(pad), undefined);
  pad[pad.length - 1] = 0; // zero padding count is invalid
  assert.equal(decodeRtp(pad), undefined);
  assert.throws(
    () =>
      encodeRtp({
        payloadType: 0,
        sequence: 0,
        timestamp: 0,
        ssrc: 0,
        payload: ok,
        csrc: new Array(16).fill(0),
      }),
    FlowcatError,
  );
});

Deno.test("decode into a reused object clears a stale extension", () => {
  const reuse = {} as RtpPacket;
  const withExt = encodeRtp({
    payloadType: 8,
    sequence: 1,
    timestamp: 1,
    ssrc: 1,
    payload: Uint8Array.of(9),
    extension: { profile: 1, data: new Uint8Array(4) },
  });
  const plain = encodeRtp({
    payloadType: 0,
    sequence: 2,
    timestamp: 2,
    ssrc: 1,
    payload: Uint8Array.of(7),
  });
  assert.equal(decodeRtp(withExt, reuse), reuse);
  assert.ok(reuse.extension);
  decodeRtp(plain, reuse);
  assert.equal(reuse.extension, undefined);
  assert.equal(reuse.sequence, 2);
  assert.deepEqual([...reuse.payload], [7]);
});

Deno.test("RtpSender: random start, marker on talkspurt start, 160-sample steps, wraps", () => {
  const a = new RtpSender({ payloadType: 0 });
  const b = new RtpSender({ payloadType: 0 });
  assert.ok(a.ssrc !== b.ssrc || a.sequence !== b.sequence || a.timestamp !== b.timestamp);
  const tx = new RtpSender({
    payloadType: 8,
    ssrc: 0x11223344,
    sequence: 65534,
    timestamp: 0xffffff00,
  });
  const frame = new Uint8Array(160).fill(0xd5);
  const seen: [boolean, number, number][] = [];
  for (let i = 0; i < 3; i++) {
    const p = decodeRtp(tx.audio(frame))!;
    assert.equal(p.ssrc, 0x11223344);
    assert.equal(p.payload.length, 160);
    seen.push([p.marker, p.sequence, p.timestamp]);
  }
  assert.deepEqual(seen, [[true, 65534, 0xffffff00], [false, 65535, 0xffffffa0], [false, 0, 0x40]]);
  tx.silence(800);
  const resumed = decodeRtp(tx.audio(frame))!;
  assert.deepEqual([resumed.marker, resumed.sequence, resumed.timestamp], [
    true,
    1,
    0x40 + 160 + 800,
  ]);
  assert.equal(RTP_HEADER_BYTES + 160, tx.audio(frame).length);
});

Deno.test("RtpSender: events keep their timestamp, reuse one buffer, bound the payload", () => {
  const tx = new RtpSender({ payloadType: 0, sequence: 10, timestamp: 1000 });
  const e1 = tx.event(Uint8Array.of(1, 10, 0, 160), 101, 1000, true);
  const first = decodeRtp(e1.slice())!;
  const e2 = tx.event(Uint8Array.of(1, 10, 1, 64), 101, 1000, false);
  const second = decodeRtp(e2)!;
  assert.deepEqual([first.payloadType, first.marker, first.sequence, first.timestamp], [
    101,
    true,
    10,
    1000,
  ]);
  assert.deepEqual([second.marker, second.sequence, second.timestamp], [false, 11, 1000]);
  assert.equal(e1.buffer, e2.buffer, "packets are written into one reused buffer");
  assert.equal(tx.timestamp, 1000, "events leave the voice timestamp alone");
  assert.throws(() => tx.audio(new Uint8Array(2000)), FlowcatError);
});

Deno.test("symmetric RTP: unexpected sources are dropped, latching per mode", () => {
  const strict = new RtpSourceFilter({ hostname: "203.0.113.5", port: 30000 }, "off");
  assert.ok(strict.accept({ hostname: "203.0.113.5", port: 30000 }));
  assert.ok(!strict.accept({ hostname: "203.0.113.5", port: 30002 }));
  assert.ok(!strict.accept({ hostname: "198.51.100.1", port: 30000 }));
  assert.equal(strict.dropped, 2);

  const nat = new RtpSourceFilter({ hostname: "203.0.113.5", port: 30000 });
  assert.ok(!nat.accept({ hostname: "198.51.100.66", port: 30000 }), "other IP never latched");
  assert.ok(nat.accept({ hostname: "::ffff:203.0.113.5", port: 41234 }));
  assert.deepEqual(nat.remote, { hostname: "203.0.113.5", port: 41234 });
  assert.ok(
    !nat.accept({ hostname: "203.0.113.5", port: 30000 }),
    "latched source cannot be stolen",
  );
  nat.expect({ hostname: "203.0.113.9", port: 31000 });
  assert.ok(!nat.latched);
  assert.ok(nat.accept({ hostname: "203.0.113.9", port: 31000 }));

  const any = new RtpSourceFilter({ hostname: "10.0.0.1", port: 4000 }, "any");
  assert.ok(any.accept({ hostname: "192.0.2.200", port: 5555 }));
  assert.ok(!any.accept({ hostname: "10.0.0.1", port: 4000 }));
  assert.deepEqual(any.remote, { hostname: "192.0.2.200", port: 5555 });
});
