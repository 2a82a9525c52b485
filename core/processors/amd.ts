/**
 * Answering-machine detection in a call's pipeline (outbound calls).
 *
 * {@link AmdProcessor} goes right after the input transport: it feeds the callee's audio to an
 * {@link AnsweringMachineDetector} and sends what it reports downstream as AnsweringMachine
 * frames. The BrainProcessor turns the decision into a move of the brain (see
 * `answered_by_machine` in docs/call-control.md), so a graph branches on it.
 *
 * {@link AmdTranscriptTap} goes where the caller's words appear as Transcription frames (after
 * the STT, or the speech-to-speech model): it hands them to the AmdProcessor's detector, so the
 * first transcript counts in the decision too (give the AmdProcessor `transcriptWaitMs`).
 *
 * {@link VoicemailGate} goes right before the output transport: after a `machine` decision it
 * holds the bot's audio until the AnsweringMachine `ready` frame (the beep has ended, or the
 * greeting went quiet without one), so "leave a message after the beep" is spoken after the beep.
 *
 * @example
 * ```ts
 * import { AmdProcessor, VoicemailGate } from "@flowcat/flowcat";
 * const detect = new AmdProcessor({ transcriptWaitMs: 2000 });
 * const words = new AmdTranscriptTap(detect);
 * const gate = new VoicemailGate();
 * // new Pipeline([input, detect, stt, words, llm, brain, tts, gate, output])
 * ```
 * @module
 */

import {
  type AmdOptions,
  AnsweringMachineDetector,
  DEFAULT_TRANSCRIPT_WAIT_MS,
} from "../audio/amd.ts";
import { type AnsweringMachineEvent, type Direction, type Frame, makeFrame } from "../frames.ts";
import { FrameProcessor, type Link } from "../processor.ts";

/** Runs answering-machine detection on the inbound audio; forwards every frame. */
export class AmdProcessor extends FrameProcessor {
  readonly #opts: Omit<AmdOptions, "sampleRate">;
  #amd: AnsweringMachineDetector | undefined;

  /** Detect with `opts` (the sample rate is the first inbound frame's). */
  constructor(opts: Omit<AmdOptions, "sampleRate"> = {}, name = "AmdProcessor") {
    super(name);
    this.#opts = opts;
  }

  /** The decision so far. */
  get verdict(): "human" | "machine" | undefined {
    return this.#amd?.verdict;
  }

  /** The callee's words (a final transcript piece): the events they settle, if any. */
  hearTranscript(text: string): readonly AnsweringMachineEvent[] {
    return this.#amd?.transcript(text) ?? [];
  }

  /** Feeds InputAudio to the detector; its events follow the audio downstream. */
  override processFrame(frame: Frame, dir: Direction, link: Link): void {
    link.push(frame, dir);
    if (dir !== "downstream" || frame.kind !== "InputAudio") return;
    const audio = frame.audio;
    if (audio.sampleRate < 8000) return;
    this.#amd ??= new AnsweringMachineDetector({ ...this.#opts, sampleRate: audio.sampleRate });
    for (const event of this.#amd.process(audio.pcm)) {
      link.pushDown(makeFrame("AnsweringMachine", { event }));
    }
  }
}

/**
 * Hands the caller's final transcripts to an {@link AmdProcessor} upstream of it, and sends the
 * decision they settle downstream from here; forwards every frame.
 */
export class AmdTranscriptTap extends FrameProcessor {
  readonly #amd: AmdProcessor;

  /** A tap feeding `amd`. */
  constructor(amd: AmdProcessor, name = "AmdTranscriptTap") {
    super(name);
    this.#amd = amd;
  }

  /** Passes a final caller Transcription's text to the detector. */
  override processFrame(frame: Frame, dir: Direction, link: Link): void {
    link.push(frame, dir);
    if (
      dir !== "downstream" || frame.kind !== "Transcription" || frame.userId === "bot" ||
      frame.final === false || this.#amd.verdict !== undefined
    ) return;
    for (const event of this.#amd.hearTranscript(frame.text)) {
      link.pushDown(makeFrame("AnsweringMachine", { event }));
    }
  }
}

/**
 * Holds the bot's audio from a machine decision until the machine is ready for the message. A
 * barge-in does not drop what is held: the "caller" talking over it is the greeting it waits out.
 */
export class VoicemailGate extends FrameProcessor {
  #holding = false;
  #held: Frame[] = [];

  /** A gate in front of the output transport. */
  constructor(name = "VoicemailGate") {
    super(name);
  }

  /** Whether the bot's audio is being held now. */
  get holding(): boolean {
    return this.#holding;
  }

  /** Holds OutputAudio and TtsAudio while a machine's greeting plays; forwards the rest. */
  override processFrame(frame: Frame, dir: Direction, link: Link): void {
    if (dir === "downstream" && frame.kind === "AnsweringMachine") {
      const e = frame.event;
      if (e.type === "decision") this.#holding = e.verdict === "machine";
      else this.#release(link);
      if (e.type === "decision" && e.verdict === "human") this.#release(link);
    } else if (
      this.#holding && dir === "downstream" &&
      (frame.kind === "OutputAudio" || frame.kind === "TtsAudio")
    ) {
      this.#held.push(frame);
      return;
    }
    link.push(frame, dir);
  }

  #release(link: Link): void {
    this.#holding = false;
    const held = this.#held;
    this.#held = [];
    for (const f of held) link.pushDown(f);
  }
}

/** Answering-machine detection in a call (the call builders' `answeringMachine` option). */
export interface AnsweringMachineSetup {
  /** Detector options (the sample rate is the call's). */
  detect?: Omit<AmdOptions, "sampleRate">;
  /** Hold the bot's audio from a machine decision until the beep (default true). */
  waitForBeep?: boolean;
  /**
   * Let the callee's first transcript count in the decision too (the STT's, or the
   * speech-to-speech model's when it transcribes the caller). Default: true for cascaded calls,
   * false for speech-to-speech ones, as not every model transcribes the caller.
   */
  transcript?: boolean;
}

/**
 * Places detection in `processors` (changed in place): an {@link AmdProcessor} at index
 * `at.input`, its {@link AmdTranscriptTap} right after `at.words` when transcripts count (`setup.
 * transcript`, else `at.wordsByDefault`), and a {@link VoicemailGate} at the end, unless
 * `waitForBeep` is false.
 */
export function placeAnsweringMachine(
  processors: FrameProcessor[],
  setup: AnsweringMachineSetup,
  at: { input: number; words: FrameProcessor; wordsByDefault: boolean },
): void {
  const withWords = setup.transcript ?? at.wordsByDefault;
  const detect = new AmdProcessor({
    ...(withWords ? { transcriptWaitMs: DEFAULT_TRANSCRIPT_WAIT_MS } : {}),
    ...setup.detect,
  });
  processors.splice(at.input, 0, detect);
  if (withWords) {
    processors.splice(processors.indexOf(at.words) + 1, 0, new AmdTranscriptTap(detect));
  }
  if (setup.waitForBeep !== false) processors.push(new VoicemailGate());
}
