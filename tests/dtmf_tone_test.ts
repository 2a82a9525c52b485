import assert from "node:assert/strict";
import { toneAmplitude } from "./_audio_helpers.ts";
import { dtmfTones } from "../core/audio/dtmf_tone.ts";
import { DTMF_FREQS, DTMF_KEYS, isKeypadEntry, parseDtmfKeys } from "../core/audio/dtmf_keys.ts";
import { FlowcatError } from "../core/errors.ts";

Deno.test("dtmf tone: keypad frequencies follow ITU-T Q.23", () => {
  assert.deepEqual(DTMF_FREQS["1"], [697, 1209]);
  assert.deepEqual(DTMF_FREQS["5"], [770, 1336]);
  assert.deepEqual(DTMF_FREQS["9"], [852, 1477]);
  assert.deepEqual(DTMF_FREQS["#"], [941, 1477]);
  assert.deepEqual(DTMF_FREQS["0"], [941, 1336]);
  assert.deepEqual(DTMF_FREQS["D"], [941, 1633]);
  assert.equal(DTMF_KEYS.length, 16);
});

Deno.test("dtmf tone: layout is lead, then tone + gap per key", () => {
  const pcm = dtmfTones("12", { sampleRate: 8000, toneMs: 50, gapMs: 30, leadMs: 10 });
  assert.equal(pcm.length, 80 + 2 * (400 + 240));
  assert.ok(pcm.subarray(0, 80).every((v) => v === 0));
  assert.ok(pcm.subarray(80 + 400, 80 + 640).every((v) => v === 0));
  assert.ok(pcm.subarray(80 + 640 + 400).every((v) => v === 0));
  assert.ok(pcm.subarray(80, 80 + 400).some((v) => Math.abs(v) > 10000));
});

Deno.test("dtmf tone: each burst holds exactly its two frequencies at the set levels", () => {
  for (const rate of [8000, 16000]) {
    for (const key of DTMF_KEYS) {
      const pcm = dtmfTones(key, {
        sampleRate: rate,
        toneMs: 100,
        gapMs: 0,
        amplitude: 6000,
        twistDb: 2,
      });
      const [lo, hi] = DTMF_FREQS[key];
      assert.ok(Math.abs(toneAmplitude(pcm, lo, rate) - 6000) < 120, `${key} low`);
      assert.ok(Math.abs(toneAmplitude(pcm, hi, rate) - 6000 * 10 ** 0.1) < 120, `${key} high`);
      for (const other of [697, 770, 852, 941, 1209, 1336, 1477, 1633]) {
        if (other !== lo && other !== hi) {
          assert.ok(toneAmplitude(pcm, other, rate) < 900, `${key} ${other}`);
        }
      }
    }
  }
});

Deno.test("dtmf tone: key parsing accepts lower-case letters and rejects others", () => {
  assert.deepEqual(parseDtmfKeys("1a*#d"), ["1", "A", "*", "#", "D"]);
  assert.deepEqual(parseDtmfKeys(["b", "0"]), ["B", "0"]);
  assert.ok(isKeypadEntry("C") && !isKeypadEntry("c") && !isKeypadEntry("12"));
  assert.throws(() => parseDtmfKeys("12x"), FlowcatError);
  assert.throws(() => dtmfTones("E"), FlowcatError);
  assert.throws(() => dtmfTones("1", { amplitude: 20000 }), FlowcatError);
  assert.equal(dtmfTones("").length, 0);
});
