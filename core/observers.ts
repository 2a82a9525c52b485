/**
 * Observer hooks: non-intrusive taps on every processor hop. They are invoked only when at
 * least one observer is registered on the task; with none, the loop pays one `undefined` check.
 *
 * Built-ins: {@link TurnTrackingObserver}, {@link UserBotLatencyObserver},
 * {@link IdleFrameObserver}.
 * @module
 */

import type { Direction, Frame, FrameKind } from "./frames.ts";

/** A processor is about to handle a frame. */
export interface FrameEvent {
  /** Name of the processor. */
  readonly processor: string;
  /** The frame. */
  readonly frame: Frame;
  /** Which way the frame travels. */
  readonly direction: Direction;
  /** Pipeline-clock time of the event, in nanoseconds. */
  readonly timestampNs: number;
}

/** A frame was pushed from one processor to another. */
export interface FramePushEvent {
  /** Name of the processor that pushed the frame. */
  readonly source: string;
  /** Name of the processor that receives it. */
  readonly destination: string;
  /** The frame. */
  readonly frame: Frame;
  /** Which way the frame travels. */
  readonly direction: Direction;
  /** Pipeline-clock time of the push, in nanoseconds. */
  readonly timestampNs: number;
}

/** Observer hooks; implement any subset. */
export interface Observer {
  /** A processor is about to handle a frame. */
  onProcess?(event: FrameEvent): void;
  /** A frame was pushed between two processors. */
  onPush?(event: FramePushEvent): void;
  /** The pipeline started (the Start frame reached the end). */
  onPipelineStarted?(): void;
}

/** One observer calling each of `observers` in order; `undefined` when the list is empty. */
export function composeObservers(observers: readonly Observer[]): Observer | undefined {
  if (observers.length === 0) return undefined;
  if (observers.length === 1) return observers[0];
  const proc = observers.filter((o) => o.onProcess);
  const push = observers.filter((o) => o.onPush);
  const started = observers.filter((o) => o.onPipelineStarted);
  return {
    onProcess: (e) => {
      for (const o of proc) o.onProcess!(e);
    },
    onPush: (e) => {
      for (const o of push) o.onPush!(e);
    },
    onPipelineStarted: () => {
      for (const o of started) o.onPipelineStarted!();
    },
  };
}

/**
 * Seen-once filter: a frame pushed across N hops is reported to the built-ins once, the first
 * time it is pushed (by id). Bounded so a long call does not grow it.
 */
class SeenIds {
  #ids = new Set<number>();
  constructor(private readonly max = 4096) {}
  /** True the first time `frame` or its broadcast sibling is seen; marks both. */
  firstSighting(frame: Frame): boolean {
    if (!this.firstTime(frame.broadcastSiblingId ?? frame.id)) return false;
    this.firstTime(frame.id);
    return true;
  }
  firstTime(id: number): boolean {
    if (this.#ids.has(id)) return false;
    this.#ids.add(id);
    if (this.#ids.size > this.max) {
      const oldest = this.#ids.values().next().value as number;
      this.#ids.delete(oldest);
    }
    return true;
  }
}

/** One conversational turn: from the user starting to speak to the bot finishing its reply. */
export interface Turn {
  /** 1-based turn number. */
  readonly number: number;
  /** Pipeline-clock time the turn started, in nanoseconds. */
  readonly startNs: number;
  /** Pipeline-clock time the turn ended, in nanoseconds; unset while it is still going. */
  endNs?: number;
  /** True when the user spoke over the bot and ended this turn early. */
  interrupted: boolean;
}

/**
 * Turn tracking: speaking edges to turn boundaries. A turn starts at UserStartedSpeaking
 * (or at BotStartedSpeaking when the bot speaks first) and ends at the BotStoppedSpeaking of
 * speech that began within it; a user starting to speak while the bot talks ends the current
 * turn as interrupted and starts the next (the interrupted reply's stop does not end it).
 */
export class TurnTrackingObserver implements Observer {
  /** Completed and current turns, oldest first. */
  readonly turns: Turn[] = [];
  /** Called when a turn starts. */
  onTurnStarted?: (turn: Turn) => void;
  /** Called when a turn ends. */
  onTurnEnded?: (turn: Turn) => void;
  #seen = new SeenIds();
  #current: Turn | undefined;
  #botSpeaking = false;
  #botSpokeInTurn = false;

