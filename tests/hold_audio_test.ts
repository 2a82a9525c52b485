/**
 * The hold audio file of warm transfers: read once, its first channel resampled to 8 kHz, and
 * a file that is missing or not a WAV refused with the config field named.
 */

import assert from "node:assert/strict";
import { encodeWav } from "../core/audio/wav.ts";
import { readHoldAudio } from "../server/hold_audio.ts";
import { sine8k } from "./_sipp.ts";
import { toneWindows } from "./_tone.ts";

Deno.test("hold audio: a 16 kHz stereo WAV becomes 8 kHz mono of its first channel", async () => {
  const dir = await Deno.makeTempDir({ dir: ".tmp" });
  try {
    // 1 s at 16 kHz: the left channel an 800 Hz tone, the right one silent.
    const left = sine8k(16000, 400); // 400 Hz at 8 kHz rate is 800 Hz at 16 kHz
    const stereo = new Int16Array(32000);
    for (let i = 0; i < 16000; i++) stereo[2 * i] = left[i];
    await Deno.writeFile(`${dir}/hold.wav`, encodeWav(stereo, 16000, 2));
    const pcm = await readHoldAudio(`${dir}/hold.wav`);
    assert.ok(Math.abs(pcm.length - 8000) <= 160, `${pcm.length} samples`);
    assert.ok(toneWindows(pcm, 800) >= 45, "the left channel's tone, at 8 kHz");

    await Deno.writeTextFile(`${dir}/hold.txt`, "not audio");
    await assert.rejects(
      () => readHoldAudio(`${dir}/hold.txt`),
      /telephony\.sip\.transfer\.hold_audio_file: .*hold\.txt: not a 16-bit PCM WAV file/,
    );
    await assert.rejects(
      () => readHoldAudio(`${dir}/nope.wav`),
      /telephony\.sip\.transfer\.hold_audio_file: .*nope\.wav: cannot read it/,
    );
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});
