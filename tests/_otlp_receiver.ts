/**
 * A local OTLP/HTTP receiver for tests: the collector end of what Deno exports under
 * `OTEL_DENO=true` with `OTEL_EXPORTER_OTLP_PROTOCOL=http/json` (metrics in `http/protobuf`, Deno's
 * default, too: tests/_otlp_protobuf.ts). It accepts `POST /v1/traces`,
 * `/v1/logs` and `/v1/metrics` (ExportTraceServiceRequest and friends in the protobuf JSON
 * mapping: ids as hex strings, 64-bit numbers as decimal strings, attributes as
 * `{key, value: {stringValue | intValue | doubleValue | boolValue | arrayValue}}`), keeps every
 * raw body (so a test can look for a secret anywhere) and flattens the spans and the metric
 * data points (sums, gauges, histograms: OTLP `Metric` in the same JSON mapping).
 */

import { decodeMetricsRequest } from "./_otlp_protobuf.ts";

/** One data point of an exported metric, as the receiver decoded it. */
export interface ReceivedPoint {
  /** Instrument name. */
  name: string;
  unit: string;
  description: string;
  /** Instrumentation scope (`flowcat` for ours). */
  scope: string;
  /** Which OTLP data field held it. */
  type: "sum" | "gauge" | "histogram";
  /** For sums: monotonic (a counter) or not (an up-down counter). */
  monotonic?: boolean;
  /** For sums and histograms: 1 delta, 2 cumulative. */
  temporality?: number;
  attributes: Record<string, unknown>;
  /** Sums and gauges: the value (`asDouble` or `asInt`). */
  value?: number;
  /** Histograms: count, sum, bounds and per-bucket (not cumulative) counts. */
  count?: number;
  sum?: number;
  bounds?: number[];
  bucketCounts?: number[];
  timeNs: bigint;
  /** The resource's attributes (service.name ...). */
  resource: Record<string, unknown>;
}

type NumberPointJson = {
  attributes?: KeyValue[];
  timeUnixNano: string;
  asDouble?: number;
  asInt?: string | number;
};
type HistogramPointJson = {
  attributes?: KeyValue[];
  timeUnixNano: string;
  count: string | number;
  sum?: number;
  bucketCounts?: (string | number)[];
  explicitBounds?: number[];
};
type MetricsRequestJson = {
  resourceMetrics?: {
    resource?: { attributes?: KeyValue[] };
    scopeMetrics?: { scope?: { name?: string }; metrics?: MetricJson[] }[];
  }[];
};
type MetricJson = {
  name: string;
  unit?: string;
  description?: string;
  sum?: { dataPoints?: NumberPointJson[]; aggregationTemporality?: number; isMonotonic?: boolean };
  gauge?: { dataPoints?: NumberPointJson[] };
  histogram?: { dataPoints?: HistogramPointJson[]; aggregationTemporality?: number };
};

/** A span as the receiver decoded it. */
export interface ReceivedSpan {
  traceId: string;
  spanId: string;
  /** "" for a root span. */
  parentSpanId: string;
  name: string;
  /** OTLP SpanKind: 1 internal, 2 server, 3 client. */
  kind: number;
  /** Instrumentation scope (`flowcat` for ours, `deno` for Deno's own). */
  scope: string;
  startNs: bigint;
  endNs: bigint;
  /** Attribute values: strings, numbers (ints as numbers too), booleans, arrays. */
  attributes: Record<string, unknown>;
  /** OTLP status code: 0 unset, 1 ok, 2 error. */
  status: { code: number; message: string };
  events: { name: string; timeNs: bigint }[];
  /** Whether each attribute was sent as an int (`intValue`). */
  intAttributes: Set<string>;
  /** The resource's attributes (service.name ...). */
  resource: Record<string, unknown>;
}

type AnyValue = {
  stringValue?: string;
  intValue?: string | number;
  doubleValue?: number;
  boolValue?: boolean;
  arrayValue?: { values?: AnyValue[] };
};
type KeyValue = { key: string; value: AnyValue };

function valueOf(v: AnyValue): unknown {
  if (v.stringValue !== undefined) return v.stringValue;
  if (v.intValue !== undefined) return Number(v.intValue);
  if (v.doubleValue !== undefined) return v.doubleValue;
  if (v.boolValue !== undefined) return v.boolValue;
  if (v.arrayValue !== undefined) return (v.arrayValue.values ?? []).map(valueOf);
  return undefined;
}

function attrs(list: KeyValue[] | undefined): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const kv of list ?? []) out[kv.key] = valueOf(kv.value);
  return out;
}

/** The receiver: listening on 127.0.0.1 at an ephemeral port from construction. */
export class OtlpReceiver {
  /** Every span received, in arrival order. */
  readonly spans: ReceivedSpan[] = [];
  /** Every metric data point received, in arrival order (one per export per series). */
  readonly points: ReceivedPoint[] = [];
  /** Every request body, by path, as text. */
  readonly bodies: { path: string; contentType: string; text: string }[] = [];
  readonly #server: Deno.HttpServer<Deno.NetAddr>;

