/**
 * Process-wide figures for `/metrics`: event-loop lag and memory. The lag sampler is one timer
 * per isolate (each `--workers` worker has its own), started on the first scrape, unref'd (it
 * never keeps the process alive) and sampling twice a second: it costs nothing while nobody
 * scrapes. Lag is how late a timer fires: the time the event loop was busy with other work.
 * @module
 */

/** How often the event-loop lag is sampled, in ms. */
export const LAG_SAMPLE_MS = 500;

/** Samples the rolling maximum looks back over (10 s at {@link LAG_SAMPLE_MS}). */
export const LAG_WINDOW_SAMPLES = 20;

/** Measures how late a timer fires: the time the event loop was busy elsewhere. */
export class LagSampler {
  #timer: ReturnType<typeof setTimeout> | undefined;
  readonly #window = new Float64Array(LAG_WINDOW_SAMPLES);
  #n = 0;
  readonly #everyMs: number;
  readonly #now: () => number;

  /** A sampler firing every `everyMs` (not started). */
  constructor(everyMs = LAG_SAMPLE_MS, now: () => number = () => performance.now()) {
    this.#everyMs = everyMs;
    this.#now = now;
  }

  /** True while sampling. */
  get running(): boolean {
    return this.#timer !== undefined;
  }

  /** Start sampling (idempotent). */
  start(): void {
    if (this.#timer !== undefined) return;
    this.#arm();
  }

  /** Stop sampling. */
  stop(): void {
    clearTimeout(this.#timer);
    this.#timer = undefined;
  }

  /** Record one measured lag in ms (the timer does; tests may too). */
  record(lagMs: number): void {
    this.#window[this.#n++ % LAG_WINDOW_SAMPLES] = Math.max(0, lagMs) / 1000;
  }

  /** Lag of the latest sample, in seconds (0 before any). */
  get latestSeconds(): number {
    return this.#n === 0 ? 0 : this.#window[(this.#n - 1) % LAG_WINDOW_SAMPLES];
  }

  /** Largest lag of the last {@link LAG_WINDOW_SAMPLES} samples, in seconds. */
  get maxSeconds(): number {
    let max = 0;
    for (let i = 0; i < Math.min(this.#n, LAG_WINDOW_SAMPLES); i++) {
      if (this.#window[i] > max) max = this.#window[i];
    }
    return max;
  }

  #arm(): void {
    const due = this.#now() + this.#everyMs;
    this.#timer = setTimeout(() => {
      this.record(this.#now() - due);
      this.#arm();
    }, this.#everyMs);
    Deno.unrefTimer(this.#timer);
  }
}

let shared: LagSampler | undefined;

/** This isolate's lag sampler (one per isolate; {@link LagSampler.start} it when read). */
export function processLagSampler(): LagSampler {
  shared ??= new LagSampler();
  return shared;
}

/** This isolate's memory, in bytes (no permission needed). */
export function processMemory(): Deno.MemoryUsage {
  return Deno.memoryUsage();
}
