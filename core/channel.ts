/**
 * Frame queues: an array-backed ring of (frame, direction) pairs with no per-entry allocation.
 * Each processor owns an unbounded system queue and a normal queue bounded at
 * {@link DEFAULT_CHANNEL_CAPACITY} frames (the producer waits while it is full).
 * @module
 */

import { type Direction, type Frame, isUninterruptible } from "./frames.ts";

/** Default capacity of a processor's normal (Data and Control) channel: about 1.3 s of audio. */
export const DEFAULT_CHANNEL_CAPACITY = 64;

/** The ring of every queue that has not held a frame yet (shared, never written). */
const NO_SLOTS: (Frame | Direction | undefined)[] = [];

/**
 * FIFO ring of frames and their directions. Grows by doubling; never shrinks below its start
 * size. `shift` returns the frame and leaves its direction in {@link FrameQueue.lastDirection}.
 * The ring is made on the first push: a queue that never carries a frame holds none.
 */
export class FrameQueue {
  /** Frame k of the ring at `2 * k`, its direction at `2 * k + 1`: one array, not two. */
  #slots: (Frame | Direction | undefined)[] = NO_SLOTS;
  /** Ring capacity minus one; -1 until the first push. */
  #mask = -1;
  readonly #initial: number;
  #head = 0;
  #size = 0;
  /** Direction of the frame most recently returned by {@link FrameQueue.shift}. */
  lastDirection: Direction = "downstream";

  /** Make a queue with room for `initial` frames (rounded up to a power of two, at least 2). */
  constructor(initial = 8) {
    let cap = 2;
    while (cap < initial) cap <<= 1;
    this.#initial = cap;
  }

  /** Number of queued frames. */
  get size(): number {
    return this.#size;
  }

  /** Append a frame. */
  push(frame: Frame, direction: Direction): void {
    if (this.#size > this.#mask) this.#grow();
    const i = ((this.#head + this.#size) & this.#mask) << 1;
    this.#slots[i] = frame;
    this.#slots[i + 1] = direction;
    this.#size++;
  }

  /** Remove and return the oldest frame, or `undefined` when empty. */
  shift(): Frame | undefined {
    if (this.#size === 0) return undefined;
    const i = this.#head << 1;
    const frame = this.#slots[i] as Frame;
    this.#slots[i] = undefined;
    this.lastDirection = this.#slots[i + 1] as Direction;
    this.#head = (this.#head + 1) & this.#mask;
    this.#size--;
    return frame;
  }

  /** Drop every interruptible frame, keeping uninterruptible ones in order. Returns the count dropped. */
  dropInterruptible(): number {
    const n = this.#size;
    const slots = this.#slots;
    let kept = 0;
    for (let k = 0; k < n; k++) {
      const i = ((this.#head + k) & this.#mask) << 1;
      const f = slots[i] as Frame;
      if (isUninterruptible(f)) {
        const j = ((this.#head + kept) & this.#mask) << 1;
        slots[j] = f;
        slots[j + 1] = slots[i + 1];
        kept++;
      }
    }
    for (let k = kept; k < n; k++) slots[((this.#head + k) & this.#mask) << 1] = undefined;
    this.#size = kept;
    return n - kept;
  }

  /** Drop everything. */
  clear(): void {
    for (let k = 0; k < this.#size; k++) {
      this.#slots[((this.#head + k) & this.#mask) << 1] = undefined;
    }
    this.#head = 0;
    this.#size = 0;
  }

  #grow(): void {
    const cap = this.#mask + 1;
    const next = cap === 0 ? this.#initial : cap * 2;
    const slots: (Frame | Direction | undefined)[] = new Array(next * 2);
    for (let k = 0; k < this.#size; k++) {
      const i = ((this.#head + k) & this.#mask) << 1;
      slots[2 * k] = this.#slots[i];
      slots[2 * k + 1] = this.#slots[i + 1];
    }
    this.#slots = slots;
    this.#head = 0;
    this.#mask = next - 1;
  }
}

/**
 * Anything frames can be pushed into: a processor's inbox, a parallel-pipeline fan-out or
 * fan-in, or a task's source and sink.
 */
export interface FrameTarget {
  /** Name shown to observers. */
  readonly name: string;
  /** Accept a frame. Never blocks; see {@link FrameTarget.isFull} for backpressure. */
  enqueue(frame: Frame, direction: Direction): void;
  /** True while the normal channel is at capacity (the producer should wait). */
  isFull(): boolean;
  /** Resolves once the normal channel has room. */
  waitWritable(): Promise<void>;
}
