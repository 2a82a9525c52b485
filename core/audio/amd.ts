/**
 * Answering-machine detection for outbound calls: human or machine from the first seconds of
 * what the callee's side plays, with no model.
 *
 * A person picks up and says something short ("Hello?", "Hi, this is Sam") and then waits for
 * the caller. A machine plays a greeting that goes on for seconds and ends with a beep. So the
 * audio is cut into 20 ms blocks, each voiced or not by its level, and:
 *
 * - a beep (a {@link BeepDetector} in the same stream) decides `machine` at once;
 * - the first utterance running past `maxHumanMs` decides `machine` (`long_greeting`);
 * - the first utterance followed by `endSilenceMs` of silence decides `human` (`short_greeting`);
 * - no voice at all for `initialSilenceMs` decides `machine` (`silence`: some voicemail systems
 *   open quietly, while a person says something on picking up).
 *
 * When the call transcribes the callee (a model or STT), {@link AnsweringMachineDetector.transcript}
 * hears the words too, and with `transcriptWaitMs` set the two decisions that go by the greeting's
 * length wait that long for them. A voicemail phrase ("leave a message", "not available", "after
 * the tone") or a monologue decides `machine` at once, even before the audio would; during the
 * wait, a person's phrase ("who is this?", "how can I help") decides `human`, and words that say
 * neither confirm the audio's choice (reason `transcript` whenever the words decided). A short
 * greeting whose words came already, and said neither, is decided without waiting.
 *
 * Gaps shorter than `endSilenceMs` (between words, at a comma) do not end an utterance. After a
 * `machine` decision the detector keeps listening and reports once when a message can be left:
 * at the end of the beep, or after `noBeepSilenceMs` of silence when the greeting ends without
 * one (`ready`).
 *
 * @example
 * ```ts
 * import { AnsweringMachineDetector } from "@flowcat/flowcat/audio";
 * declare const pcm8k: Int16Array;
 * const amd = new AnsweringMachineDetector({ sampleRate: 8000 });
 * for (const e of amd.process(pcm8k)) {
 *   if (e.type === "decision") console.log(e.verdict, e.reason, `after ${e.atMs} ms`);
 *   if (e.type === "ready") console.log("leave the message now");
 * }
 * ```
 * @module
 */

import { FlowcatError } from "../errors.ts";
import type { AnsweringMachineEvent } from "../frames.ts";
import { judgeGreetingText } from "./amd_transcript.ts";
import { BeepDetector } from "./beep_detect.ts";

/** Options of an {@link AnsweringMachineDetector}. */
export interface AmdOptions {
  /** Samples per second (default 8000; at least 8000). */
  sampleRate?: number;
  /** Least RMS level of a voiced block, dBFS (default -40). */
  minVoiceDbfs?: number;
  /** A first utterance longer than this is a machine's greeting, ms (default 1800). */
  maxHumanMs?: number;
  /** Silence that ends the first utterance, ms (default 800). */
  endSilenceMs?: number;
  /** No voice for this long after the answer is a machine, ms (default 3500). */
  initialSilenceMs?: number;
  /** After a machine greeting, silence this long without a beep means "speak now", ms (3000). */
  noBeepSilenceMs?: number;
  /**
   * The callee's words will come ({@link AnsweringMachineDetector.transcript}): a decision by the
   * greeting's length waits this long for them, ms. Unset (the default): the audio decides alone.
   */
  transcriptWaitMs?: number;
}

/** How long a decision by the greeting's length waits for the words, when a transcript comes. */
export const DEFAULT_TRANSCRIPT_WAIT_MS = 2000;

/** Why the detector decided as it did. */
export type AmdReason = Extract<AnsweringMachineEvent, { type: "decision" }>["reason"];

/** What the detector reports (the payload of the AnsweringMachine frame). */
export type AmdEvent = AnsweringMachineEvent;

const BLOCK_MS = 20;
const NONE: readonly AmdEvent[] = Object.freeze([]);

/** Streaming answering-machine detector for one call's inbound audio. */
export class AnsweringMachineDetector {
  readonly #beeps: BeepDetector;
  readonly #n: number;
  readonly #minEnergy: number;
  readonly #maxHuman: number;
  readonly #endSilence: number;
  readonly #initialSilence: number;
  readonly #noBeepSilence: number;
  /** Blocks a length decision waits for the words; 0: no transcript comes. */
  readonly #transcriptWait: number;
  /** The decision the audio would make, waiting for the words; and the callee's words so far. */
  #lean: { verdict: "human" | "machine"; reason: AmdReason; block: number } | undefined;
  #words = "";
  /** Block at which the last words came (-1: none yet). */
  #wordsBlock = -1;
  #energy = 0;
  #fill = 0;
  #blocks = 0;
  /** Block where the first utterance started (-1: none yet) and its last voiced block. */
  #speechStart = -1;
  #lastVoiced = -1;
  #verdict: "human" | "machine" | undefined;
  #ready = false;

