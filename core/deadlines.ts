/**
 * One isolate-wide timer for every call's long deadlines (the call time limit, the task's idle
 * watch): a min-heap of due times served by a single `setTimeout` set for the earliest. A
 * runtime timer costs about 0.4 KB of heap per call for as long as it is armed (its timer object,
 * callback and bookkeeping); a {@link Deadline} costs one small object and a heap slot. A
 * deadline never fires early; it fires in due order with the others that fell due meanwhile.
 *
 * @example
 * ```ts
 * import { cancelDeadline, scheduleDeadline } from "./deadlines.ts";
 * const d = scheduleDeadline(60_000, () => console.log("a minute passed"));
 * cancelDeadline(d); // never fires
 * ```
 * @module
 */

/** A scheduled callback; pass it to {@link cancelDeadline} to drop it. */
export class Deadline {
  /** `performance.now()` at or after which it fires. */
  readonly due: number;
  /** What runs when it falls due. */
  readonly fire: () => void;
  /** Position in the heap; -1 once fired or cancelled. */
  at = -1;

  /** Use {@link scheduleDeadline}. */
  constructor(due: number, fire: () => void) {
    this.due = due;
    this.fire = fire;
  }
}

/** The longest delay a runtime timer takes (2^31 - 1 ms, about 24.8 days). */
const MAX_TIMER_MS = 2 ** 31 - 1;

const heap: Deadline[] = [];
let timer: ReturnType<typeof setTimeout> | undefined;
/** The due time the timer is set for (Infinity when none). */
let armedFor = Infinity;

function swap(i: number, j: number): void {
  const a = heap[i];
  const b = heap[j];
  heap[i] = b;
  heap[j] = a;
  a.at = j;
  b.at = i;
}

function up(i: number): void {
  while (i > 0) {
    const parent = (i - 1) >> 1;
    if (heap[parent].due <= heap[i].due) return;
    swap(i, parent);
    i = parent;
  }
}

function down(i: number): void {
  for (;;) {
    const l = 2 * i + 1;
    if (l >= heap.length) return;
    const r = l + 1;
    const min = r < heap.length && heap[r].due < heap[l].due ? r : l;
    if (heap[i].due <= heap[min].due) return;
    swap(i, min);
    i = min;
  }
}

function removeAt(i: number): void {
  const last = heap.pop()!;
  if (i < heap.length) {
    heap[i] = last;
    last.at = i;
    up(i);
    down(last.at);
  }
}

/** Set the timer for the earliest deadline (or clear it when there is none). */
function arm(): void {
  const first = heap[0];
  if (first === undefined) {
    if (timer !== undefined) clearTimeout(timer);
    timer = undefined;
    armedFor = Infinity;
    return;
  }
  if (timer !== undefined && armedFor <= first.due) return;
  if (timer !== undefined) clearTimeout(timer);
  armedFor = first.due;
  // Rounded up: a runtime timer may fire up to a millisecond before a fractional due time.
  // Capped: a longer delay overflows the runtime's 32-bit timer and fires at once.
  const wait = Math.min(MAX_TIMER_MS, Math.max(0, Math.ceil(first.due - performance.now())));
  timer = setTimeout(serve, wait);
}

function serve(): void {
  timer = undefined;
  armedFor = Infinity;
  const now = performance.now();
  try {
    while (heap.length > 0 && heap[0].due <= now) {
      const d = heap[0];
      removeAt(0);
      d.at = -1;
      d.fire();
    }
  } finally {
    arm();
  }
}

/** Run `fire` once, `ms` milliseconds from now, unless cancelled first. */
export function scheduleDeadline(ms: number, fire: () => void): Deadline {
  const d = new Deadline(performance.now() + Math.max(0, ms), fire);
  d.at = heap.length;
  heap.push(d);
  up(d.at);
  arm();
  return d;
}

/** Drop `d` if it has not fired yet (safe to call more than once, or with `undefined`). */
export function cancelDeadline(d: Deadline | undefined): void {
  if (d === undefined || d.at < 0) return;
  const i = d.at;
  d.at = -1;
  removeAt(i);
  if (heap.length === 0) arm();
}

/** Deadlines waiting now (for tests and stats). */
export function pendingDeadlines(): number {
  return heap.length;
}
