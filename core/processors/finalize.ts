/**
 * The end of a call: {@link CallTranscript} keeps both sides' final text and the brain's
 * node moves (a bot line a barge-in cut short ends where playout stopped, marked
 * `interrupted`); {@link FinalizeProcessor} sits last in the pipeline and, when End (or Stop, or
 * Cancel) reaches it, uploads the recording and the transcript through the embedder's
 * {@link SessionSource} and reports {@link Finalize} with `complete` exactly once, whatever
 * ended the call (the brain, the caller hanging up, a model error, a cancel).
 *
 * An upload that fails is logged and left out of the report; the call is still completed.
 * @module
 */

import { errorMessage } from "../errors.ts";
import type { Direction, Frame, StopReason } from "../frames.ts";
import { HeardTracker } from "../heard_tracker.ts";
import type { Logger } from "../log.ts";
import { silentLogger } from "../log.ts";
import { FrameProcessor, type Link, type ProcessorSetup } from "../processor.ts";
import type { ArtifactKind, Finalize, SessionSource } from "../seams.ts";

/** One line of a call transcript. */
export interface TranscriptLine {
  /**
   * `user` (caller), `bot` (agent), `node` (the brain moved to node `text`) or `tool` (a tool
   * call was answered with `text`).
   */
  role: "user" | "bot" | "node" | "tool";
  /** What was said, the id of the node moved to, or the tool's result (JSON unless a string). */
  text: string;
  /** On a `tool` line: the tool that was called. */
  tool?: string;
  /** Milliseconds since the collector started. */
  atMs: number;
  /**
   * A bot line the caller talked over: `text` is what they heard of it (possibly nothing), up
   * to where the bot's playout stopped. Absent on lines heard in full.
   */
  interrupted?: true;
}

/**
 * Sees each line as it is added, at its `index` in the transcript, and again (same index, same
 * object) when a barge-in cuts it.
 */
export type TranscriptListener = (line: TranscriptLine, index: number) => void;

/**
 * A call's transcript: both sides' final text, the brain's node moves and tool results, in call
 * order. Not a
 * processor: the {@link BrainProcessor} (which the built-in call shapes place where these frames
 * pass) feeds it, so keeping the transcript costs no processor loop of its own.
 *
 * A bot line says what was heard: the output transport's SpokenText and BotInterrupted frames
 * (upstream) cut a line whose playout a barge-in stopped to its heard part and mark it
 * `interrupted`; the listener then sees the line again. Only lines whose Transcription carries
 * an `utteranceId` are tracked, so the feeder must sit above the output transport.
 *
 * @example
 * ```ts
 * import { CallTranscript, makeFrame } from "@flowcat/flowcat";
 * const transcript = new CallTranscript((line) => console.log(line.role, line.text));
 * transcript.observe(makeFrame("Transcription", { text: "hi", userId: "user", final: true }));
 * ```
 */
export class CallTranscript {
  /** Lines in call order. */
  readonly lines: TranscriptLine[] = [];
  #t0 = performance.now();
  readonly #onLine: TranscriptListener | undefined;
  readonly #heard = new HeardTracker<TranscriptLine>();

  /** `onLine` sees each line as it is added or cut (e.g. a browser's live transcript). */
  constructor(onLine?: TranscriptListener) {
    this.#onLine = onLine;
  }

  /** Restart the clock that `atMs` counts from (the pipeline's start). */
  start(): void {
    this.#t0 = performance.now();
  }

