/**
 * Pipelines: {@link Pipeline} (a nestable chain) and {@link ParallelPipeline} (fan-out to every
 * branch, fan-in with de-duplication and lifecycle synchronisation).
 *
 * Both are structural: when a task runs, they are flattened into direct links between leaf
 * processors, so nesting costs no hop and no loop. A pipeline's Source and Sink are those
 * link points. See docs/architecture.md.
 *
 * @example
 * ```ts
 * import { FrameProcessor, ParallelPipeline, Pipeline } from "@flowcat/flowcat";
 * const p = new Pipeline([
 *   new FrameProcessor("in"),
 *   new ParallelPipeline([[new FrameProcessor("a")], [new FrameProcessor("b")]]),
 *   new FrameProcessor("out"),
 * ]);
 * ```
 * @module
 */

import { DEFAULT_CHANNEL_CAPACITY, type FrameTarget } from "./channel.ts";
import type { Direction, Frame } from "./frames.ts";
import { FrameProcessor, type ProcessorSetup } from "./processor.ts";
import { ProcessorRuntime } from "./runtime.ts";

/** A chain of processors; itself a processor, so pipelines nest. */
export class Pipeline extends FrameProcessor {
  /** The processors, source side first. */
  readonly processors: readonly FrameProcessor[];

  /** Make a pipeline of `processors` (source side first). */
  constructor(processors: readonly FrameProcessor[], name?: string) {
    super(name);
    this.processors = [...processors];
  }
}

/** Branches that each see every frame; their output merges into one stream. */
export class ParallelPipeline extends FrameProcessor {
  /** The branches. */
  readonly branches: readonly Pipeline[];

  /** Make a parallel block; a branch may be given as a list of processors. */
  constructor(branches: readonly (Pipeline | readonly FrameProcessor[])[], name?: string) {
    super(name);
    if (branches.length === 0) throw new TypeError("ParallelPipeline needs at least one branch");
    this.branches = branches.map((b) => b instanceof Pipeline ? b : new Pipeline(b));
  }
}

/** A wired piece of a pipeline: where frames from outside enter, and how to connect it. */
interface Segment {
  /** Entry for downstream frames coming from the upstream neighbour. */
  head: FrameTarget;
  /** Entry for upstream frames coming from the downstream neighbour. */
  tail: FrameTarget;
  connect(prev: FrameTarget, next: FrameTarget): void;
}

/** Result of {@link wirePipeline}. */
export interface Wiring {
  /** Where frames enter the wired chain (the first processor). */
  head: FrameTarget;
  /** Where frames leave the wired chain (the last processor). */
  tail: FrameTarget;
  /** Every leaf processor's runtime, source side first. */
  runtimes: ProcessorRuntime[];
}

/** Flatten `root` into runtimes linked between `prev` (upstream end) and `next` (downstream end). */
export function wirePipeline(
  root: FrameProcessor,
  prev: FrameTarget,
  next: FrameTarget,
  setup: ProcessorSetup,
  capacity = DEFAULT_CHANNEL_CAPACITY,
): Wiring {
  const runtimes: ProcessorRuntime[] = [];
  const build = (p: FrameProcessor): Segment => {
    if (p instanceof Pipeline) return chain(p.processors.map(build), p.name);
    if (p instanceof ParallelPipeline) return parallel(p.branches.map(build), p.name);
    const rt = new ProcessorRuntime(p, setup, capacity);
    runtimes.push(rt);
    return {
      head: rt,
      tail: rt,
      connect(prev, next) {
        rt.prev = prev;
        rt.next = next;
      },
    };
  };
  const seg = build(root);
  seg.connect(prev, next);
  // slice(): an exact-length copy, not the pushed array's spare slots, for the task's lifetime.
  return { head: seg.head, tail: seg.tail, runtimes: runtimes.slice() };
}

function chain(segs: Segment[], name: string): Segment {
  if (segs.length === 0) return relay(name);
  return {
    head: segs[0].head,
    tail: segs[segs.length - 1].tail,
    connect(prev, next) {
      for (let i = 0; i < segs.length; i++) {
        segs[i].connect(
          i === 0 ? prev : segs[i - 1].tail,
          i === segs.length - 1 ? next : segs[i + 1].head,
        );
      }
    },
  };
}