  /** Observer hook. */
  onPush(e: FramePushEvent): void {
    const k = e.frame.kind;
    if (k !== "UserStartedSpeaking" && k !== "BotStartedSpeaking" && k !== "BotStoppedSpeaking") {
      return;
    }
    if (!this.#seen.firstSighting(e.frame)) return;
    if (k === "UserStartedSpeaking") {
      if (this.#current && this.#botSpeaking) this.#end(e.timestampNs, true);
      if (!this.#current) this.#begin(e.timestampNs);
    } else if (k === "BotStartedSpeaking") {
      this.#botSpeaking = true;
      if (!this.#current) this.#begin(e.timestampNs);
      this.#botSpokeInTurn = true;
    } else {
      this.#botSpeaking = false;
      if (this.#current && this.#botSpokeInTurn) this.#end(e.timestampNs, false);
    }
  }

  #begin(ts: number): void {
    this.#botSpokeInTurn = false;
    this.#current = { number: this.turns.length + 1, startNs: ts, interrupted: false };
    this.turns.push(this.#current);
    this.onTurnStarted?.(this.#current);
  }

  #end(ts: number, interrupted: boolean): void {
    const t = this.#current!;
    t.endNs = ts;
    t.interrupted = interrupted;
    this.#current = undefined;
    this.onTurnEnded?.(t);
  }
}

/**
 * User-to-bot latency: time from UserStoppedSpeaking to the bot's next BotStartedSpeaking,
 * in seconds, one value per reply.
 */
export class UserBotLatencyObserver implements Observer {
  /** Every measured latency, in seconds. */
  readonly latencies: number[] = [];
  /** Called with each measurement. */
  onLatency?: (seconds: number) => void;
  #seen = new SeenIds();
  #userStoppedNs: number | undefined;

  /** Observer hook. */
  onPush(e: FramePushEvent): void {
    const k = e.frame.kind;
    if (k !== "UserStoppedSpeaking" && k !== "BotStartedSpeaking" && k !== "UserStartedSpeaking") {
      return;
    }
    if (!this.#seen.firstSighting(e.frame)) return;
    if (k === "UserStartedSpeaking") this.#userStoppedNs = undefined;
    else if (k === "UserStoppedSpeaking") this.#userStoppedNs = e.timestampNs;
    else if (this.#userStoppedNs !== undefined) {
      const s = (e.timestampNs - this.#userStoppedNs) / 1e9;
      this.#userStoppedNs = undefined;
      this.latencies.push(s);
      this.onLatency?.(s);
    }
  }

  /** Mean latency in seconds, or `undefined` with no sample. */
  mean(): number | undefined {
    if (this.latencies.length === 0) return undefined;
    return this.latencies.reduce((a, b) => a + b, 0) / this.latencies.length;
  }
}

/**
 * Idle-frame observer: records when any frame of `kinds` was last pushed anywhere in the
 * pipeline. The task's own idle watch looks only at the pipeline ends (cheaper); register this
 * one when activity frames may be consumed mid-pipeline.
 */
export class IdleFrameObserver implements Observer {
  /** Pipeline-clock time of the last activity frame, or `undefined` before any. */
  lastActivityNs: number | undefined;
  /** Called on every activity frame. */
  onActivity?: (kind: FrameKind) => void;
  readonly #kinds: ReadonlySet<FrameKind>;

  /** Watch for `kinds` (default BotSpeaking, UserSpeaking). */
  constructor(kinds: readonly FrameKind[] = ["BotSpeaking", "UserSpeaking"]) {
    this.#kinds = new Set(kinds);
  }

  /** Observer hook. */
  onPush(e: FramePushEvent): void {
    if (!this.#kinds.has(e.frame.kind)) return;
    this.lastActivityNs = e.timestampNs;
    this.onActivity?.(e.frame.kind);
  }
}
