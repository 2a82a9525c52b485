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
}

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
    if (index - this.#speechStart + 1 > this.#maxHuman && voiced) {
      return this.#decide("machine", "long_greeting", at);
    }
    if (index - this.#lastVoiced >= this.#endSilence) {
      return this.#decide("human", "short_greeting", at);
    }
    return undefined;
  }
}
