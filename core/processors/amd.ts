/**
 * Answering-machine detection in a call's pipeline (outbound calls).
 *
 * {@link AmdProcessor} goes right after the input transport: it feeds the callee's audio to an
 * {@link AnsweringMachineDetector} and sends what it reports downstream as AnsweringMachine
 * frames. The BrainProcessor turns the decision into a move of the brain (see
 * `answered_by_machine` in docs/call-control.md), so a graph branches on it.
 *
 * {@link VoicemailGate} goes right before the output transport: after a `machine` decision it
 * holds the bot's audio until the AnsweringMachine `ready` frame (the beep has ended, or the
 * greeting went quiet without one), so "leave a message after the beep" is spoken after the beep.
 *
 * @example
 * ```ts
 * import { AmdProcessor, VoicemailGate } from "@flowcat/flowcat";
 * const detect = new AmdProcessor();
 * const gate = new VoicemailGate();
 * // new Pipeline([input, detect, model, brain, gate, output])
 * ```
 * @module
 */

import { type AmdOptions, AnsweringMachineDetector } from "../audio/amd.ts";
import { type Direction, type Frame, makeFrame } from "../frames.ts";
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
