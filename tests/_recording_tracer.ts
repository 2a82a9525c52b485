/**
 * An in-memory OpenTelemetry tracer for tests: every span started through it is kept with its
 * name, parent, attributes, events, status and whether it ended, so span logic can be checked
 * in process without an exporter (tests/otel_export_test.ts covers Deno's real export).
 */
import {
  type Attributes,
  type AttributeValue,
  type Context,
  type Span,
  type SpanContext,
  type SpanOptions,
  type SpanStatus,
  type TimeInput,
  trace,
  type Tracer,
} from "@opentelemetry/api";

let ids = 0;

/** A span as recorded. */
export class RecordedSpan implements Span {
  readonly attributes: Record<string, unknown> = {};
  readonly events: string[] = [];
  status: SpanStatus = { code: 0 };
  ended = false;
  endTime: TimeInput | undefined;
  readonly #ctx: SpanContext;

  constructor(
    public name: string,
    readonly parent: RecordedSpan | undefined,
    readonly options: SpanOptions,
  ) {
    const id = (++ids).toString(16).padStart(16, "0");
    this.#ctx = {
      traceId: parent?.spanContext().traceId ?? id.padStart(32, "0"),
      spanId: id,
      traceFlags: 1,
    };
    for (const [k, v] of Object.entries(options.attributes ?? {})) this.attributes[k] = norm(v);
  }
  spanContext(): SpanContext {
    return this.#ctx;
  }
  setAttribute(key: string, value: AttributeValue): this {
    this.attributes[key] = norm(value);
    return this;
  }
  setAttributes(attrs: Attributes): this {
    for (const [k, v] of Object.entries(attrs)) this.attributes[k] = norm(v);
    return this;
  }
  addEvent(name: string): this {
    this.events.push(name);
    return this;
  }
  addLink(): this {
    return this;
  }
  addLinks(): this {
    return this;
  }
  setStatus(status: SpanStatus): this {
    this.status = status;
    return this;
  }
  updateName(name: string): this {
    this.name = name;
    return this;
  }
  end(endTime?: TimeInput): void {
    this.ended = true;
    this.endTime = endTime;
  }
  isRecording(): boolean {
    return !this.ended;
  }
  recordException(): void {}
}

/** Int attributes arrive as bigints (see `intValue`): read them as numbers. */
function norm(v: unknown): unknown {
  return typeof v === "bigint" ? Number(v) : v;
}

/** The tracer: `spans` in start order. */
export class RecordingTracer implements Tracer {
  readonly spans: RecordedSpan[] = [];

  startSpan(name: string, options: SpanOptions = {}, ctx?: Context): Span {
    const parent = options.root || ctx === undefined ? undefined : trace.getSpan(ctx);
    const span = new RecordedSpan(
      name,
      parent instanceof RecordedSpan ? parent : undefined,
      options,
    );
    this.spans.push(span);
    return span;
  }

  startActiveSpan(): never {
    throw new Error("not used by Flowcat");
  }

  /** Spans named `name`. */
  named(name: string): RecordedSpan[] {
    return this.spans.filter((s) => s.name === name);
  }
}
