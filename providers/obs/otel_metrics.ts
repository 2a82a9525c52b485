/**
 * The agent server's metrics over OpenTelemetry as well as Prometheus: every family the server
 * keeps for `GET /metrics` is mirrored into an instrument of `npm:@opentelemetry/api`'s meter,
 * which Deno exports over OTLP under `OTEL_DENO=true` (`/v1/metrics`, every
 * `OTEL_METRIC_EXPORT_INTERVAL` ms). The server imports this module only then (see
 * server/tracing.ts): with export off nothing here is loaded, and a family without a mirror
 * records into plain numbers only.
 *
 * Counters become monotonic `Counter`s, a labelled gauge an `UpDownCounter` fed its changes, a
 * histogram a `Histogram` with the same bucket bounds, and a gauge read at scrape time
 * (event-loop lag, memory) an `ObservableGauge` read at export time. Each child resolves its
 * attributes once; an observation costs one instrument call. Names: docs/observability.md
 * ("Metrics over OTLP").
 *
 * @example
 * ```ts
 * import { mirrorToOtel } from "./otel_metrics.ts";
 * type Mirrored = Parameters<typeof mirrorToOtel>[0][number];
 * declare const turnLatency: Mirrored["family"];
 * mirrorToOtel([{ family: turnLatency, name: "flowcat.turn.latency", unit: "s" }]);
 * ```
 * @module
 */

import { type Attributes, type Meter, metrics } from "npm:@opentelemetry/api@1.10.0";

/** Name of the meter (the instrumentation scope of every metric). */
export const METER_NAME = "flowcat";

/** What this module needs of a metric family (server/prometheus.ts's `Family`). */
export interface MirrorableFamily {
  /** Prometheus name. */
  readonly name: string;
  /** Help text (the instrument's description). */
  readonly help: string;
  /** Kind of family. */
  readonly type: "counter" | "gauge" | "histogram";
  /** Histogram bucket bounds. */
  readonly buckets?: readonly number[];
  /** A gauge's value read at scrape time, when it has no labelled children. */
  readonly collector?: (() => number) | undefined;
  /** Send what each child records to the sink made for its labels. */
  mirror(make: (labels: Readonly<Record<string, string>>) => (value: number) => void): void;
}

/** One family and the instrument it becomes. */
export interface MirroredMetric {
  /** The family. */
  family: MirrorableFamily;
  /** Instrument name (OpenTelemetry style: dotted, no unit suffix). */
  name: string;
  /** UCUM unit: `s`, `By`, `{call}`, ... */
  unit: string;
}

/**
 * Mirror each family into an instrument of `meter` (default: the global `flowcat` meter), every
 * point carrying `constant` attributes too (a worker thread's `{ worker: "1" }`: the isolates of
 * one process share Deno's exporter, which adds up same-named instruments of equal attributes).
 */
export function mirrorToOtel(
  list: readonly MirroredMetric[],
  constant: Readonly<Record<string, string>> = {},
  meter: Meter = metrics.getMeter(METER_NAME),
): void {
  for (const { family, name, unit } of list) {
    const description = family.help;
    if (family.type === "counter") {
      const c = meter.createCounter(name, { description, unit });
      family.mirror((labels) => {
        const attributes: Attributes = { ...constant, ...labels };
        return (v) => c.add(v, attributes);
      });
    } else if (family.type === "histogram") {
      const h = meter.createHistogram(name, {
        description,
        unit,
        advice: { explicitBucketBoundaries: [...(family.buckets ?? [])] },
      });
      family.mirror((labels) => {
        const attributes: Attributes = { ...constant, ...labels };
        return (v) => h.record(v, attributes);
      });
    } else if (family.collector !== undefined) {
      const read = family.collector;
      meter.createObservableGauge(name, { description, unit })
        .addCallback((result) => result.observe(read(), constant));
    } else {
      const u = meter.createUpDownCounter(name, { description, unit });
      family.mirror((labels) => {
        const attributes: Attributes = { ...constant, ...labels };
        return (v) => u.add(v, attributes);
      });
    }
  }
}
