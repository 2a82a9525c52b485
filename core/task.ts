// Over 400 lines: one class, PipelineTask: a call's lifecycle over shared state.
/**
 * PipelineTask: runs one pipeline (one call). Builds the loops, injects Start, pumps queued
 * frames, watches heartbeats and idleness, and ends on End / Stop / Cancel reaching the sink.
 *
 * @example
 * ```ts
 * import { makeFrame, Pipeline, PipelineTask } from "@flowcat/flowcat";
 * const task = new PipelineTask(new Pipeline([]), { idleTimeoutMs: null });
 * task.onStarted(() => task.queueFrame(makeFrame("End", {})));
 * const reason = await task.run(); // { kind: "end" }
 * ```
 * @module
 */

import { DEFAULT_CHANNEL_CAPACITY, type FrameTarget } from "./channel.ts";
import { FlowcatError } from "./errors.ts";
import {
  type Direction,
  type Frame,
  type FrameKind,
  makeFrame,
  type StartParams,
  type StopReason,
  stopReasonOf,
} from "./frames.ts";
import { cancelDeadline, type Deadline, scheduleDeadline } from "./deadlines.ts";
import { consoleLogger, type Logger } from "./log.ts";
import { composeObservers, type Observer } from "./observers.ts";
import { wirePipeline, type Wiring } from "./pipeline.ts";
import type { FrameProcessor, ProcessorSetup } from "./processor.ts";
import type { CallTracer } from "./tracing.ts";
import type { ProcessorRuntime } from "./runtime.ts";

/** Task parameters; every field is optional and defaults as listed. */
export interface PipelineTaskParams {
  /** Default 16000. */
  audioInSampleRate?: number;
  /** Default 24000 (speech-to-speech). */
  audioOutSampleRate?: number;
  /** Default false. */
  enableMetrics?: boolean;
  /** Default false. */
  enableUsageMetrics?: boolean;
  /** Default false. */
  enableTracing?: boolean;
  /** Default false. */
  reportOnlyInitialTtfb?: boolean;
  /** Default false. */
  enableHeartbeats?: boolean;
  /** Default 1000 ms. */
  heartbeatPeriodMs?: number;
  /** Warn when no heartbeat reached the sink for this long. Default 10000 ms. */
  heartbeatMonitorMs?: number;
  /** Default 300000 ms; `null` disables the idle watch. */
  idleTimeoutMs?: number | null;
  /** Default true. */
  cancelOnIdle?: boolean;
  /** Frames that count as activity. Default BotSpeaking, UserSpeaking. */
  idleTimeoutFrames?: readonly FrameKind[];
  /** Bound on cancel before processors are force-aborted. Default 5000 ms. */
  cancelTimeoutMs?: number;
  /** Normal-channel capacity per processor. Default 64. */
  channelCapacity?: number;
  /** Observers; none by default (zero cost). */
  observers?: readonly Observer[];
  /** Receives the service processors' provider requests; none by default (zero cost). */
  tracer?: CallTracer;
  /** Default: warnings and errors to stderr. */
  logger?: Logger;
}

/** Defaults of {@link PipelineTaskParams}. */
export const DEFAULT_TASK_PARAMS: Readonly<
  Required<Omit<PipelineTaskParams, "observers" | "logger" | "tracer">>
> = Object.freeze({
  audioInSampleRate: 16000,
  audioOutSampleRate: 24000,
  enableMetrics: false,
  enableUsageMetrics: false,
  enableTracing: false,
  reportOnlyInitialTtfb: false,
  enableHeartbeats: false,
  heartbeatPeriodMs: 1000,
  heartbeatMonitorMs: 10000,
  idleTimeoutMs: 300000 as number | null,
  cancelOnIdle: true,
  idleTimeoutFrames: Object.freeze(["BotSpeaking", "UserSpeaking"]) as readonly FrameKind[],
  cancelTimeoutMs: 5000,
  channelCapacity: DEFAULT_CHANNEL_CAPACITY,
});

/**
 * A task lifecycle callback with arguments `A`. A throw or rejection is logged, never fatal;
 * onFinished callbacks are awaited in turn, the others run without blocking the task.
 */
