/**
 * The answering-machine beep detector on recordings the test makes: sox beeps at common
 * voicemail frequencies after espeak-ng greetings in several voices, with a little noise; human
 * openings and DTMF that must not read as beeps; blips too short; a tone that never ends.
 */

import assert from "node:assert/strict";
import { BeepDetector, type BeepDetectorOptions } from "../core/audio/beep_detect.ts";
import { dtmfTones } from "../core/audio/dtmf_tone.ts";
import { ulawDecode, ulawEncode } from "../core/audio/g711.ts";
import { concatInt16 } from "../core/audio/pcm.ts";
import { FlowcatError } from "../core/errors.ts";
import type { Beep } from "../mod.ts";
import { mixHiss, RATE, silence, voiceMaker } from "./_voice_audio.ts";

const dir = await Deno.makeTempDir({ dir: "/tmp", prefix: "flowcat-beep-" });
const { soxBeep, speak } = voiceMaker(dir);

function detect(pcm: Int16Array, chunk = 160, opts: BeepDetectorOptions = {}): Beep[] {
  const det = new BeepDetector({ sampleRate: RATE, ...opts });
  const beeps: Beep[] = [];
  for (let i = 0; i < pcm.length; i += chunk) {
    beeps.push(...det.process(pcm.subarray(i, i + chunk)));
  }
  beeps.push(...det.process(new Int16Array(RATE / 2))); // the line goes quiet after
  return beeps;
}

const ms = (samples: number) => (samples * 1000) / RATE;

const GREETINGS: [string, string, number][] = [
  ["Hi, you have reached Sam. Leave a message after the tone.", "en-us", 170],
  [
    "The person you are calling is not available. Please record your message at the tone. " +
    "When you are finished, hang up or press pound for more options.",
    "en-gb",
    150,
  ],
  ["Hello! Sorry I missed you, leave a message.", "en-gb-scotland", 190],
  ["You have reached the voicemail of extension four two one.", "en-us+f3", 160],
];
const BEEP_HZ = [440, 850, 1000, 1400, 2000];
const HUMAN: [string, string][] = [
  ["Hello?", "en-us"],
  ["Hi, this is John speaking.", "en-gb"],
  ["Yeah, hello, who is this?", "en-us+f3"],
  ["Good afternoon, Acme support, how can I help you?", "en-gb-scotland"],
  ["Hellooooo? Mmmmm, aaaaah.", "en-us"],
];

Deno.test("beep detector: greeting then a beep, every voice and beep frequency: the beep, on time", async () => {
  let right = 0;
  let total = 0;
  const lateness: number[] = [];
  for (const [text, voice, speed] of GREETINGS) {
    const greeting = await speak(text, voice, speed);
    for (const hz of BEEP_HZ) {
      const beep = await soxBeep(hz, 0.5);
      const lead = silence(300);
      const pcm = mixHiss(concatInt16([lead, greeting, silence(400), beep, silence(600)]));
      const start = ms(lead.length + greeting.length) + 400;
      const end = start + 500;
      // As recorded, and after a G.711 mu-law round trip (what a phone line delivers).
      for (const heard of [pcm, ulawDecode(ulawEncode(pcm))]) {
        const got = detect(heard);
        total++;
        const ok = got.length === 1 &&
          Math.abs(got[0].freqHz - hz) <= 12.5 &&
          Math.abs(got[0].startMs - start) <= 40 &&
          Math.abs(got[0].endMs - end) <= 40;
        if (ok) {
          right++;
          lateness.push(got[0].endMs - end);
        } else console.error(`missed: ${voice} ${hz} Hz -> ${JSON.stringify(got)}`);
      }
    }
  }
  const worst = Math.max(...lateness.map(Math.abs));
  console.log(`beeps: ${right}/${total} right; each reported within ${worst} ms of its end`);
  assert.equal(right, total);
});

Deno.test("beep detector: human openings, a whole greeting and DTMF are not beeps", async () => {
  for (const [text, voice] of HUMAN) {
    const pcm = mixHiss(await speak(text, voice));
    assert.deepEqual(detect(pcm), [], `${voice}: ${text}`);
    assert.deepEqual(detect(ulawDecode(ulawEncode(pcm))), [], `${voice}: ${text} (mu-law)`);
  }
  for (const [text, voice, speed] of GREETINGS) {
    assert.deepEqual(detect(await speak(text, voice, speed)), [], text);
  }
  const keys = dtmfTones("1590#*", { sampleRate: RATE, toneMs: 300, gapMs: 100 });
  assert.deepEqual(detect(keys), [], "DTMF has two tones");
});

Deno.test("beep detector: blips shorter than minBeepMs are ignored; quiet beeps too", async () => {
  for (const seconds of [0.04, 0.08]) {
    const pcm = concatInt16([silence(200), await soxBeep(1000, seconds), silence(200)]);
    assert.deepEqual(detect(pcm), [], `${seconds * 1000} ms`);
  }
  // -60 dBFS: under the default -40 dBFS floor.
  const quiet = concatInt16([silence(200), await soxBeep(1000, 0.5, 0.001), silence(200)]);
  assert.deepEqual(detect(quiet), []);
  assert.equal(detect(quiet, 160, { minLevelDbfs: -70 }).length, 1);
});

Deno.test("beep detector: the result does not depend on frame size; a tone that never ends is reported once", async () => {
  const beep = await soxBeep(1400, 0.3);
  const pcm = concatInt16([silence(250), beep, silence(300)]);
  const want = detect(pcm);
  assert.equal(want.length, 1);
  for (const chunk of [1, 37, 80, 999, pcm.length]) assert.deepEqual(detect(pcm, chunk), want);
  const det = new BeepDetector({ maxBeepMs: 1000 });
  const long = await soxBeep(425, 4);
  const seen = [...det.process(long.subarray(0, RATE * 2))];
  assert.equal(seen.length, 1);
  assert.equal(seen[0].endMs - seen[0].startMs, 1000);
  assert.equal(det.inBeep, false);
  seen.push(...det.process(long.subarray(RATE * 2)), ...det.process(silence(200)));
  assert.equal(seen.length, 1, "reported once");
});

Deno.test("beep detector: inBeep while the tone lasts; bad options are config errors", async () => {
  const det = new BeepDetector();
  det.process(silence(100));
  assert.equal(det.inBeep, false);
  det.process(await soxBeep(1000, 0.3));
  assert.equal(det.inBeep, true);
  assert.equal(det.process(silence(40)).length, 1);
  assert.equal(det.inBeep, false);
  for (
    const bad of [
      { sampleRate: 4000 },
      { minHz: 500, maxHz: 400 },
      { maxHz: 4000 },
      { minBeepMs: 10 },
      { minBeepMs: 500, maxBeepMs: 200 },
    ]
  ) {
    assert.throws(() => new BeepDetector(bad), FlowcatError, JSON.stringify(bad));
  }
});

globalThis.addEventListener("unload", () => Deno.removeSync(dir, { recursive: true }));
