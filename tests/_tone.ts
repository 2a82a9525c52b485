/**
 * A test tone at 8 kHz and a detector for it, to tell an echoed caller turn from any other
 * audio a call plays (the greeting chime).
 */

/** The tone's frequency. */
export const TONE_HZ = 400;

/** `samples` of the test tone at 8 kHz. */
export function tone8k(samples: number): Int16Array {
  const pcm = new Int16Array(samples);
  for (let i = 0; i < samples; i++) {
    pcm[i] = Math.round(8000 * Math.sin((2 * Math.PI * TONE_HZ * i) / 8000));
  }
  return pcm;
}

/** How many 20 ms windows of 8 kHz `pcm` are loud and mostly a tone of `hz` (the test tone's). */
export function toneWindows(pcm: Int16Array, hz: number = TONE_HZ): number {
  return toneWindowFlags(pcm, hz).filter((on) => on).length;
}

/** Per 20 ms window of 8 kHz `pcm`: whether it is loud and mostly a tone of `hz`. */
export function toneWindowFlags(pcm: Int16Array, hz: number = TONE_HZ): boolean[] {
  const flags: boolean[] = [];
  for (let off = 0; off + 160 <= pcm.length; off += 160) {
    let s = 0, c = 0, e = 0;
    for (let i = 0; i < 160; i++) {
      const x = pcm[off + i];
      const w = (2 * Math.PI * hz * i) / 8000;
      s += x * Math.sin(w);
      c += x * Math.cos(w);
      e += x * x;
    }
    // A pure tone puts all its energy in the (sin, cos) pair: share 1; other audio much less.
    const share = (s * s + c * c) / (80 * e || 1);
    flags.push(e / 160 > 500 ** 2 && share > 0.8);
  }
  return flags;
}
