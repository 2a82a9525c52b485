/** Test helpers for audio: measuring what a signal contains. */

/** Amplitude of the component at `freq` over `pcm` (a single-bin DFT). */
export function toneAmplitude(pcm: Int16Array, freq: number, rate: number): number {
  let re = 0;
  let im = 0;
  const w = (2 * Math.PI * freq) / rate;
  for (let n = 0; n < pcm.length; n++) {
    re += pcm[n] * Math.cos(w * n);
    im -= pcm[n] * Math.sin(w * n);
  }
  return (2 * Math.hypot(re, im)) / pcm.length;
}