  /** Make a detector (see {@link AmdOptions}). */
  constructor(opts: AmdOptions = {}) {
    const rate = opts.sampleRate ?? 8000;
    this.#beeps = new BeepDetector({ sampleRate: rate });
    this.#n = Math.round((rate * BLOCK_MS) / 1000);
    const minRms = 32768 * 10 ** ((opts.minVoiceDbfs ?? -40) / 20);
    this.#minEnergy = minRms * minRms * this.#n;
    const blocks = (name: string, ms: number | undefined, fallback: number) => {
      const v = ms ?? fallback;
      if (!(v >= BLOCK_MS)) throw new FlowcatError("config", `amd: ${name} must be >= 20 ms`);
      return Math.round(v / BLOCK_MS);
    };
    this.#maxHuman = blocks("maxHumanMs", opts.maxHumanMs, 1800);
    this.#endSilence = blocks("endSilenceMs", opts.endSilenceMs, 800);
    this.#initialSilence = blocks("initialSilenceMs", opts.initialSilenceMs, 3500);
    this.#noBeepSilence = blocks("noBeepSilenceMs", opts.noBeepSilenceMs, 3000);
    this.#transcriptWait = opts.transcriptWaitMs === undefined
      ? 0
      : blocks("transcriptWaitMs", opts.transcriptWaitMs, 0);
  }

  /** The decision, once made. */
  get verdict(): "human" | "machine" | undefined {
    return this.#verdict;
  }

  /** Feed the next samples; returns what was decided within them (usually nothing). */
  process(pcm: Int16Array): readonly AmdEvent[] {
    if (this.#done()) return NONE;
    let out: AmdEvent[] | undefined;
    const beeps = this.#beeps.process(pcm);
    for (let i = 0; i < pcm.length; i++) {
      this.#energy += pcm[i] * pcm[i];
      if (++this.#fill < this.#n) continue;
      const e = this.#block(this.#energy >= this.#minEnergy);
      this.#fill = 0;
      this.#energy = 0;
      if (e !== undefined) (out ??= []).push(e);
      if (this.#done()) break;
    }
    if (beeps.length > 0 && !this.#done()) {
      const at = beeps[0].endMs;
      if (this.#verdict === undefined) (out ??= []).push(this.#decide("machine", "beep", at));
      this.#ready = true;
      (out ??= []).push({ type: "ready", reason: "beep", atMs: at });
    }
    return out ?? NONE;
  }

  /**
   * The callee's words, as the call's transcription hears them (each final piece, in order).
   * Returns the decision they settle, if any (see the module doc).
   */
  transcript(text: string): readonly AmdEvent[] {
    if (this.#verdict !== undefined) return NONE;
    this.#words = `${this.#words} ${text}`;
    this.#wordsBlock = this.#blocks;
    const says = judgeGreetingText(this.#words);
    const at = this.#blocks * BLOCK_MS;
    if (says === "machine") return [this.#decide("machine", "transcript", at)];
    const lean = this.#lean;
    if (lean === undefined) return NONE;
    if (says === "human") return [this.#decide("human", "transcript", at)];
    return [this.#decide(lean.verdict, lean.reason, at)];
  }

  /** Nothing more to report: a human, or a machine whose greeting is over. */
  #done(): boolean {
    return this.#verdict === "human" || this.#ready;
  }

  #decide(verdict: "human" | "machine", reason: AmdReason, atMs: number): AmdEvent {
    this.#verdict = verdict;
    const end = this.#lastVoiced < 0 ? this.#speechStart : this.#lastVoiced + 1;
    const greetingMs = this.#speechStart < 0 ? 0 : (end - this.#speechStart) * BLOCK_MS;
    return { type: "decision", verdict, reason, atMs, greetingMs };
  }

  /** One 20 ms block; returns what it decided, if anything. */
  #block(loud: boolean): AmdEvent | undefined {
    const index = this.#blocks++;
    const at = (index + 1) * BLOCK_MS;
    // A tone in progress is the beep, not the greeting: it is decided when it ends.
    const voiced = loud && !this.#beeps.inBeep;
    if (voiced) {
      if (this.#speechStart < 0) this.#speechStart = index;
      this.#lastVoiced = index;
    }
    if (this.#verdict === "machine") {
      // Waiting for the beep; a greeting that ends without one leaves silence.
      const quiet = index - Math.max(this.#lastVoiced, 0);
      if (!loud && quiet >= this.#noBeepSilence) {
        this.#ready = true;
        return { type: "ready", reason: "silence", atMs: at };
      }
      return undefined;
    }
    if (this.#speechStart < 0) {
      return index + 1 >= this.#initialSilence ? this.#decide("machine", "silence", at) : undefined;
    }
    const lean = this.#lean;
    if (lean !== undefined) {
      // No words came in time: the audio decides alone.
      return index - lean.block >= this.#transcriptWait
        ? this.#decide(lean.verdict, lean.reason, at)
        : undefined;
    }
    if (index - this.#speechStart + 1 > this.#maxHuman && voiced) {
      return this.#byLength("machine", "long_greeting", index, at);
    }
    if (index - this.#lastVoiced >= this.#endSilence) {
      return this.#byLength("human", "short_greeting", index, at);
    }
    return undefined;
  }

  /** A decision by the greeting's length: now, or once the words come (or do not, in time). */
  #byLength(
    verdict: "human" | "machine",
    reason: AmdReason,
    index: number,
    at: number,
  ): AmdEvent | undefined {
    // Words that came after the speech ended (and said neither) leave nothing to wait for.
    const heard = reason === "short_greeting" && this.#wordsBlock > this.#lastVoiced;
    if (this.#transcriptWait === 0 || heard) return this.#decide(verdict, reason, at);
    this.#lean = { verdict, reason, block: index };
    return undefined;
  }
}
