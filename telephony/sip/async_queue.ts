/**
 * A small single-consumer async queue: producers `push`, the consumer awaits `next()`, and
 * `end()` makes every later `next()` resolve undefined once the queue is drained.
 * @module
 */

/** An unbounded-by-default FIFO with an awaiting consumer. */
export class AsyncQueue<T> {
  #items: T[] = [];
  #waiters: ((v: T | undefined) => void)[] = [];
  #ended = false;
  readonly #limit: number;
  /** Items dropped because the queue was at its limit (oldest first). */
  dropped = 0;

  /** A queue that keeps at most `limit` items, dropping the oldest beyond it. */
  constructor(limit = Infinity) {
    this.#limit = limit;
  }

  /** Items waiting. */
  get size(): number {
    return this.#items.length;
  }

  /** True once {@link end} was called. */
  get ended(): boolean {
    return this.#ended;
  }

  /** Add an item (ignored after {@link end}). */
  push(item: T): void {
    if (this.#ended) return;
    const w = this.#waiters.shift();
    if (w !== undefined) {
      w(item);
      return;
    }
    this.#items.push(item);
    if (this.#items.length > this.#limit) {
      this.#items.shift();
      this.dropped++;
    }
  }

  /** The next item; undefined once ended and drained. */
  next(): Promise<T | undefined> {
    if (this.#items.length > 0) return Promise.resolve(this.#items.shift());
    if (this.#ended) return Promise.resolve(undefined);
    return new Promise((resolve) => this.#waiters.push(resolve));
  }

  /** No more items: waiting consumers get undefined; queued items are still delivered. */
  end(): void {
    if (this.#ended) return;
    this.#ended = true;
    for (const w of this.#waiters.splice(0)) w(undefined);
  }
}
