import assert from "node:assert/strict";
import { EchoEvidence } from "../core/audio/aec_evidence.ts";
import { aecCases, cancelInFrames, vadStarts } from "../bench/aec_set.ts";

/** Run `mic` and `ref` through a canceller in 20 ms frames; the output aligned to the input. */
const cancel = (mic: Int16Array, ref: Int16Array, rate: number) =>
  cancelInFrames(mic, ref, rate).out;

const SILENT = 64_000, LOUD = 1e6, TALK = 64 * 1e6;

Deno.test("echo evidence: a silent microphone over the echo span after loud reference means no echo", () => {
  const ev = new EchoEvidence(64, 8000, 300); // an echo begins within 300 ms: 41 blocks
  for (let i = 0; i < 42; i++) ev.update(0, 0, LOUD, true, SILENT);
  const v = ev.update(TALK, TALK, LOUD, true, SILENT);
  assert.equal(v.unexplained, true, "the first word after the silent span is the caller's");
  assert.equal(v.explained, false);
});

Deno.test("echo evidence: before the echo span has passed, an unexplained microphone is not yet the caller", () => {
  const ev = new EchoEvidence(64, 8000, 300);
  for (let i = 0; i < 20; i++) ev.update(0, 0, LOUD, true, SILENT);
  // The echo may just be arriving: 0.4 s of microphone the filter explains none of are needed.
  for (let i = 0; i < 49; i++) {
    assert.equal(ev.update(TALK, TALK, LOUD, true, SILENT).unexplained, false);
  }
  assert.equal(ev.update(TALK, TALK, LOUD, true, SILENT).unexplained, true);
});

Deno.test("echo evidence: a filter removing part of the microphone says echo, and clears 'no echo'", () => {
  const ev = new EchoEvidence(64, 8000, 300);
  for (let i = 0; i < 42; i++) ev.update(0, 0, LOUD, true, SILENT);
  let v = ev.update(TALK, TALK / 4, LOUD, true, SILENT);
  for (let i = 0; i < 10; i++) v = ev.update(TALK, TALK / 4, LOUD, true, SILENT);
  assert.equal(v.explained, true);
  assert.equal(v.unexplained, false);
  ev.reset();
  assert.equal(ev.update(TALK, TALK, LOUD, true, SILENT).unexplained, false, "reset forgets");
});

// The caller talks 0.5 s into the agent's speech, before the canceller has converged.
const noEcho = await aecCases(8000, [40, 300], { paths: ["room"], talkAtSecs: 0.5, noEcho: true });
const withEcho = await aecCases(8000, [40, 300], { paths: ["room", "handset"], talkAtSecs: 0.5 });

Deno.test({
  name: "echo canceller: a caller over the greeting on a leg with no echo is heard at once",
  ignore: noEcho === undefined,
  fn() {
    for (const c of noEcho!) {
      const out = cancel(c.micTalk, c.ref, c.rate), onset = c.talkStart / c.rate;
      const raw = vadStarts(c.micTalk, c.rate)[0], heard = vadStarts(out, c.rate)[0];
      assert.ok(heard !== undefined && heard >= onset, `${c.name}: barge-in not heard`);
      assert.ok(
        heard - raw <= 0.05,
        `${c.name}: heard ${(heard - raw).toFixed(2)} s later than raw`,
      );
    }
  },
});

Deno.test({
  name:
    "echo canceller: over the greeting, a caller louder than the agent is heard through the echo",
  ignore: withEcho === undefined,
  fn() {
    for (const c of withEcho!) {
      // The caller 8 dB up from the set's level: 4 dB above the agent's voice.
      const mic = c.micTalk.map((v, i) => c.micEcho[i] + 2.5 * (v - c.micEcho[i]));
      const onset = c.talkStart / c.rate;
      const starts = vadStarts(cancel(mic, c.ref, c.rate), c.rate);
      assert.ok(starts.every((t) => t >= onset), `${c.name}: VAD start on the echo`);
      assert.ok(starts.length > 0 && starts[0] - onset <= 0.5, `${c.name}: barge-in missed`);
      assert.equal(vadStarts(cancel(c.micEcho, c.ref, c.rate), c.rate).length, 0, c.name);
    }
  },
});

Deno.test("echo canceller: a caller louder than the agent keeps their level from the first frame", () => {
  // The echo model's greeting chime (660 and 880 Hz, 0.4 s) and a caller's 400 Hz tone over
  // it, on a leg with no echo: the canceller must not eat the tone's onset.
  const rate = 8000,
    len = 2 * rate,
    chime = new Int16Array(len),
    sine = (hz: number, i: number) => Math.sin((2 * Math.PI * hz * i) / rate);
  for (let i = 0; i < 3200; i++) chime[i] = Math.round(6000 * sine(i < 1600 ? 660 : 880, i));
  // (A tone that starts with the chime itself, before any evidence, still loses up to 4 dB in a
  // frame or two mid-chime to the young filter's estimate.)
  for (const startMs of [100, 200, 300, 400, 600]) {
    const mic = new Int16Array(len), s0 = startMs * 8;
    for (let i = 0; i < rate; i++) mic[s0 + i] = Math.round(8000 * sine(400, i));
    const out = cancelInFrames(mic, chime, rate).out;
    for (let f = 0; f < 50; f++) {
      const at = s0 + f * 160;
      const db = 10 *
        Math.log10(energy(out.subarray(at, at + 160)) / energy(mic.subarray(at, at + 160)));
      assert.ok(db > -2, `tone from ${startMs} ms, frame ${f}: ${db.toFixed(1)} dB`);
    }
  }
});

function energy(x: Int16Array): number {
  let e = 0;
  for (const v of x) e += v * v;
  return e;
}
