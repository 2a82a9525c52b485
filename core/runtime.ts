// Over 400 lines: the processor loop: one hot class; every method touches its queues.
/**
 * The framework-owned processor loop. One {@link ProcessorRuntime} per leaf processor per
 * task; it is also that processor's {@link Link} and its inbox ({@link FrameTarget}).
 *
 * Per frame: system queue first, then the normal queue; Start / Interruption / End / Stop /
 * Cancel go to hooks, everything else to `processFrame`. Nothing is allocated per hop unless
 * an observer is registered. The loop yields to other loops once per
 * {@link YIELD_EVERY} frames, and waits after a `processFrame` that filled a neighbour's
 * normal channel (backpressure).
 *
 * The loop runs only while there is work: with both queues empty it returns (parks). A frame
 * pushed to a parked processor runs it at once, inside the push (depth first: a caller's frame
 * crosses the pipeline before the next caller's frame starts), unless that processor's own push
 * is on the stack or {@link MAX_NESTED_DRAINS} loops already are; then it restarts in a
 * microtask. An idle processor therefore holds no suspended coroutine, promise or closure.
 * Frames are handled synchronously back to back; a coroutine is made only when something must
 * be awaited (a lifecycle hook, an asynchronous `processFrame`, a full neighbour, the yield).
 * @module
 */

import { DEFAULT_CHANNEL_CAPACITY, FrameQueue, type FrameTarget } from "./channel.ts";
import { errorMessage } from "./errors.ts";
import {
  classOf,
  cloneFrame,
  type Direction,
  type Frame,
  type LlmTokenUsage,
  makeFrame,
  type StartParams,
  stopReasonOf,
} from "./frames.ts";
import { MetricsTracker } from "./metrics.ts";
import type { FrameProcessor, Link, ProcessorSetup } from "./processor.ts";

/** Frames a loop handles back to back before it yields to other loops. */
export const YIELD_EVERY = 64;

const RESOLVED: Promise<void> = Promise.resolve();

/**
 * The inbox of every processor that has not queued a frame yet: always empty, never pushed to
 * (a push replaces it with a queue of the processor's own), so reading and clearing it is safe.
 */
const NO_QUEUE = new FrameQueue(2);

/**
 * Parked loops with a frame waiting, resumed in arrival order by one microtask: the same turn a
 * microtask per loop would give, without a bound callback per loop.
 */
const woken: ProcessorRuntime[] = [];
let wakeScheduled = false;

/**
 * How many loops may be running synchronously on this stack, one inside another: a frame pushed
 * to a parked neighbour is handled at once, inside the push, until this depth; deeper, the
 * neighbour is woken in a microtask instead (bounded stack, whatever the pipeline's length).
 */
export const MAX_NESTED_DRAINS = 16;
let nested = 0;

function wake(rt: ProcessorRuntime): void {
  woken.push(rt);
  if (!wakeScheduled) {
    wakeScheduled = true;
    queueMicrotask(resumeWoken);
  }
}

function resumeWoken(): void {
  try {
    // Loops resumed here may wake others: they join this same pass.
    for (let i = 0; i < woken.length; i++) woken[i].resume();
  } finally {
    woken.length = 0;
    wakeScheduled = false;
  }
}

/** Hears a loop's end: `err` is set when the loop itself failed (a bug, not a processor error). */
export type LoopEndHandler = (rt: ProcessorRuntime, err: unknown) => void;

const PARKED = 0;
const ENDED = 1;
const YIELD = 2;
/** What the synchronous drain hands to the asynchronous loop to await. */
type Wait =
  | { frame: Frame; dir: Direction }
  | { pending: Promise<void> }
  | { blocked: FrameTarget }
  | typeof YIELD;

/** Loop, inbox and link of one processor inside a running task. */
export class ProcessorRuntime implements Link, FrameTarget {
  /** The processor's name. */
  readonly name: string;
  /** Downstream neighbour (set by the wiring). */
  next!: FrameTarget;
  /** Upstream neighbour (set by the wiring). */
  prev!: FrameTarget;