export type TaskHook<A extends unknown[]> = (...args: A) => void | Promise<void>;

interface KindHook {
  kinds: ReadonlySet<FrameKind>;
  fn: TaskHook<[Frame]>;
}

const NO_HOOKS: readonly never[] = Object.freeze([]);

const DEFAULT_IDLE_KINDS: ReadonlySet<FrameKind> = new Set(DEFAULT_TASK_PARAMS.idleTimeoutFrames);

/**
 * `list` with `item` appended, in an array of exactly that length: a push onto an empty array
 * reserves 17 slots (184 bytes), held for the whole call by every hook list that got one.
 */
function appended<T>(list: readonly T[], item: T): T[] {
  const out = new Array<T>(list.length + 1);
  for (let i = 0; i < list.length; i++) out[i] = list[i];
  out[list.length] = item;
  return out;
}

/** `kinds` as a Set: a Set as it is, an array copied. */
function kindSet(kinds: readonly FrameKind[] | ReadonlySet<FrameKind>): ReadonlySet<FrameKind> {
  return kinds instanceof Set ? kinds : new Set(kinds as readonly FrameKind[]);
}

/** One running pipeline. `run()` may be called once. */
export class PipelineTask {
  readonly #root: FrameProcessor;
  readonly #p: Required<Omit<PipelineTaskParams, "observers" | "logger" | "tracer">>;
  readonly #log: Logger;
  readonly #observer: Observer | undefined;
  readonly #tracer: CallTracer | undefined;
  readonly #abort = new AbortController();
  readonly #t0 = performance.now();
  readonly #idleKinds: ReadonlySet<FrameKind>;

  #wiring: Wiring | undefined;
  #pending: Frame[] | undefined;
  #ran = false;
  #started = false;
  #finished = false;
  #finish!: (r: StopReason) => void;
  readonly #done: Promise<StopReason>;
  #heartbeatTimer: ReturnType<typeof setInterval> | undefined;
  /** The idle watch: an isolate-wide deadline, not a runtime timer per call. */
  #idleTimer: Deadline | undefined;
  #cancelTimer: ReturnType<typeof setTimeout> | undefined;
  #lastHeartbeatNs = 0;
  #heartbeatWarned = false;
  #lastActivityNs = 0;

  // Hook lists start as one shared empty array and are replaced on each registration.
  #onStarted: readonly TaskHook<[]>[] = NO_HOOKS;
  #onFinished: readonly TaskHook<[StopReason]>[] = NO_HOOKS;
  #onError: readonly TaskHook<[string, boolean, string | undefined]>[] = NO_HOOKS;
  #onIdle: readonly TaskHook<[]>[] = NO_HOOKS;
  #onHeartbeatTimeout: readonly TaskHook<[number]>[] = NO_HOOKS;
  #reachedDown: readonly KindHook[] = NO_HOOKS;
  #reachedUp: readonly KindHook[] = NO_HOOKS;

  /** A task for `pipeline` (a Pipeline, or any processor). */
  constructor(pipeline: FrameProcessor, params: PipelineTaskParams = {}) {
    this.#root = pipeline;
    const { observers = [], logger, tracer, ...rest } = params;
    this.#tracer = tracer;
    const defined = Object.fromEntries(Object.entries(rest).filter(([, v]) => v !== undefined));
    this.#p = { ...DEFAULT_TASK_PARAMS, ...defined };
    this.#log = logger ?? consoleLogger("warn", "task");
    this.#observer = composeObservers(observers);
    const idle = this.#p.idleTimeoutFrames;
    this.#idleKinds = idle === DEFAULT_TASK_PARAMS.idleTimeoutFrames
      ? DEFAULT_IDLE_KINDS
      : new Set(idle);
    this.#done = new Promise((resolve) => (this.#finish = resolve));
  }

