/** Test helpers for the core: recording processors and small waits. */

import {
  type Direction,
  type Frame,
  FrameProcessor,
  type Link,
  type ProcessorSetup,
  type StartParams,
  type StopReason,
} from "../mod.ts";

/** One thing a {@link Recorder} saw. */
export interface Seen {
  kind: string;
  dir: Direction;
  id: number;
  frame: Frame;
}

/** Records every hook call and every frame reaching processFrame, then forwards it. */
export class Recorder extends FrameProcessor {
  readonly frames: Seen[] = [];
  readonly events: string[] = [];
  link?: Link;
  setup?: ProcessorSetup;
  constructor(name?: string, readonly log?: string[]) {
    super(name);
  }
  override start(setup: ProcessorSetup, _p: StartParams, link: Link): void {
    this.setup = setup;
    this.link = link;
    this.#ev("start");
  }
  override processFrame(frame: Frame, dir: Direction, link: Link): void | Promise<void> {
    this.frames.push({ kind: frame.kind, dir, id: frame.id, frame });
    link.push(frame, dir);
  }
  override onInterruption(): void {
    this.#ev("interruption");
  }
  override stop(reason: StopReason): void {
    this.#ev(`stop:${reason.kind}`);
  }
  kinds(dir?: Direction): string[] {
    return this.frames.filter((f) => dir === undefined || f.dir === dir).map((f) => f.kind);
  }
  #ev(e: string) {
    this.events.push(e);
    this.log?.push(`${this.name}:${e}`);
  }
}

/** Resolve after `ms` milliseconds. */
export const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));

/** Poll `cond` every 2 ms until true or `ms` passes (then throw). */
export async function until(cond: () => boolean, ms = 2000, what = "condition"): Promise<void> {
  const end = performance.now() + ms;
  while (!cond()) {
    if (performance.now() > end) throw new Error(`timed out waiting for ${what}`);
    await sleep(2);
  }
}

/**
 * Run `task` with `script` as its started hook. A failing script cancels the task and the
 * failure is rethrown, so an assertion inside the script fails the test instead of hanging it.
 */
export async function drive<T extends { kind: string }>(
  task: {
    onStarted(fn: () => void | Promise<void>): void;
    cancel(reason?: string): void;
    run(): Promise<T>;
  },
  script: () => void | Promise<void>,
): Promise<T> {
  let failure: unknown;
  task.onStarted(async () => {
    try {
      await script();
    } catch (err) {
      failure = err;
      task.cancel("test script failed");
    }
  });
  const reason = await task.run();
  if (failure !== undefined) throw failure;
  return reason;
}
