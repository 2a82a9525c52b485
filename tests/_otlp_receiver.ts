/**
 * A local OTLP/HTTP receiver for tests: the collector end of what Deno exports under
 * `OTEL_DENO=true` with `OTEL_EXPORTER_OTLP_PROTOCOL=http/json`. It accepts `POST /v1/traces`,
 * `/v1/logs` and `/v1/metrics` (ExportTraceServiceRequest and friends in the protobuf JSON
 * mapping: ids as hex strings, 64-bit numbers as decimal strings, attributes as
 * `{key, value: {stringValue | intValue | doubleValue | boolValue | arrayValue}}`), keeps every
 * raw body (so a test can look for a secret anywhere) and flattens the spans.
 */

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

  /** Stop listening. */
  async close(): Promise<void> {
    await this.#server.shutdown();
  }

  async #handle(req: Request): Promise<Response> {
    const path = new URL(req.url).pathname;
    const text = await req.text();
    this.bodies.push({ path, contentType: req.headers.get("content-type") ?? "", text });
    if (req.method !== "POST") return new Response("method", { status: 405 });
    if (path === "/v1/traces") {
      try {
        this.#traces(JSON.parse(text));
      } catch (err) {
        return new Response(`bad request: ${err}`, { status: 400 });
      }
    }
    return Response.json({});
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
