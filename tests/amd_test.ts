/**
 * Answering-machine detection on recordings the test makes: espeak-ng voicemail greetings of
 * different lengths, voices and speeds, followed by a sox beep at common frequencies (or no beep),
 * against human openings ("Hello?") followed by the silence of someone waiting. Reports the
 * accuracy over the set and the decision times; checks that "leave a message after the beep" is
 * told to speak at the beep's end.
 */

import assert from "node:assert/strict";
import { type AmdEvent, AnsweringMachineDetector } from "../core/audio/amd.ts";
import { concatInt16 } from "../core/audio/pcm.ts";
import { FlowcatError } from "../core/errors.ts";
import { mixHiss, RATE, silence, voiceMaker } from "./_voice_audio.ts";

const dir = await Deno.makeTempDir({ dir: "/tmp", prefix: "flowcat-amd-" });
const { soxBeep, speak } = voiceMaker(dir);
const ms = (samples: number) => (samples * 1000) / RATE;

/** Feed `pcm` in 20 ms frames, as a call does; every event with the time it was fed. */
function feed(pcm: Int16Array): AmdEvent[] {
  const amd = new AnsweringMachineDetector({ sampleRate: RATE });
  const out: AmdEvent[] = [];
  for (let i = 0; i < pcm.length; i += 160) out.push(...amd.process(pcm.subarray(i, i + 160)));
  return out;
}

const VOICES: [string, number][] = [["en-us", 160], ["en-gb", 175], ["en-us+f3", 150], [
  "en-gb-scotland",
  190,
]];
const GREETINGS = [
  "Please leave a message after the tone.",
  "Hi, you have reached Sam. Leave a message after the tone.",
  "Hello! Sorry I missed you, leave a message and I will call you back.",
  "You have reached the voicemail of extension four two one.",
  "The person you are calling is not available. Please record your message at the tone. " +
  "When you are finished, hang up or press pound for more options.",
];
const BEEP_HZ = [440, 850, 1000, 1400, 2000];
const HUMAN = [
  "Hello?",
  "Hi, this is John.",
  "Yes?",
  "Hello, who is this?",
  "Hey.",
  "Good morning.",
  "Hello, Mary speaking.",
];

interface Case {
  name: string;
  machine: boolean;
  pcm: Int16Array;
  /** For a machine with a beep: when the beep ends, ms. */
  beepEndMs?: number;
}

async function makeSet(): Promise<Case[]> {
  const cases: Case[] = [];
  let k = 0;
  for (const text of GREETINGS) {
    for (const [voice, speed] of VOICES) {
      const lead = silence(300 + (k % 4) * 200);
      const greeting = await speak(text, voice, speed);
      const gap = silence(200 + (k % 3) * 200);
      const parts = [lead, greeting, gap];
      let beepEndMs: number | undefined;
      // Every fifth greeting ends without a beep (some mailboxes have none).
      if (k % 5 !== 4) {
        const beep = await soxBeep(BEEP_HZ[k % BEEP_HZ.length], 0.3 + (k % 3) * 0.2);
        parts.push(beep);
        beepEndMs = ms(lead.length + greeting.length + gap.length + beep.length);
      }
      parts.push(silence(4000));
      cases.push({
        name: `machine ${voice}: ${text.slice(0, 30)}...`,
        machine: true,
        pcm: mixHiss(concatInt16(parts)),
        ...(beepEndMs !== undefined ? { beepEndMs } : {}),
      });
      k++;
    }
  }
  for (const text of HUMAN) {
    for (const [voice, speed] of VOICES.slice(0, 3)) {
      const lead = silence(200 + (k % 4) * 250);
      const pcm = concatInt16([lead, await speak(text, voice, speed), silence(3000)]);
      cases.push({ name: `human ${voice}: ${text}`, machine: false, pcm: mixHiss(pcm) });
      k++;
    }
  }
  return cases;
}

Deno.test("amd: human vs machine over espeak-ng greetings and sox beeps: >= 95% right, timely", async () => {
  const cases = await makeSet();
  let right = 0;
  const wrong: string[] = [];
  const times: Record<"human" | "machine", number[]> = { human: [], machine: [] };
  for (const c of cases) {
    const events = feed(c.pcm);
    const decision = events.find((e) => e.type === "decision");
    assert.ok(decision?.type === "decision", `${c.name}: no decision`);
    const said = decision.verdict === "machine";
    if (said === c.machine) {
      right++;
      times[decision.verdict].push(decision.atMs);
    } else wrong.push(`${c.name} -> ${decision.verdict} (${decision.reason})`);
    if (c.machine && said && c.beepEndMs !== undefined) {
      // Leave the message at the beep's end, to a block.
      const ready = events.find((e) => e.type === "ready");
      assert.ok(ready?.type === "ready", `${c.name}: no ready`);
      assert.equal(ready.reason, "beep", c.name);
      assert.ok(Math.abs(ready.atMs - c.beepEndMs) <= 40, `${c.name}: ready at ${ready.atMs}`);
    }
  }
  const accuracy = right / cases.length;
  const stat = (xs: number[]) =>
    xs.length === 0
      ? "-"
      : `mean ${Math.round(xs.reduce((a, b) => a + b, 0) / xs.length)} ms, max ${
        Math.max(...xs)
      } ms`;
  console.log(
    `amd: ${right}/${cases.length} right (${(accuracy * 100).toFixed(1)}%); decision after ` +
      `the answer: human ${stat(times.human)}, machine ${stat(times.machine)}`,
  );
  assert.ok(accuracy >= 0.95, `accuracy ${accuracy}: ${wrong.join("; ")}`);
  assert.ok(Math.max(...times.human) <= 4000, "humans decided within 4 s");
  assert.ok(Math.max(...times.machine) <= 4000, "machines decided within 4 s");
});

Deno.test("amd: a greeting without a beep is ready once it has been quiet; silence is a machine", () => {
  // 3 s of loud noise as the "greeting" (no tone), then quiet.
  const noise = new Int16Array(3 * RATE).map((_, i) => (i * 7919) % 8000 - 4000);
  const events = feed(concatInt16([silence(500), noise, silence(4000)]));
  assert.deepEqual(
    events.map((e) => e.type === "decision" ? `${e.verdict}:${e.reason}` : `ready:${e.reason}`),
    ["machine:long_greeting", "ready:silence"],
  );
  const ready = events[1];
  assert.equal(ready.atMs, 500 + 3000 + 3000);
  const quiet = feed(silence(5000));
  // A silent line: a machine at 3.5 s, and nothing to wait for after that.
  assert.deepEqual(quiet.map((e) => `${e.type}:${e.reason}@${e.atMs}`), [
    "decision:silence@3500",
    "ready:silence@3520",
  ]);
  assert.throws(() => new AnsweringMachineDetector({ maxHumanMs: 0 }), FlowcatError);
});
