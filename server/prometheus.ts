/**
 * Prometheus metrics with no dependency: counters, gauges and histograms, each with optional
 * labels, exposed in the text format (version 0.0.4; lines, escaping and merging in
 * server/prometheus_text.ts) with cumulative `le` buckets.
 *
 * Hot paths resolve a labelled child once ({@link Counter.labels}) and then only add to plain
 * numbers: nothing is allocated per observation.
 *
 * @example
 * ```ts
 * const reg = new Registry();
 * const ended = reg.counter("calls_ended_total", "Calls ended, by reason.", ["reason"]);
 * ended.labels("caller_hung_up").inc();
 * const latency = reg.histogram("turn_latency_seconds", "Turn latency.", [], [0.5, 1, 2]);
 * latency.labels().observe(0.7);
 * reg.gauge("active_calls", "Calls running now.").collect(() => 3);
 * console.log(reg.expose());
 * ```
 * @module
 */

import {
  checkNames,
  escapeLabelValue,
  type FamilySnapshot,
  formatValue,
  labelText,
  renderFamilies,
} from "./prometheus_text.ts";

export {
  escapeHelp,
  escapeLabelValue,
  type FamilySnapshot,
  formatValue,
  mergeFamilies,
  PROMETHEUS_CONTENT_TYPE,
  renderFamilies,
} from "./prometheus_text.ts";

/**
 * Where a child series also sends what it records (an OpenTelemetry instrument): a counter's
 * increments, a gauge's changes (the difference), a histogram's observations.
 */
export type MirrorSink = (value: number) => void;

/** Makes the {@link MirrorSink} of one child from its labels (called once per child). */
export type MirrorFactory = (labels: Readonly<Record<string, string>>) => MirrorSink;

/** A child that can mirror what it records. */
export interface Mirrored {
  /** Where the child's records also go; `undefined` without a mirror. */
  mirror: MirrorSink | undefined;
}

/** What every metric family has: a name, a help text, label names and one child per label set. */
export abstract class Family<C extends Mirrored> {
  readonly #children = new Map<string, { values: string[]; child: C }>();
  #mirror: MirrorFactory | undefined;

  /** A family named `name` (checked against the format's rules). */
  constructor(
    /** Metric name. */
    readonly name: string,
    /** HELP text. */
    readonly help: string,
    /** Label names, in the order {@link Family.labels} takes their values. */
    readonly labelNames: readonly string[],
  ) {
    checkNames(name, labelNames);
  }

  /** The child for these label values (made on first use; keep it on hot paths). */
  labels(...values: string[]): C {
    if (values.length !== this.labelNames.length) {
      throw new TypeError(
        `${this.name}: expected ${this.labelNames.length} label values, got ${values.length}`,
      );
    }
    const key = values.join("\u0000");
    let entry = this.#children.get(key);
    if (entry === undefined) {
      entry = { values: values.map(String), child: this.make() };
      if (this.#mirror !== undefined) entry.child.mirror = this.#mirror(this.#labelsOf(entry));
      this.#children.set(key, entry);
    }
    return entry.child;
  }

  /**
   * Send what every child records, from now on, to the sink `make` returns for its labels too
   * (existing children included). Without a mirror a child records into plain numbers only.
   */
  mirror(make: MirrorFactory): void {
    this.#mirror = make;
    for (const entry of this.#children.values()) entry.child.mirror = make(this.#labelsOf(entry));
  }

  #labelsOf(entry: { values: string[] }): Record<string, string> {
    return Object.fromEntries(this.labelNames.map((n, i) => [n, entry.values[i]]));
  }

  /** Children in the order they were made. */
  protected children(): Iterable<{ values: string[]; child: C }> {
    return this.#children.values();
  }

  /** A new child series. */
  protected abstract make(): C;
  /** The TYPE word. */
  abstract readonly type: "counter" | "gauge" | "histogram";
  /** Sample lines (without HELP and TYPE), each with the rendered constant labels `fixed`. */
  abstract samples(out: string[], fixed: string): void;
}

/** One counter series: only goes up. */
export class CounterChild {
  /** Current value. */
  value = 0;
  /** Where increments are mirrored (see {@link Family.mirror}). */
  mirror: MirrorSink | undefined;
  /** Add `n` (default 1); a negative `n` is ignored. */
  inc(n = 1): void {
    if (!(n > 0)) return;
    this.value += n;
    this.mirror?.(n);
  }
}

/** A counter family. */
export class Counter extends Family<CounterChild> {
  /** TYPE word. */
  readonly type = "counter";
  /** A new child series. */
  protected make(): CounterChild {
    return new CounterChild();
  }
  /** Sample lines. */
  samples(out: string[], fixed: string): void {
    for (const { values, child } of this.children()) {
      const labels = labelText(fixed, this.labelNames, values);
      out.push(`${this.name}${labels} ${formatValue(child.value)}`);
    }
  }
}

/** One gauge series: set, or moved up and down. */
export class GaugeChild {
  /** Current value. */
  value = 0;
  /** Where changes are mirrored, as differences (see {@link Family.mirror}). */
  mirror: MirrorSink | undefined;
  /** Set the value. */
  set(v: number): void {
    const d = v - this.value;
    this.value = v;
    if (d !== 0) this.mirror?.(d);
  }
  /** Add `n` (default 1). */
  inc(n = 1): void {
    this.value += n;
    this.mirror?.(n);
  }
  /** Subtract `n` (default 1). */
  dec(n = 1): void {
    this.value -= n;
    this.mirror?.(-n);
  }
}

/** A gauge family; {@link Gauge.collect} reads an unlabelled value at scrape time instead. */
export class Gauge extends Family<GaugeChild> {
  /** TYPE word. */
  readonly type = "gauge";
  #collect: (() => number) | undefined;
  /** A new child series. */
  protected make(): GaugeChild {
    return new GaugeChild();
  }
  /** The function {@link Gauge.collect} set, when the value is read at scrape time. */
  get collector(): (() => number) | undefined {
    return this.#collect;
  }
  /** Read the (unlabelled) value from `fn` at each scrape. */
  collect(fn: () => number): this {
    if (this.labelNames.length > 0) throw new TypeError(`${this.name}: collect needs no labels`);
    this.#collect = fn;
    return this;
  }
  /** Sample lines. */
  samples(out: string[], fixed: string): void {
    if (this.#collect !== undefined) {
      out.push(`${this.name}${labelText(fixed, [], [])} ${formatValue(this.#collect())}`);
      return;
    }
    for (const { values, child } of this.children()) {
      const labels = labelText(fixed, this.labelNames, values);
      out.push(`${this.name}${labels} ${formatValue(child.value)}`);
    }
  }
}

/** One histogram series: counts per bucket (not cumulative until exposed), sum and count. */
export class HistogramChild {
  /** Observations per bucket, the last one for values above every bound (+Inf). */
  readonly counts: Float64Array;
  /** Sum of every observation. */
  sum = 0;
  /** Number of observations. */
  count = 0;
  /** Where observations are mirrored (see {@link Family.mirror}). */
  mirror: MirrorSink | undefined;