  readonly #p: FrameProcessor;
  readonly #setup: ProcessorSetup;
  readonly #capacity: number;
  /**
   * The two inboxes start as the shared {@link NO_QUEUE} and become queues of their own on the
   * first frame that has to wait (most frames are handed to a parked loop and never queue): an
   * idle call's processors hold no queue objects (10 of about 80 bytes each per call).
   */
  #sys: FrameQueue = NO_QUEUE;
  #normal: FrameQueue = NO_QUEUE;
  /** True while the loop is not running and waits for a frame (or has not started). */
  #parked = false;
  #started = false;
  /** Hears the end of the loop once (no promise per processor: the task passes one handler). */
  #onEnd: LoopEndHandler | undefined;
  #writers: (() => void)[] | undefined;
  #blocked: FrameTarget | undefined;
  #stopped = false;
  #aborted = false;
  #metrics: MetricsTracker | undefined;
  /** Set at Start when this processor reports metrics; the tracker is made on first use. */
  #metricsStart: StartParams | undefined;
  /** Pushes of this processor in progress (its code is on the stack: no re-entry). */
  #pushing = 0;

  /** Wrap `processor` for one task. */
  constructor(
    processor: FrameProcessor,
    setup: ProcessorSetup,
    capacity = DEFAULT_CHANNEL_CAPACITY,
  ) {
    this.#p = processor;
    this.name = processor.name;
    this.#setup = setup;
    this.#capacity = capacity;
  }

  /** True while the loop waits for a frame holding nothing suspended (no coroutine, no promise). */
  get parked(): boolean {
    return this.#parked;
  }

  /** True once a downstream End, Stop or Cancel has passed, or the loop was aborted. */
  get stopped(): boolean {
    return this.#stopped;
  }

  // ------------------------------------------------------------------ inbox (FrameTarget)

