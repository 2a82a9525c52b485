/**
 * Outbound RTP timing measured on the wire: a UDP socket in the test captures what an
 * RtpSession sends. Idle for 10 s: one packet every 20 ms (mean 20 ± 1 ms) and a timestamp
 * step of 160 per packet. Speaking, with audio handed over in bursts: the same cadence, the
 * voice in order, and a barge-in clear drops what was queued.
 */

import assert from "node:assert/strict";
import { decodeRtp } from "../core/rtp.ts";
import { RtpSession } from "../telephony/sip/rtp_session.ts";
import { freeEvenPortBase, sine8k } from "./_sipp.ts";

interface Captured {
  at: number;
  seq: number;
  ts: number;
  silent: boolean;
}

/** Capture RTP on a socket for `ms`, while `during` runs. */
async function capture(ms: number, during: (port: number) => Promise<RtpSession>) {
  const conn = Deno.listenDatagram({ transport: "udp", hostname: "127.0.0.1", port: 0 });
  const got: Captured[] = [];
  const loop = (async () => {
    const buf = new Uint8Array(2048);
    try {
      for (;;) {
        const [bytes] = await conn.receive(buf);
        const p = decodeRtp(bytes)!;
        got.push({
          at: performance.now(),
          seq: p.sequence,
          ts: p.timestamp,
          silent: p.payload.every((b) => b === 0xff),
        });
      }
    } catch {
      // closed
    }
  })();
  const session = await during((conn.addr as Deno.NetAddr).port);
  await new Promise((r) => setTimeout(r, ms));
  await session.close();
  conn.close();
  await loop;
  return got;
}

function start(port: number): RtpSession {
  const s = RtpSession.open({ bindHost: "127.0.0.1", portBase: freeEvenPortBase(1), portTries: 1 });
  s.start({
    codec: "PCMU",
    payloadType: 0,
    remoteAddress: "127.0.0.1",
    remotePort: port,
    ptime: 20,
    remoteDirection: "sendrecv",
    localDirection: "sendrecv",
    hold: false,
  }, { onAudio: () => {}, onDtmf: () => {} });
  return s;
}

/** Mean interval (ms) and the set of timestamp and sequence steps. */
function cadence(got: Captured[]) {
  const mean = (got.at(-1)!.at - got[0].at) / (got.length - 1);
  const tsSteps = new Set<number>();
  const seqSteps = new Set<number>();
  for (let i = 1; i < got.length; i++) {
    tsSteps.add((got[i].ts - got[i - 1].ts) >>> 0);
    seqSteps.add((got[i].seq - got[i - 1].seq) & 0xffff);
  }
  return { mean, tsSteps: [...tsSteps], seqSteps: [...seqSteps] };
}

Deno.test("idle for 10 s: a silence packet every 20 ms, timestamps 160 apart", async () => {
  const got = await capture(10_000, (port) => Promise.resolve(start(port)));
  assert.ok(got.length >= 480, `only ${got.length} packets in 10 s`);
  const c = cadence(got);
  assert.ok(Math.abs(c.mean - 20) <= 1, `mean interval ${c.mean.toFixed(2)} ms`);
  assert.deepEqual(c.tsSteps, [160]);
  assert.deepEqual(c.seqSteps, [1]);
  assert.ok(got.every((p) => p.silent));
});

Deno.test("speaking in bursts: still one packet per 20 ms, voice in order, timestamps 160 apart", async () => {
  const tone = sine8k(8000 * 2, 440); // 2 s of voice
  const got = await capture(3000, async (port) => {
    const s = start(port);
    // 100 ms handed over every 100 ms, then a whole second at once: the clock spaces them.
    for (let off = 0; off < 8000; off += 800) {
      s.sendPcm8k(tone.subarray(off, off + 800));
      await new Promise((r) => setTimeout(r, 100));
    }
    s.sendPcm8k(tone.subarray(8000));
    return s;
  });
  const c = cadence(got);
  assert.ok(Math.abs(c.mean - 20) <= 1, `mean interval ${c.mean.toFixed(2)} ms`);
  assert.deepEqual(c.tsSteps, [160]);
  const voice = got.filter((p) => !p.silent);
  assert.ok(voice.length >= 99, `${voice.length} voice packets of 100`);
  const gaps = voice.slice(1).map((p, i) => p.at - voice[i].at);
  assert.ok(Math.max(...gaps) < 40, `largest gap between voice packets ${Math.max(...gaps)} ms`);
});

Deno.test("barge-in: clearOutbound drops the queued voice, silence follows at once", async () => {
  const got = await capture(400, (port) => {
    const s = start(port);
    s.sendPcm8k(sine8k(8000, 440)); // a second queued
    setTimeout(() => s.clearOutbound(), 100);
    return Promise.resolve(s);
  });
  const voice = got.filter((p) => !p.silent).length;
  assert.ok(voice >= 3 && voice <= 8, `${voice} voice packets went out before the clear`);
  assert.ok(got.at(-1)!.silent);
});