  constructor() {
    this.#server = Deno.serve(
      { hostname: "127.0.0.1", port: 0, onListen: () => {} },
      (req) => this.#handle(req),
    );
  }

  /** `http://127.0.0.1:<port>`: the value of `OTEL_EXPORTER_OTLP_ENDPOINT`. */
  get endpoint(): string {
    return `http://127.0.0.1:${this.#server.addr.port}`;
  }

  /** Spans of the instrumentation scope `scope`. */
  scoped(scope: string): ReceivedSpan[] {
    return this.spans.filter((s) => s.scope === scope);
  }

  /** The latest exported point of metric `name` in scope `flowcat` per attribute set. */
  latest(name: string): ReceivedPoint[] {
    const bySeries = new Map<string, ReceivedPoint>();
    for (const p of this.points) {
      if (p.name !== name || p.scope !== "flowcat") continue;
      const key = JSON.stringify(Object.entries(p.attributes).sort());
      const seen = bySeries.get(key);
      if (seen === undefined || p.timeNs >= seen.timeNs) bySeries.set(key, p);
    }
    return [...bySeries.values()];
  }

  /** Stop listening. */
  async close(): Promise<void> {
    await this.#server.shutdown();
  }

  async #handle(req: Request): Promise<Response> {
    const path = new URL(req.url).pathname;
    const contentType = req.headers.get("content-type") ?? "";
    const raw = new Uint8Array(await req.arrayBuffer());
    const protobuf = contentType.startsWith("application/x-protobuf");
    const text = new TextDecoder().decode(raw);
    this.bodies.push({ path, contentType, text });
    if (req.method !== "POST") return new Response("method", { status: 405 });
    if (path === "/v1/traces" || path === "/v1/metrics") {
      try {
        // Spans are read from http/json only; metrics from either encoding.
        if (path === "/v1/traces") {
          if (!protobuf) this.#traces(JSON.parse(text));
        } else {
          this.#metrics(
            (protobuf ? decodeMetricsRequest(raw) : JSON.parse(text)) as MetricsRequestJson,
          );
        }
      } catch (err) {
        return new Response(`bad request: ${err}`, { status: 400 });
      }
    }
    return Response.json({});
  }

  #metrics(body: MetricsRequestJson): void {
    for (const rm of body.resourceMetrics ?? []) {
      const resource = attrs(rm.resource?.attributes);
      for (const sm of rm.scopeMetrics ?? []) {
        const scope = sm.scope?.name ?? "";
        for (const m of sm.metrics ?? []) {
          const base = { name: m.name, unit: m.unit ?? "", description: m.description ?? "" };
          const number = (type: "sum" | "gauge", p: NumberPointJson, extra: object) =>
            this.points.push({
              ...base,
              ...extra,
              scope,
              type,
              attributes: attrs(p.attributes),
              value: p.asDouble ?? Number(p.asInt),
              timeNs: BigInt(p.timeUnixNano),
              resource,
            });
          for (const p of m.sum?.dataPoints ?? []) {
            number("sum", p, {
              monotonic: m.sum!.isMonotonic === true,
              temporality: m.sum!.aggregationTemporality,
            });
          }
          for (const p of m.gauge?.dataPoints ?? []) number("gauge", p, {});
          for (const p of m.histogram?.dataPoints ?? []) {
            this.points.push({
              ...base,
              scope,
              type: "histogram",
              temporality: m.histogram!.aggregationTemporality,
              attributes: attrs(p.attributes),
              count: Number(p.count),
              ...(p.sum !== undefined ? { sum: p.sum } : {}),
              bounds: p.explicitBounds ?? [],
              bucketCounts: (p.bucketCounts ?? []).map(Number),
              timeNs: BigInt(p.timeUnixNano),
              resource,
            });
          }
        }
      }
    }
  }

  #traces(body: {
    resourceSpans?: {
      resource?: { attributes?: KeyValue[] };
      scopeSpans?: {
        scope?: { name?: string };
        spans?: {
          traceId: string;
          spanId: string;
          parentSpanId?: string;
          name: string;
          kind?: number;
          startTimeUnixNano: string;
          endTimeUnixNano: string;
          attributes?: KeyValue[];
          status?: { code?: number; message?: string };
          events?: { name: string; timeUnixNano: string }[];
        }[];
      }[];
    }[];
  }): void {
    for (const rs of body.resourceSpans ?? []) {
      const resource = attrs(rs.resource?.attributes);
      for (const ss of rs.scopeSpans ?? []) {
        for (const s of ss.spans ?? []) {
          this.spans.push({
            traceId: s.traceId,
            spanId: s.spanId,
            parentSpanId: s.parentSpanId ?? "",
            name: s.name,
            kind: s.kind ?? 0,
            scope: ss.scope?.name ?? "",
            startNs: BigInt(s.startTimeUnixNano),
            endNs: BigInt(s.endTimeUnixNano),
            attributes: attrs(s.attributes),
            intAttributes: new Set(
              (s.attributes ?? []).filter((a) => a.value.intValue !== undefined).map((a) => a.key),
            ),
            status: { code: s.status?.code ?? 0, message: s.status?.message ?? "" },
            events: (s.events ?? []).map((e) => ({ name: e.name, timeNs: BigInt(e.timeUnixNano) })),
            resource,
          });
        }
      }
    }
  }
}