  /** Queue a frame for this processor. Frames arriving after it stopped are dropped. */
  enqueue(frame: Frame, direction: Direction): void {
    if (this.#stopped) return;
    // Depth first: the frame goes on through the pipeline now, on the pusher's stack, rather
    // than after every other frame queued in this turn (the call's latency is its own work).
    // Never into a processor whose own push is on the stack (a frame that comes straight back,
    // or one sent to a reader or timer of it mid-statement): that one waits for a microtask.
    if (this.#parked && nested < MAX_NESTED_DRAINS && this.#pushing === 0) {
      // Parked means both queues are empty: the frame is handed to the loop, not queued.
      this.#parked = false;
      nested++;
      try {
        this.#resume(frame, direction);
      } finally {
        nested--;
      }
      return;
    }
    if (classOf(frame) === "system") {
      if (this.#sys === NO_QUEUE) this.#sys = new FrameQueue(2);
      this.#sys.push(frame, direction);
    } else {
      if (this.#normal === NO_QUEUE) this.#normal = new FrameQueue(2);
      this.#normal.push(frame, direction);
    }
    if (this.#parked) {
      this.#parked = false;
      wake(this);
    }
  }

  /** True while the normal channel holds `capacity` frames or more. */
  isFull(): boolean {
    return this.#normal.size >= this.#capacity && !this.#stopped;
  }

  /** Resolves once the normal channel has room (or the loop has stopped). */
  waitWritable(): Promise<void> {
    if (!this.isFull()) return RESOLVED;
    return new Promise((resolve) => (this.#writers ??= []).push(resolve));
  }

  /** Number of frames waiting (both queues). */
  get queued(): number {
    return this.#sys.size + this.#normal.size;
  }

  /** Forced abort: the loop exits at its next step; waiting producers are released. */
  abort(): void {
    this.#aborted = true;
    this.#stopped = true;
    this.#sys.clear();
    this.#normal.clear();
    this.#releaseWriters();
    if (this.#parked) this.#end(undefined);
  }

  // ------------------------------------------------------------------ link

  /** Push a frame to the neighbour in `direction`. */
  push(frame: Frame, direction: Direction): void {
    const target = direction === "downstream" ? this.next : this.prev;
    const obs = this.#setup.observer;
    if (obs !== undefined && obs.onPush !== undefined) {
      obs.onPush({
        source: this.name,
        destination: target.name,
        frame,
        direction,
        timestampNs: this.#setup.clock(),
      });
    }
    this.#pushing++;
    try {
      target.enqueue(frame, direction);
    } finally {
      this.#pushing--;
    }
    // Whether the neighbour is full first: it almost never is, and the frame's class is a
    // keyed lookup on every hop.
    if (target.isFull() && classOf(frame) !== "system") this.#blocked = target;
  }

  /** Push downstream. */
  pushDown(frame: Frame): void {
    this.push(frame, "downstream");
  }

  /** Push an Error frame upstream naming this processor. */
  pushError(message: string, fatal = false): void {
    this.push(makeFrame("Error", { message, fatal, processor: this.name }), "upstream");
  }

  /** Push copies both ways with paired sibling ids. */
  broadcast(frame: Frame): void {
    const down = cloneFrame(frame);
    const up = cloneFrame(frame);
    down.broadcastSiblingId = up.id;
    up.broadcastSiblingId = down.id;
    this.push(down, "downstream");
    this.push(up, "upstream");
  }

  /** Resolves once the neighbour in `direction` has room. */
  writable(direction: Direction = "downstream"): Promise<void> {
    const t = direction === "downstream" ? this.next : this.prev;
    return t.isFull() ? t.waitWritable() : RESOLVED;
  }

  /** Metrics helper. */
  startTtfb(): void {
    this.#tracker()?.startTtfb();
  }
  /** Metrics helper. */
  stopTtfb(model?: string): void {
    this.#tracker()?.stopTtfb(model);
  }
  /** Metrics helper. */
  startProcessing(): void {
    this.#tracker()?.startProcessing();
  }
  /** Metrics helper. */
  stopProcessing(model?: string): void {
    this.#tracker()?.stopProcessing(model);
  }
  /** Metrics helper. */
  reportLlmUsage(tokens: LlmTokenUsage, model?: string): void {
    this.#tracker()?.reportLlmUsage(tokens, model);
  }
  /** Metrics helper. */
  reportTtsUsage(characters: number, model?: string): void {
    this.#tracker()?.reportTtsUsage(characters, model);
  }

  /**
   * The metrics tracker, made on the first report: an idle call, or a processor that never
   * reports, holds none (about 0.2 KB each with its options and emitter).
   */
  #tracker(): MetricsTracker | undefined {
    if (this.#metrics !== undefined || this.#metricsStart === undefined) return this.#metrics;
    const s = this.#setup;
    return this.#metrics = new MetricsTracker({
      processor: this.name,
      enableMetrics: s.enableMetrics,
      enableUsageMetrics: s.enableUsageMetrics,
      reportOnlyInitialTtfb: this.#metricsStart.reportOnlyInitialTtfb,
      clock: s.clock,
      emit: (f) => this.push(f, "downstream"),
    });
  }

  // ------------------------------------------------------------------ loop

  /**
   * Start the loop (once). `onEnd` hears when a downstream terminal frame has passed or the task
   * aborted it, with the error when the loop itself failed.
   */
  start(onEnd?: LoopEndHandler): void {
    if (this.#started) return;
    this.#started = true;
    this.#onEnd = onEnd;
    this.resume();
  }

  /** {@link ProcessorRuntime.start} as a promise: resolves at the end, rejects on a failure. */
  run(): Promise<void> {
    return new Promise((resolve, reject) =>
      this.start((_rt, err) => err === undefined ? resolve() : reject(err))
    );
  }

  #end(err: unknown): void {
    const f = this.#onEnd;
    this.#onEnd = undefined;
    f?.(this, err);
  }

  /**
   * Run what is queued: synchronously while it can, then (if it must wait) asynchronously.
   * Called by the wake-up queue; not for processors.
   */
  resume(): void {
    this.#resume(undefined, "downstream");
  }

  /** {@link ProcessorRuntime.resume}, with `first` (when set) handled before anything queued. */
  #resume(first: Frame | undefined, firstDir: Direction): void {
    let next: Wait | typeof PARKED | typeof ENDED;
    try {
      next = this.#drain(first, firstDir);
    } catch (err) {
      // A bug below the processor (an observer, a neighbour) ends this loop, as a rejected
      // coroutine did: the task logs it; frames sent here from now on stay queued.
      this.#end(err ?? new Error("processor loop failed"));
      return;
    }
    if (next === PARKED) return;
    if (next === ENDED) this.#end(undefined);
    else {
      this.#loop(next).then(
        (parked) => parked || this.#end(undefined),
        (err) => this.#end(err ?? new Error("processor loop failed")),
      );
    }
  }

  /** Wait for what `#drain` handed over, drain again, and so on until parked (true) or ended. */
  async #loop(wait: Wait): Promise<boolean> {
    for (;;) {
      if (await this.#finish(wait)) return false;
      const next = this.#drain(undefined, "downstream");
      if (next === PARKED) return true;
      if (next === ENDED) return false;
      wait = next;
    }
  }

  /**
   * Handle queued frames back to back without awaiting anything: synchronous `processFrame`s,
   * the common case, cost no coroutine and no promise. Stops at the first thing that must be
   * awaited (a lifecycle hook, a `processFrame` promise, a full neighbour, the periodic yield)
   * and hands it over; or parks when both queues are empty.
   */
  #drain(first: Frame | undefined, firstDir: Direction): Wait | typeof PARKED | typeof ENDED {
    const p = this.#p;
    for (let burst = 0; burst < YIELD_EVERY; burst++) {
      if (this.#aborted) return ENDED;
      // Read each time: a frame pushed back to this processor meanwhile may have made a queue.
      const sys = this.#sys;
      const normal = this.#normal;
      // `shift` says "empty" itself (undefined): no separate size read per frame.
      let frame: Frame | undefined;
      let dir: Direction;
      if (first !== undefined) {
        frame = first;
        dir = firstDir;
        first = undefined;
      } else if ((frame = sys.shift()) !== undefined) {
        dir = sys.lastDirection;
      } else if ((frame = normal.shift()) !== undefined) {
        dir = normal.lastDirection;
        if (this.#writers !== undefined && normal.size < this.#capacity) this.#releaseWriters();
      } else {
        this.#parked = true;
        return PARKED;
      }

      const obs = this.#setup.observer;
      if (obs !== undefined && obs.onProcess !== undefined) {
        obs.onProcess({
          processor: this.name,
          frame,
          direction: dir,
          timestampNs: this.#setup.clock(),
        });
      }

      switch (frame.kind) {
        case "Start":
        case "Interruption":
        case "End":
        case "Stop":
        case "Cancel":
          return { frame, dir };
        default:
          try {
            const r = p.processFrame(frame, dir, this);
            if (r !== undefined) return { pending: r };
          } catch (err) {
            this.pushError(errorMessage(err), false);
          }
      }

      const blocked = this.#takeFullNeighbour();
      if (blocked !== undefined) return { blocked };
    }
    return YIELD;
  }

  /** Await what `#drain` handed over; true when the loop is over (a terminal frame passed). */
  async #finish(wait: Wait): Promise<boolean> {
    if (wait === YIELD) {
      await undefined; // let the other loops run
      return false;
    }
    if ("blocked" in wait) {
      await wait.blocked.waitWritable();
      return false;
    }
    if ("pending" in wait) {
      try {
        await wait.pending;
      } catch (err) {
        this.pushError(errorMessage(err), false);
      }
    } else {
      const { frame, dir } = wait;
      switch (frame.kind) {
        case "Start":
          if (dir === "downstream") await this.#onStart(frame.params);
          this.push(frame, dir);
          break;
        case "Interruption":
          await this.#onInterruption();
          this.push(frame, dir);
          break;
        case "End":
        case "Stop":
        case "Cancel":
          if (dir === "upstream") {
            this.push(frame, dir);
            break;
          }
          if (frame.kind === "Cancel") this.#normal.clear();
          await this.#hook("stop", () => this.#p.stop(stopReasonOf(frame)));
          this.push(frame, dir);
          this.#stopped = true;
          this.#normal.clear();
          this.#sys.clear();
          this.#releaseWriters();
          return true;
        default:
          this.push(frame, dir);
      }
    }
    const full = this.#takeFullNeighbour();
    if (full !== undefined) await full.waitWritable();
    return false;
  }

  /** The neighbour the last frame filled, if it is still full (backpressure); clears the mark. */
  #takeFullNeighbour(): FrameTarget | undefined {
    const blocked = this.#blocked;
    this.#blocked = undefined;
    return blocked !== undefined && blocked.isFull() ? blocked : undefined;
  }

  async #onStart(params: StartParams): Promise<void> {
    const s = this.#setup;
    if ((s.enableMetrics || s.enableUsageMetrics) && this.#p.canGenerateMetrics()) {
      this.#metricsStart = params;
      this.#metrics = undefined;
    }
    try {
      const r = this.#p.start(s, params, this);
      if (r !== undefined) await r;
    } catch (err) {
      // A processor that cannot start cannot carry the call: fatal, the task cancels.
      this.pushError(`start failed: ${errorMessage(err)}`, true);
    }
  }

  async #onInterruption(): Promise<void> {
    this.#normal.dropInterruptible();
    if (this.#writers !== undefined && this.#normal.size < this.#capacity) this.#releaseWriters();
    await this.#hook("interruption", () => this.#p.onInterruption());
  }

  async #hook(what: string, fn: () => void | Promise<void>): Promise<void> {
    try {
      const r = fn();
      if (r !== undefined) await r;
    } catch (err) {
      this.pushError(`${what} hook failed: ${errorMessage(err)}`, false);
    }
  }

  #releaseWriters(): void {
    const ws = this.#writers;
    if (ws === undefined) return;
    this.#writers = undefined;
    for (const w of ws) w();
  }
}