  /**
   * Record `frame` when it is a final Transcription or a node move (UpdateSettings `nodeId`);
   * cut bot lines on the output transport's SpokenText and BotInterrupted.
   */
  observe(frame: Frame): void {
    switch (frame.kind) {
      case "Transcription": {
        if (!frame.final) return;
        const id = frame.userId === "user" ? undefined : frame.utteranceId;
        return this.add(frame.userId === "user" ? "user" : "bot", frame.text, id);
      }
      case "UpdateSettings":
        if (typeof frame.settings.nodeId === "string") this.add("node", frame.settings.nodeId);
        return;
      case "SpokenText":
        return this.#heard.spoken(frame.utteranceId, frame.text);
      case "BotInterrupted":
        for (const c of this.#heard.interrupted(frame.cut)) this.#cut(c.target, c.heard);
    }
  }

  /**
   * Add one line now. A bot line with `utteranceId` is kept to what is heard of it (already cut
   * when that utterance was interrupted before its line came).
   */
  add(role: TranscriptLine["role"], text: string, utteranceId?: string): void {
    const line: TranscriptLine = { role, text, atMs: Math.round(performance.now() - this.#t0) };
    if (utteranceId !== undefined) {
      const heard = this.#heard.expect(utteranceId, text, line);
      if (heard !== undefined) {
        line.text = heard;
        line.interrupted = true;
      }
    }
    this.lines.push(line);
    this.#onLine?.(line, this.lines.length - 1);
  }

  /** Add a tool call's result now (`result` as JSON unless it is a string). */
  addTool(tool: string, result: unknown): void {
    const text = typeof result === "string" ? result : JSON.stringify(result ?? null);
    const line: TranscriptLine = {
      role: "tool",
      text,
      tool,
      atMs: Math.round(performance.now() - this.#t0),
    };
    this.lines.push(line);
    this.#onLine?.(line, this.lines.length - 1);
  }

  #cut(line: TranscriptLine, heard: string): void {
    line.text = heard;
    line.interrupted = true;
    this.#onLine?.(line, this.lines.indexOf(line));
  }
}

/** A {@link CallTranscript} as a processor of its own, for pipelines without a brain. */
export class TranscriptCollector extends FrameProcessor {
  /** What has been collected. */
  readonly transcript: CallTranscript;

  /** `onLine` sees each line as it is added or cut (e.g. a browser's live transcript). */
  constructor(onLine?: TranscriptListener, name = "TranscriptCollector") {
    super(name);
    this.transcript = new CallTranscript(onLine);
  }

  /** Lines in call order. */
  get lines(): TranscriptLine[] {
    return this.transcript.lines;
  }

  /** Starts the clock. */
  override start(): void {
    this.transcript.start();
  }

  /** Records final Transcriptions and node moves, cuts bot lines; forwards every frame. */
  override processFrame(frame: Frame, dir: Direction, link: Link): void {
    this.transcript.observe(frame);
    link.push(frame, dir);
  }
}

/** What the finalize processor reads when the call ends. */
export interface FinalizeSources {
  /** The control plane the call is reported to. */
  session: SessionSource;
  /** Id of the call run in the control plane. */
  runId: number;
  /** Token that authenticates the run. */
  token: string;
  /** Usage summary (tokens, model, ...). */
  usage: () => Record<string, unknown>;
  /** Variables the brain collected. */
  collectedVars: () => Record<string, unknown>;
  /** Call outcome, such as the terminal node's disposition. */
  disposition?: () => string | undefined;
  /** The call's WAV recording, when recording is on. */
  recording?: () => Uint8Array | undefined;
  /** Transcript lines, uploaded as the transcript artifact. */
  transcript?: () => readonly TranscriptLine[];
  /** Logger for upload and completion failures (default: the task's logger). */
  logger?: Logger;
}

/** Uploads artifacts and completes the call once. */
export class FinalizeProcessor extends FrameProcessor {
  readonly #src: FinalizeSources;
  #log: Logger;
  #done: Promise<Finalize> | undefined;
  #t0 = performance.now();

  /** Finalize through `sources`. */
  constructor(sources: FinalizeSources, name = "FinalizeProcessor") {
    super(name);
    this.#src = sources;
    this.#log = sources.logger ?? silentLogger;
  }

  /** The finalize report, once the call has been completed. */
  get finalized(): Promise<Finalize> | undefined {
    return this.#done;
  }

  /** Starts the call clock. */
  override start(setup: ProcessorSetup): void {
    this.#t0 = performance.now();
    if (this.#src.logger === undefined) this.#log = setup.logger;
  }

  /** End, Stop or Cancel: finalize before the frame leaves the pipeline. */
  override async stop(reason: StopReason): Promise<void> {
    await this.finalize(reason);
  }

  /** Upload and complete; later calls return the first result. */
  finalize(reason?: StopReason): Promise<Finalize> {
    this.#done ??= this.#finalize(reason);
    return this.#done;
  }

  async #finalize(reason: StopReason | undefined): Promise<Finalize> {
    const src = this.#src;
    const transcript = src.transcript?.() ?? [];
    const disposition = src.disposition?.();
    const report: Finalize = {
      usage: {
        ...src.usage(),
        durationSeconds: Math.round((performance.now() - this.#t0) / 100) / 10,
        endedBy: reason === undefined ? "unknown" : describe(reason),
      },
      collectedVars: safe(() => src.collectedVars(), {}),
    };
    if (disposition !== undefined) report.disposition = disposition;
    const wav = safe(() => src.recording?.(), undefined);
    if (wav !== undefined && wav.length > 0) {
      const url = await this.#upload("recording", wav, "audio/wav");
      if (url !== undefined) report.recordingUrl = url;
    }
    const doc = { runId: src.runId, disposition, lines: transcript };
    const url = await this.#upload(
      "transcript",
      new TextEncoder().encode(JSON.stringify(doc, null, 2)),
      "application/json",
    );
    if (url !== undefined) report.transcriptUrl = url;
    try {
      await src.session.complete(src.runId, src.token, report);
    } catch (err) {
      this.#log.error("completing the call failed", { runId: src.runId, err: errorMessage(err) });
    }
    return report;
  }

  async #upload(kind: ArtifactKind, bytes: Uint8Array, type: string): Promise<string | undefined> {
    const { session, runId, token } = this.#src;
    try {
      const target = await session.artifactUploadUrl(runId, token, kind);
      await session.putBytes(target.uploadUrl, bytes, type);
      return target.publicUrl;
    } catch (err) {
      this.#log.warn(`${kind} upload failed`, { runId, err: errorMessage(err) });
      return undefined;
    }
  }
}

function describe(reason: StopReason): string {
  return "reason" in reason && reason.reason ? `${reason.kind}: ${reason.reason}` : reason.kind;
}

function safe<T>(fn: () => T, fallback: T): T {
  try {
    return fn();
  } catch {
    return fallback;
  }
}
