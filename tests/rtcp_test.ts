/**
 * RTCP (RFC 3550 §6) and SRTCP (RFC 3711 §3.4): compound reports encoded and validated, the
 * receive statistics of a report block, and two RtpSessions exchanging reports on the ports
 * above their RTP ports, in the clear and as SRTCP, with replayed and forged SRTCP dropped.
 */

import assert from "node:assert/strict";
import { encodeCompound, parseCompound, ReceiveStats } from "../telephony/sip/rtcp_packets.ts";
import { RtpSession } from "../telephony/sip/rtp_session.ts";
import type { NegotiatedMedia } from "../telephony/sip/sdp.ts";
import { newSrtpKey } from "../telephony/sip/sdes.ts";
import { SrtpContext } from "../telephony/sip/srtp.ts";
import { freeEvenPortBase, sine8k } from "./_sipp.ts";

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
async function until(cond: () => boolean, what: string, ms = 5000): Promise<void> {
  const end = performance.now() + ms;
  while (!cond()) {
    if (performance.now() > end) throw new Error(`timed out waiting for ${what}`);
    await sleep(5);
  }
}

Deno.test("compound: SR + report block + SDES + BYE round trip; broken packets refused", () => {
  const sr = encodeCompound(0x11223344, "agent@127.0.0.1", Date.UTC(2026, 0, 1), {
    rtpTimestamp: 1000,
    packets: 50,
    octets: 8000,
  }, {
    ssrc: 0x55667788,
    fractionLost: 25,
    cumulativeLost: 3,
    extendedHighestSeq: 0x10005,
    jitter: 12,
    lastSr: 0xabcd1234,
    delaySinceLastSr: 65536,
  }, true);
  assert.equal(sr.length % 4, 0);
  const v = new DataView(sr.buffer);
  assert.equal(sr[0], 0x81, "V=2, one report block");
  assert.equal(sr[1], 200, "SR");
  assert.equal(v.getUint16(2), (8 + 20 + 24) / 4 - 1);
  assert.equal(v.getUint32(8), Date.UTC(2026, 0, 1) / 1000 + 2208988800, "NTP seconds");
  assert.equal(v.getUint32(20), 50);
  assert.equal(v.getUint32(28), 0x55667788);
  assert.equal(v.getUint32(32), (25 << 24) | 3);
  assert.equal(sr[52 + 1], 202, "SDES follows");
  assert.equal(new TextDecoder().decode(sr.subarray(62, 62 + sr[61])), "agent@127.0.0.1");
  const parsed = parseCompound(sr);
  assert.deepEqual(parsed, {
    ssrc: 0x11223344,
    srNtpMiddle: ((v.getUint32(8) & 0xffff) << 16 | v.getUint32(12) >>> 16) >>> 0,
    bye: true,
  });
  const rr = encodeCompound(7, "x", 0, undefined, undefined);
  assert.equal(rr[1], 201);
  assert.deepEqual(parseCompound(rr), { ssrc: 7, bye: false });
  assert.equal(parseCompound(rr.subarray(0, rr.length - 4)), undefined, "lengths do not add up");
  const app = new Uint8Array([0x80, 204, 0, 3, 0, 0, 0, 9, 80, 73, 78, 71, 0, 0, 0, 0]);
  assert.deepEqual(parseCompound(app), { ssrc: 9, bye: false }, "a lone APP (RFC 5506)");
  const rtp = rr.slice();
  rtp[1] = 0; // an RTP payload type, not RTCP
  assert.equal(parseCompound(rtp), undefined, "not RTCP");
  const v1 = rr.slice();
  v1[0] = 0x40;
  assert.equal(parseCompound(v1), undefined, "version 1");
});

Deno.test("receive statistics: loss, fraction lost per interval, sequence wrap, jitter", () => {
  const s = new ReceiveStats();
  assert.equal(s.report(0), undefined);
  // 10 packets from 65530 across the wrap, two of them lost, arriving on time.
  for (let i = 0; i < 10; i++) {
    if (i === 3 || i === 7) continue;
    s.onPacket(9, (65530 + i) & 0xffff, i * 160, i * 20);
  }
  const r = s.report(200)!;
  assert.equal(r.ssrc, 9);
  assert.equal(r.cumulativeLost, 2);
  assert.equal(r.extendedHighestSeq, 0x10000 + 3);
  assert.equal(r.fractionLost, Math.floor((2 * 256) / 10));
  assert.equal(r.jitter, 0, "no jitter when packets arrive on their clock");
  s.onPacket(9, 4, 10 * 160, 200 + 30); // 10 ms late
  const r2 = s.report(300)!;
  assert.equal(r2.fractionLost, 0, "nothing lost in the second interval");
  assert.ok(r2.jitter > 0);
  s.onSenderReport(0x12345678, 1000);
  assert.equal(s.report(1500)!.delaySinceLastSr, 32768, "half a second in 1/65536 s");
});