/** An empty pipeline: frames pass straight through. */
function relay(name: string): Segment {
  let prev!: FrameTarget;
  let next!: FrameTarget;
  const target: FrameTarget = {
    name,
    enqueue: (f, d) => (d === "downstream" ? next : prev).enqueue(f, d),
    isFull: () => next.isFull(),
    waitWritable: () => next.waitWritable(),
  };
  return {
    head: target,
    tail: target,
    connect(p, n) {
      prev = p;
      next = n;
    },
  };
}

function parallel(branches: Segment[], name: string): Segment {
  const down = new FanIn(`${name}#fan-in`, branches.length, "downstream");
  const up = new FanIn(`${name}#fan-in-up`, branches.length, "upstream");
  const fanOut = (fanIn: FanIn, entry: (s: Segment) => FrameTarget): FrameTarget => {
    const targets = branches.map(entry);
    return {
      name: `${name}#fan-out`,
      enqueue(frame, d) {
        fanIn.expect(frame);
        for (const b of targets) b.enqueue(frame, d);
      },
      isFull: () => targets.some((b) => b.isFull()),
      async waitWritable() {
        for (const b of targets) if (b.isFull()) await b.waitWritable();
      },
    };
  };
  return {
    head: fanOut(down, (s) => s.head),
    tail: fanOut(up, (s) => s.tail),
    connect(prev, next) {
      down.out = next;
      up.out = prev;
      for (const b of branches) b.connect(up, down);
    },
  };
}

function isLifecycle(f: Frame): boolean {
  const k = f.kind;
  return k === "Start" || k === "End" || k === "Stop" || k === "Cancel";
}

/** Bound on remembered fanned-out ids, so frames a branch swallowed do not pile up. */
const MAX_PENDING_IDS = 4096;

/**
 * Merge point of a parallel block, one per direction. A frame fanned to N branches leaves once
 * (first arrival wins). A lifecycle frame (Start, End, Stop, Cancel) leaves once all N
 * branches have passed it. While a Start is being synchronised, other output is held and
 * flushed right after Start, so nothing overtakes it. Output arriving while an End / Stop /
 * Cancel is being synchronised passes straight on: a slow branch's last frames were produced
 * before its End, so they must leave before the merged End (holding them past End would drop
 * them at the next, already stopped, processor).
 */
class FanIn implements FrameTarget {
  out!: FrameTarget;
  readonly #pending = new Map<number, number>();
  readonly #sync = new Map<number, number>();
  #startsSyncing = 0;
  #held: Frame[] = [];

  constructor(readonly name: string, readonly branches: number, readonly dir: Direction) {}

  /** A frame is being fanned out: remember it so its N copies merge back into one. */
  expect(frame: Frame): void {
    if (this.branches === 1) return;
    if (this.dir === "downstream" && isLifecycle(frame)) {
      this.#sync.set(frame.id, 0);
      if (frame.kind === "Start") this.#startsSyncing++;
      return;
    }
    this.#pending.set(frame.id, this.branches);
    if (this.#pending.size > MAX_PENDING_IDS) {
      this.#pending.delete(this.#pending.keys().next().value as number);
    }
  }

  enqueue(frame: Frame, d: Direction): void {
    if (this.branches === 1) return this.out.enqueue(frame, d);
    const passed = this.#sync.get(frame.id);
    if (passed !== undefined) {
      if (passed + 1 < this.branches) return void this.#sync.set(frame.id, passed + 1);
      this.#sync.delete(frame.id);
      this.out.enqueue(frame, d);
      if (frame.kind === "Start") this.#startsSyncing--;
      if (this.#startsSyncing === 0 && this.#held.length > 0) {
        const held = this.#held;
        this.#held = [];
        for (const f of held) this.out.enqueue(f, d);
      }
      return;
    }
    const left = this.#pending.get(frame.id);
    if (left !== undefined) {
      if (left === 1) this.#pending.delete(frame.id);
      else this.#pending.set(frame.id, left - 1);
      if (left !== this.branches) return;
    }
    if (this.#startsSyncing > 0) this.#held.push(frame);
    else this.out.enqueue(frame, d);
  }

  isFull(): boolean {
    return this.out.isFull();
  }

  waitWritable(): Promise<void> {
    return this.out.waitWritable();
  }
}
