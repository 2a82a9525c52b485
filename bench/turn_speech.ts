/**
 * Caller speech for the turn-taking bench and tests, made with the espeak-ng command at run time
 * (nothing large is committed): each utterance is spoken piece by piece, every piece trimmed of
 * espeak's own leading and trailing silence, resampled to 8 kHz (the carrier's rate), and joined
 * with exact silences, so a "500 ms pause" is 500 ms of silence between the last and first
 * voiced samples of its neighbours. What each piece says and where its voice ends is kept, for a
 * transcriber double that hears exactly the pieces whose audio it was given.
 *
 * {@link PAUSED_UTTERANCES} is the premature-turn test set: sentences with one pause of 300 to
 * 700 ms inside them, at places where a listener knows the caller is not done (and some where
 * the words so far could pass for a sentence).
 *
 * @example
 * ```ts
 * const u = await speakUtterance({ pieces: ["I would like to book a table", "for two."], pausesMs: [500] });
 * u.pcm; // 8 kHz mono; u.pieces[0].endSample: where "table" ends
 * ```
 * @module
 */

import { Resampler } from "../core/audio/resample.ts";
import { decodeWav } from "../core/audio/wav.ts";

/** The carrier rate the utterances are made at. */
export const SPEECH_RATE = 8000;

/** An utterance to speak: its pieces, and the silence after each piece but the last. */
export interface UtteranceScript {
  pieces: string[];
  pausesMs: number[];
}

/** A spoken utterance: 8 kHz PCM, and where each piece's voice ends in it. */
export interface SpokenUtterance {
  pcm: Int16Array;
  pieces: { text: string; endSample: number }[];
  /** The script it was made from. */
  script: UtteranceScript;
}

/**
 * The premature-turn set: each sentence is broken where a pause is natural but the sentence is
 * not over; the transcript of the first part has no final punctuation (a transcriber punctuates
 * the whole utterance, not a fragment of it), the last part ends the sentence. Pauses cycle
 * through 300, 400, 500, 600 and 700 ms.
 */
export const PAUSED_SENTENCES: readonly [string, string][] = [
  ["I would like to book a table", "for two people tonight."],
  ["My account number is", "four five six seven."],
  ["Can you tell me the", "opening hours on Sunday?"],
  ["I want to change my", "delivery address, please."],
  ["The problem started", "after the last update."],
  ["We are flying to Paris", "on the twelfth of May."],
  ["I was wondering whether", "you have any rooms left."],
  ["Could you send me", "the invoice by email?"],
  ["It is about my order", "from last week."],
  ["Please cancel", "my appointment for tomorrow."],
  ["I think", "the bill is wrong."],
  ["My name is John", "and I need some help."],
];

/** Pauses of the set, cycled over its sentences. */
export const PAUSES_MS: readonly number[] = [300, 400, 500, 600, 700];

/**
 * {@link PAUSED_SENTENCES} as scripts, `rounds` times over, the pause moving on by one each
 * sentence (so every sentence meets several pause lengths).
 */
export function pausedScripts(rounds = 1): UtteranceScript[] {
  const out: UtteranceScript[] = [];
  let i = 0;
  for (let r = 0; r < rounds; r++) {
    for (const s of PAUSED_SENTENCES) {
      out.push({ pieces: [...s], pausesMs: [PAUSES_MS[i++ % PAUSES_MS.length]] });
    }
  }
  return out;
}

/** Sentences spoken without a pause: questions and statements a caller ends a turn with. */
export const WHOLE_SENTENCES: readonly string[] = [
  "Can you book me a table for two tonight?",
  "I need to change my delivery address.",
  "What time do you open on Sunday?",
  "My order has not arrived yet.",
  "Is there a room available next weekend?",
  "Please send the invoice to my email.",
];

/** One piece of text spoken by espeak-ng, trimmed, at {@link SPEECH_RATE}. */
export async function espeak(text: string, voice = "en-us"): Promise<Int16Array> {
  const out = await new Deno.Command("espeak-ng", {
    args: ["-v", voice, "--stdout", text],
    stdout: "piped",
    stderr: "piped",
  }).output();
  if (!out.success) {
    throw new Error(`espeak-ng failed: ${new TextDecoder().decode(out.stderr).trim()}`);
  }
  const wav = decodeWav(fixStreamedWav(out.stdout));
  const pcm = new Resampler(wav.sampleRate, SPEECH_RATE).process(wav.pcm).slice();
  return trimSilence(pcm);
}

/**
 * espeak-ng writing to a pipe cannot seek back to fill in the WAV sizes; set them from the byte
 * count so the decoder reads every sample.
 */
function fixStreamedWav(bytes: Uint8Array): Uint8Array {
  const copy = bytes.slice();
  const view = new DataView(copy.buffer);
  view.setUint32(4, copy.length - 8, true);
  // The data chunk follows the 16-byte fmt chunk in espeak's header.
  if (new TextDecoder().decode(copy.subarray(36, 40)) === "data") {
    view.setUint32(40, copy.length - 44, true);
  }
  return copy;
}

/** `pcm` without the silence before its first and after its last voiced sample. */
export function trimSilence(pcm: Int16Array, threshold = 200): Int16Array {
  let a = 0;
  while (a < pcm.length && Math.abs(pcm[a]) < threshold) a++;
  let b = pcm.length;
  while (b > a && Math.abs(pcm[b - 1]) < threshold) b--;
  return pcm.subarray(a, b);
}

/** Speak `script`: its pieces joined by exact silences. */
export async function speakUtterance(script: UtteranceScript): Promise<SpokenUtterance> {
  const parts = await Promise.all(script.pieces.map((p) => espeak(p)));
  const gaps = script.pausesMs.map((ms) => Math.round((ms * SPEECH_RATE) / 1000));
  const total = parts.reduce((n, p) => n + p.length, 0) + gaps.reduce((n, g) => n + g, 0);
  const pcm = new Int16Array(total);
  const pieces: SpokenUtterance["pieces"] = [];
  let at = 0;
  parts.forEach((p, i) => {
    pcm.set(p, at);
    at += p.length;
    pieces.push({ text: script.pieces[i], endSample: at });
    at += gaps[i] ?? 0;
  });
  return { pcm, pieces, script };
}