function pair(srtp: boolean) {
  const base = freeEvenPortBase(4);
  const open = () =>
    RtpSession.open({
      bindHost: "127.0.0.1",
      portBase: base,
      portTries: 4,
      rtcpIntervalMs: 80,
    });
  const a = open();
  const b = open();
  const keys = {
    send: newSrtpKey("AES_CM_128_HMAC_SHA1_80"),
    receive: newSrtpKey("AES_CM_128_HMAC_SHA1_32"),
  };
  const media = (port: number, k?: NegotiatedMedia["srtp"]): NegotiatedMedia => ({
    codec: "PCMU",
    payloadType: 0,
    telephoneEventPt: 101,
    remoteAddress: "127.0.0.1",
    remotePort: port,
    ptime: 20,
    remoteDirection: "sendrecv",
    localDirection: "sendrecv",
    hold: false,
    srtp: k,
  });
  const none = { onAudio: () => {}, onDtmf: () => {} };
  a.start(media(b.port, srtp ? keys : undefined), none);
  b.start(media(a.port, srtp ? { send: keys.receive, receive: keys.send } : undefined), none);
  return { a, b, keys };
}

Deno.test("RTCP: reports both ways on the port above RTP, and BYE on close", async () => {
  const { a, b } = pair(false);
  try {
    a.sendPcm8k(sine8k(440, 400));
    await until(() => a.stats.rtcp.received >= 2 && b.stats.rtcp.received >= 2, "reports");
    assert.equal(a.stats.rtcp.malformed + b.stats.rtcp.malformed, 0);
    await a.close();
    await until(() => b.stats.rtcp.peerBye, "the BYE");
  } finally {
    await a.close();
    await b.close();
  }
});

Deno.test("SRTCP: reports authenticated both ways; replayed and forged ones dropped", async () => {
  const { a, b, keys } = pair(true);
  const sock = Deno.listenDatagram({ transport: "udp", hostname: "127.0.0.1", port: 0 });
  try {
    a.sendPcm8k(sine8k(440, 400));
    await until(() => a.stats.rtcp.received >= 2 && b.stats.rtcp.received >= 2, "reports");
    assert.equal(a.stats.rtcp.authFailed + b.stats.rtcp.authFailed, 0);
    const toB = { transport: "udp" as const, hostname: "127.0.0.1", port: b.port + 1 };
    // A report protected with a's key at index 0, which b already took from a: a replay.
    const ssrcOfA = 0x01020304;
    const replay = new SrtpContext(keys.send).protectRtcp(
      encodeCompound(ssrcOfA, "x", Date.now(), undefined, undefined),
    );
    const before = b.stats.rtcp;
    // Plain RTCP is too short for SRTCP; a valid SRTCP packet with one bit flipped fails the tag.
    const forged = replay.slice();
    forged[9] ^= 1;
    await sock.send(encodeCompound(ssrcOfA, "x", Date.now(), undefined, undefined), toB);
    await sock.send(forged, toB);
    await until(
      () =>
        b.stats.rtcp.authFailed === before.authFailed + 1 &&
        b.stats.rtcp.malformed === before.malformed + 1,
      "the forged and the plain packet dropped",
    );
    // A fresh SSRC at index 0 is new to b: accepted once, then a replay.
    await sock.send(replay, toB);
    await sock.send(replay, toB);
    await until(() => b.stats.rtcp.replayed === before.replayed + 1, "the replay");
    assert.ok(b.stats.rtcp.received >= before.received + 1);
  } finally {
    sock.close();
    await a.close();
    await b.close();
  }
});

const narrowBase = freeEvenPortBase(1);
Deno.test({
  name: "a sandbox that grants the RTP port but not RTCP's: the call runs without RTCP",
  permissions: { net: [`127.0.0.1:${narrowBase}`] },
  async fn() {
    const s = RtpSession.open({
      bindHost: "127.0.0.1",
      portBase: narrowBase,
      portTries: 1,
      rtcpIntervalMs: 20,
    });
    try {
      assert.equal(s.port, narrowBase);
      s.start({
        codec: "PCMU",
        payloadType: 0,
        remoteAddress: "127.0.0.1",
        remotePort: narrowBase,
        ptime: 20,
        remoteDirection: "sendrecv",
        localDirection: "sendrecv",
        hold: false,
      }, { onAudio: () => {}, onDtmf: () => {} });
      await sleep(100);
      assert.equal(s.stats.rtcp.sent, 0);
    } finally {
      await s.close();
    }
  },
});