  /** A series over the upper bounds `bounds` (sorted). */
  constructor(private readonly bounds: Float64Array) {
    this.counts = new Float64Array(bounds.length + 1);
  }

  /** Record one value. */
  observe(v: number): void {
    const b = this.bounds;
    let i = 0;
    while (i < b.length && v > b[i]) i++;
    this.counts[i]++;
    this.sum += v;
    this.count++;
    this.mirror?.(v);
  }
}

/** A histogram family with fixed upper bounds (`le`, inclusive); `+Inf` is added. */
export class Histogram extends Family<HistogramChild> {
  /** TYPE word. */
  readonly type = "histogram";
  readonly #bounds: Float64Array;

  /** A histogram family with upper bounds `buckets` (sorted here; `+Inf` is implied). */
  constructor(name: string, help: string, labelNames: readonly string[], buckets: number[]) {
    super(name, help, labelNames);
    if (labelNames.includes("le")) throw new TypeError(`${name}: "le" is reserved`);
    const sorted = [...buckets].filter((b) => Number.isFinite(b)).sort((a, b) => a - b);
    if (sorted.length === 0 || new Set(sorted).size !== sorted.length) {
      throw new TypeError(`${name}: buckets must be distinct finite numbers`);
    }
    this.#bounds = Float64Array.from(sorted);
  }

  /** The upper bounds, sorted (without `+Inf`). */
  get buckets(): number[] {
    return [...this.#bounds];
  }

  /** A new child series. */
  protected make(): HistogramChild {
    return new HistogramChild(this.#bounds);
  }

  /** Sample lines: cumulative buckets, then sum and count, per child. */
  samples(out: string[], fixed: string): void {
    const bounds = this.#bounds;
    for (const { values, child } of this.children()) {
      let cumulative = 0;
      for (let i = 0; i <= bounds.length; i++) {
        cumulative += child.counts[i];
        const le = `le="${i < bounds.length ? formatValue(bounds[i]) : "+Inf"}"`;
        out.push(
          `${this.name}_bucket${labelText(fixed, this.labelNames, values, le)} ${
            formatValue(cumulative)
          }`,
        );
      }
      const l = labelText(fixed, this.labelNames, values);
      out.push(`${this.name}_sum${l} ${formatValue(child.sum)}`);
      out.push(`${this.name}_count${l} ${formatValue(child.count)}`);
    }
  }
}

/** A set of metric families, exposed together. */
export class Registry {
  readonly #families = new Map<string, Family<Mirrored>>();

  /** Every family, in the order they were added. */
  families(): (Counter | Gauge | Histogram)[] {
    return [...this.#families.values()] as (Counter | Gauge | Histogram)[];
  }

  /** Add a counter family. */
  counter(name: string, help: string, labelNames: readonly string[] = []): Counter {
    return this.#add(new Counter(name, help, labelNames));
  }

  /** Add a gauge family. */
  gauge(name: string, help: string, labelNames: readonly string[] = []): Gauge {
    return this.#add(new Gauge(name, help, labelNames));
  }

  /** Add a histogram family with upper bounds `buckets` (seconds, bytes...). */
  histogram(
    name: string,
    help: string,
    labelNames: readonly string[],
    buckets: number[],
  ): Histogram {
    return this.#add(new Histogram(name, help, labelNames, buckets));
  }

  /**
   * Every family's lines now, each sample carrying the constant labels `constLabels` too (e.g.
   * `{ worker: "1" }`).
   */
  collect(constLabels: Record<string, string> = {}): FamilySnapshot[] {
    for (const n of Object.keys(constLabels)) checkNames("constant_label", [n]);
    const fixed = Object.entries(constLabels).map(([n, v]) => `${n}="${escapeLabelValue(v)}"`)
      .join(",");
    return [...this.#families.values()].map((f) => {
      const samples: string[] = [];
      f.samples(samples, fixed);
      return { name: f.name, help: f.help, type: f.type, samples };
    });
  }

  /** Every family in the text format: HELP, TYPE, then its samples; ends with a newline. */
  expose(constLabels: Record<string, string> = {}): string {
    return renderFamilies(this.collect(constLabels));
  }

  #add<F extends Family<Mirrored>>(f: F): F {
    if (this.#families.has(f.name)) throw new TypeError(`metric ${f.name} registered twice`);
    this.#families.set(f.name, f);
    return f;
  }
}
