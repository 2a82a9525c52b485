/**
 * Test audio made by real tools at 8 kHz: espeak-ng speech, sox beeps, and a phone line's hiss
 * (for the beep and answering-machine detector tests).
 */
import assert from "node:assert/strict";
import { decodeWav } from "../core/audio/wav.ts";

/** The rate everything here is made at. */
export const RATE = 8000;

/** Run `cmd args`; throws with its stderr when it fails. */
export async function run(cmd: string, args: string[]): Promise<void> {
  const r = await new Deno.Command(cmd, { args, stdout: "null", stderr: "piped" }).output();
  if (!r.success) throw new Error(`${cmd} failed: ${new TextDecoder().decode(r.stderr)}`);
}

/** The 8 kHz mono PCM of the WAV file `path`. */
export async function read8k(path: string): Promise<Int16Array> {
  const wav = decodeWav(await Deno.readFile(path));
  assert.equal(wav.sampleRate, RATE);
  return wav.pcm;
}

/** Makers of sox beeps and espeak-ng speech, writing their files under `dir`. */
export function voiceMaker(dir: string): {
  soxBeep(freq: number, seconds: number, vol?: number): Promise<Int16Array>;
  speak(text: string, voice: string, speed?: number): Promise<Int16Array>;
} {
  let seq = 0;
  return {
    /** A sox sine of `freq` Hz for `seconds`, at `vol` of full scale. */
    async soxBeep(freq, seconds, vol = 0.4) {
      const out = `${dir}/beep-${++seq}.wav`;
      const args = ["-n", "-r", "8000", "-b", "16", "-c", "1", out, "synth", String(seconds)];
      await run("sox", [...args, "sine", String(freq), "vol", String(vol)]);
      return read8k(out);
    },
    /** espeak-ng saying `text` in `voice` (22.05 kHz), converted to 8 kHz by sox. */
    async speak(text, voice, speed = 160) {
      const raw = `${dir}/speech-${++seq}.wav`;
      const out = `${dir}/speech8k-${seq}.wav`;
      await run("espeak-ng", ["-v", voice, "-s", String(speed), "-w", raw, text]);
      await run("sox", [raw, "-r", "8000", "-b", "16", "-c", "1", out]);
      return read8k(out);
    },
  };
}

/** Low white noise (a phone line's hiss), seeded. */
export function hiss(samples: number, amp = 60, seed = 7): Int16Array {
  const out = new Int16Array(samples);
  let s = seed;
  for (let i = 0; i < samples; i++) {
    s = (s * 1103515245 + 12345) >>> 0;
    out[i] = Math.round(((s / 0xffffffff) * 2 - 1) * amp);
  }
  return out;
}

/** `pcm` with {@link hiss} added. */
export function mixHiss(pcm: Int16Array): Int16Array {
  const n = hiss(pcm.length);
  return pcm.map((v, i) => Math.max(-32768, Math.min(32767, v + n[i])));
}

/** `ms` of silence. */
export const silence = (ms: number): Int16Array => new Int16Array((RATE * ms) / 1000);
