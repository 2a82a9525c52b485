/**
 * The outbound RTP pacer on a fake clock: one packet per 20 ms tick whether voice is queued or
 * not, voice before silence, timestamps kept on the clock through late ticks and stalls, the
 * queue cleared on barge-in, and a fresh schedule after RFC 4733 events.
 */

import assert from "node:assert/strict";
import { RtpPacer } from "../telephony/sip/rtp_pacer.ts";

/** A pacer whose sink records `v<n>` for voice, `s` for silence and `skip<n>` for skips. */
function harness(idleSilence = true) {
  const log: string[] = [];
  const silence = new Uint8Array(160).fill(0xff);
  const pacer = new RtpPacer({
    send: (p) => log.push(p === silence ? "s" : `v${p[0]}`),
    skip: (n) => log.push(`skip${n}`),
    silence: idleSilence ? silence : undefined,
  });
  const voice = (n: number) => pacer.push((slot) => slot.fill(n));
  return { pacer, log, voice };
}

Deno.test("one packet per tick: silence while idle, queued voice first, in order", () => {
  const { pacer, log, voice } = harness();
  pacer.tick(1000);
  pacer.tick(1020);
  voice(1);
  voice(2);
  pacer.tick(1040);
  pacer.tick(1060);
  pacer.tick(1080);
  assert.deepEqual(log, ["s", "s", "v1", "v2", "s"]);
  assert.deepEqual(pacer.stats, { voice: 2, silence: 3, skipped: 0, cleared: 0 });
});

Deno.test("ticks a little early or late still owe exactly one packet each", () => {
  const { pacer, log } = harness();
  for (const t of [0, 19, 41, 58, 83, 99, 121]) pacer.tick(t);
  assert.equal(log.length, 7);
});

Deno.test("a late tick catches up (up to 3 packets); a stall is skipped in the timestamps", () => {
  const { pacer, log, voice } = harness();
  pacer.tick(0);
  pacer.tick(60); // two periods late: 3 owed, all sent
  assert.deepEqual(log, ["s", "s", "s", "s"]);
  log.length = 0;
  voice(7);
  pacer.tick(400); // 17 owed: 16 skipped (time passes), the voice goes now, not dropped
  assert.deepEqual(log, ["skip16", "v7"]);
  assert.equal(pacer.stats.skipped, 16);
});

Deno.test("without idle silence the timestamps still advance, one packet's time per tick", () => {
  const { pacer, log, voice } = harness(false);
  pacer.tick(0);
  pacer.tick(20);
  voice(3);
  pacer.tick(40);
  assert.deepEqual(log, ["skip1", "skip1", "v3"]);
});

Deno.test("clear() drops queued voice (barge-in); resync() starts a new schedule", () => {
  const { pacer, log, voice } = harness();
  for (let i = 1; i <= 5; i++) voice(i);
  pacer.tick(0);
  pacer.clear();
  pacer.tick(20);
  assert.deepEqual(log, ["v1", "s"]);
  assert.equal(pacer.stats.cleared, 4);
  assert.equal(pacer.queued, 0);
  log.length = 0;
  pacer.resync();
  pacer.tick(500); // no burst for the time the events took: they carried their own timestamps
  assert.deepEqual(log, ["s"]);
});

Deno.test("the payload ring grows and keeps order across wrap-around", () => {
  const { pacer, log, voice } = harness();
  let t = 0;
  for (let round = 0; round < 3; round++) {
    for (let i = 0; i < 10; i++) voice(round * 10 + i);
    for (let i = 0; i < 10; i++) pacer.tick(t += 20);
  }
  assert.deepEqual(log, Array.from({ length: 30 }, (_, i) => `v${i}`));
});