  /** Nanoseconds since the task was made (the pipeline clock). */
  readonly clock = (): number => Math.round((performance.now() - this.#t0) * 1e6);

  // ------------------------------------------------------------------ hooks

  /** Start reached the sink: every processor ran its start hook. */
  onStarted(fn: TaskHook<[]>): void {
    this.#onStarted = appended(this.#onStarted, fn);
  }
  /** The task ended (after run's work is done). */
  onFinished(fn: TaskHook<[StopReason]>): void {
    this.#onFinished = appended(this.#onFinished, fn);
  }
  /**
   * An Error frame reached either end of the pipeline. Once a hook is registered, reporting
   * errors is its job: the task then does not log fatal ones itself (so a failure is said once).
   */
  onError(fn: TaskHook<[message: string, fatal: boolean, processor: string | undefined]>): void {
    this.#onError = appended(this.#onError, fn);
  }
  /** No activity frame within the idle timeout. */
  onIdleTimeout(fn: TaskHook<[]>): void {
    this.#onIdle = appended(this.#onIdle, fn);
  }
  /** No heartbeat reached the sink within the monitor window (argument: seconds since last). */
  onHeartbeatTimeout(fn: TaskHook<[seconds: number]>): void {
    this.#onHeartbeatTimeout = appended(this.#onHeartbeatTimeout, fn);
  }
  /**
   * A frame of one of `kinds` reached the sink. A Set is kept as given (one Set shared by every
   * call costs no memory per call); an array is copied into a new one.
   */
  onFrameReachedDownstream(
    kinds: readonly FrameKind[] | ReadonlySet<FrameKind>,
    fn: TaskHook<[Frame]>,
  ): void {
    this.#reachedDown = appended(this.#reachedDown, { kinds: kindSet(kinds), fn });
  }
  /** A frame of one of `kinds` reached the source (travelling upstream); `kinds` as above. */
  onFrameReachedUpstream(
    kinds: readonly FrameKind[] | ReadonlySet<FrameKind>,
    fn: TaskHook<[Frame]>,
  ): void {
    this.#reachedUp = appended(this.#reachedUp, { kinds: kindSet(kinds), fn });
  }

  // ------------------------------------------------------------------ control

  /** True once the task has ended. */
  hasFinished(): boolean {
    return this.#finished;
  }

  /** Queue a frame at the head. Waits while the head's normal channel is full. */
  queueFrame(frame: Frame): Promise<void> {
    if (this.#finished) return Promise.resolve();
    const w = this.#wiring;
    if (w === undefined || !this.#started && frame.kind !== "Cancel") {
      (this.#pending ??= []).push(frame);
      return Promise.resolve();
    }
    this.#inject(frame);
    return w.head.isFull() ? w.head.waitWritable() : Promise.resolve();
  }

  /** Queue frames in order (backpressure applies between them). */
  async queueFrames(frames: Iterable<Frame> | AsyncIterable<Frame>): Promise<void> {
    for await (const f of frames) await this.queueFrame(f);
  }

  /** Queue End: the pipeline drains and shuts down. */
  stopWhenDone(): Promise<void> {
    return this.queueFrame(makeFrame("End", {}));
  }

  /** Queue Cancel (no flush); processors are force-aborted after the cancel timeout. */
  cancel(reason?: string): void {
    if (this.#finished || this.#cancelTimer !== undefined) return;
    this.#cancelTimer = setTimeout(() => {
      this.#log.warn("cancel timed out; aborting processors", { ms: this.#p.cancelTimeoutMs });
      this.#forceAbort(reason);
    }, this.#p.cancelTimeoutMs);
    const frame = makeFrame("Cancel", reason === undefined ? {} : { reason });
    if (this.#wiring === undefined) (this.#pending ??= []).push(frame);
    else this.#inject(frame);
  }

  readonly #loopEnded = (rt: ProcessorRuntime, err: unknown): void => {
    if (err !== undefined) {
      this.#log.error("processor loop failed", { processor: rt.name, err: String(err) });
    }
  };

  /**
   * Run to completion; resolves with why the task stopped. Nothing of it stays suspended while
   * the call runs (no coroutine per task): the end arrives through the task's own promise.
   */
  run(): Promise<StopReason> {
    if (this.#ran) {
      return Promise.reject(new FlowcatError("other", "a PipelineTask can run only once"));
    }
    this.#ran = true;
    try {
      this.#begin();
    } catch (err) {
      return Promise.reject(err);
    }
    return this.#done.then((reason) => this.#afterEnd(reason));
  }

  #begin(): void {
    const setup: ProcessorSetup = {
      clock: this.clock,
      observer: this.#observer,
      cancel: this.#abort.signal,
      enableMetrics: this.#p.enableMetrics,
      enableUsageMetrics: this.#p.enableUsageMetrics,
      logger: this.#log,
      tracer: this.#tracer,
    };
    const source = new PipelineTask.#End(this, false);
    const sink = new PipelineTask.#End(this, true);
    const wiring = wirePipeline(this.#root, source, sink, setup, this.#p.channelCapacity);
    this.#wiring = wiring;
    for (const rt of wiring.runtimes) rt.start(this.#loopEnded);
    const start: StartParams = {
      audioInSampleRate: this.#p.audioInSampleRate,
      audioOutSampleRate: this.#p.audioOutSampleRate,
      enableMetrics: this.#p.enableMetrics,
      enableUsageMetrics: this.#p.enableUsageMetrics,
      enableTracing: this.#p.enableTracing,
      reportOnlyInitialTtfb: this.#p.reportOnlyInitialTtfb,
    };
    this.#inject(makeFrame("Start", { params: start }));
    // A cancel requested before run() must still win over queued work.
    const early = this.#pending?.filter((f) => f.kind === "Cancel") ?? [];
    for (const f of early) this.#inject(f);
    this.#startTimers();
  }

  async #afterEnd(reason: StopReason): Promise<StopReason> {
    this.#stopTimers();
    for (const fn of this.#onFinished) await this.#call("finished", fn, reason);
    return reason;
  }

  // ------------------------------------------------------------------ ends of the pipeline

  /**
   * The task's source or sink as a frame target: two fields and prototype methods, no closures
   * (declared inside the class so that it may call the task's private handlers).
   */
  static readonly #End = class TaskEnd implements FrameTarget {
    constructor(readonly task: PipelineTask, readonly sink: boolean) {}
    get name(): string {
      return this.sink ? "PipelineTask#sink" : "PipelineTask#source";
    }
    enqueue(frame: Frame, dir: Direction): void {
      if (this.sink) this.task.#atSink(frame, dir);
      else this.task.#atSource(frame, dir);
    }
    isFull(): boolean {
      return false;
    }
    waitWritable(): Promise<void> {
      return Promise.resolve();
    }
  };

  #inject(frame: Frame): void {
    const head = this.#wiring!.head;
    const obs = this.#observer;
    if (obs?.onPush) {
      obs.onPush({
        source: "PipelineTask#source",
        destination: head.name,
        frame,
        direction: "downstream",
        timestampNs: this.clock(),
      });
    }
    head.enqueue(frame, "downstream");
  }

  #atSource(frame: Frame, dir: Direction): void {
    if (dir !== "upstream") return;
    this.#fire(this.#reachedUp, frame);
    if (this.#idleKinds.has(frame.kind)) this.#lastActivityNs = this.clock();
    switch (frame.kind) {
      case "End":
        return this.#inject(
          makeFrame("End", frame.reason === undefined ? {} : { reason: frame.reason }),
        );
      case "Stop":
        return this.#inject(makeFrame("Stop", {}));
      case "Cancel":
        return this.cancel(frame.reason);
      case "Error":
        return this.#onErrorFrame(frame);
    }
  }

  #atSink(frame: Frame, dir: Direction): void {
    if (dir !== "downstream") return;
    this.#fire(this.#reachedDown, frame);
    if (this.#idleKinds.has(frame.kind)) this.#lastActivityNs = this.clock();
    switch (frame.kind) {
      case "Start":
        return this.#onStart();
      case "Heartbeat":
        this.#lastHeartbeatNs = this.clock();
        this.#heartbeatWarned = false;
        return;
      case "Error":
        return this.#onErrorFrame(frame);
      case "End":
      case "Stop":
      case "Cancel":
        return this.#end(stopReasonOf(frame));
    }
  }

  #onStart(): void {
    this.#started = true;
    this.#lastHeartbeatNs = this.#lastActivityNs = this.clock();
    this.#observer?.onPipelineStarted?.();
    for (const fn of this.#onStarted) void this.#call("started", fn);
    const pending = this.#pending?.filter((f) => f.kind !== "Cancel");
    this.#pending = undefined;
    if (pending !== undefined && pending.length > 0) void this.queueFrames(pending);
  }

  #onErrorFrame(frame: Extract<Frame, { kind: "Error" }>): void {
    if (frame.fatal && this.#onError.length === 0) {
      this.#log.error("fatal error", { processor: frame.processor, message: frame.message });
    }
    for (const fn of this.#onError) {
      void this.#call("error", fn, frame.message, frame.fatal, frame.processor);
    }
    if (frame.fatal) this.cancel(`fatal error: ${frame.message}`);
  }

  #end(reason: StopReason): void {
    if (this.#finished) return;
    this.#finished = true;
    if (this.#cancelTimer !== undefined) clearTimeout(this.#cancelTimer);
    this.#finish(reason);
  }

  #forceAbort(reason?: string): void {
    this.#abort.abort(new FlowcatError("closed", "pipeline task cancelled"));
    for (const rt of this.#wiring?.runtimes ?? []) rt.abort();
    this.#end(reason === undefined ? { kind: "cancel" } : { kind: "cancel", reason });
  }

  // ------------------------------------------------------------------ timers

  #startTimers(): void {
    const p = this.#p;
    if (p.enableHeartbeats) {
      this.#heartbeatTimer = setInterval(() => {
        if (!this.#started) return;
        this.#inject(makeFrame("Heartbeat", { timestampNs: this.clock() }));
        const since = (this.clock() - this.#lastHeartbeatNs) / 1e6;
        if (since > p.heartbeatMonitorMs && !this.#heartbeatWarned) {
          this.#heartbeatWarned = true;
          const seconds = Math.round(since) / 1000;
          this.#log.warn(`heartbeat not received for ${seconds} s; the pipeline may be blocked`);
          for (const fn of this.#onHeartbeatTimeout) void this.#call("heartbeat", fn, seconds);
        }
      }, p.heartbeatPeriodMs);
    }
    if (p.idleTimeoutMs !== null) this.#armIdle(p.idleTimeoutMs);
  }

  #armIdle(ms: number): void {
    this.#idleTimer = scheduleDeadline(ms, () => {
      this.#idleTimer = undefined;
      if (this.#finished) return;
      const timeout = this.#p.idleTimeoutMs!;
      const idleMs = (this.clock() - this.#lastActivityNs) / 1e6;
      if (!this.#started || idleMs < timeout) return this.#armIdle(Math.max(1, timeout - idleMs));
      this.#log.info("idle timeout", { ms: timeout });
      for (const fn of this.#onIdle) void this.#call("idle", fn);
      if (this.#p.cancelOnIdle) this.cancel("idle timeout");
      else {
        this.#lastActivityNs = this.clock();
        this.#armIdle(timeout);
      }
    });
  }

  #stopTimers(): void {
    clearInterval(this.#heartbeatTimer);
    cancelDeadline(this.#idleTimer);
    this.#heartbeatTimer = this.#idleTimer = undefined;
    if (this.#cancelTimer !== undefined) clearTimeout(this.#cancelTimer);
  }

  #fire(hooks: readonly KindHook[], frame: Frame): void {
    for (const h of hooks) {
      if (!h.kinds.has(frame.kind)) continue;
      // Called directly, as #call would (its body runs synchronously up to the first await),
      // but a synchronous hook, the common case, costs no promise per frame.
      try {
        const r = h.fn(frame);
        if (r instanceof Promise) r.catch((err) => this.#frameHookFailed(err));
      } catch (err) {
        this.#frameHookFailed(err);
      }
    }
  }

  #frameHookFailed(err: unknown): void {
    this.#log.error("frame hook failed", { err: String(err) });
  }

  async #call<A extends unknown[]>(what: string, fn: TaskHook<A>, ...args: A): Promise<void> {
    try {
      await fn(...args);
    } catch (err) {
      this.#log.error(`${what} hook failed`, { err: String(err) });
    }
  }
}
