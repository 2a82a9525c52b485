/**
 * Keeps secrets in URLs out of Deno's own HTTP spans. Under `OTEL_DENO=true` Deno traces every
 * `Deno.serve` request and `fetch` with `url.full` and `url.query` as they are, and a carrier's
 * media-socket URL carries the call's token (`/telephony/ws/twilio/7?token=...`). Deno has no
 * switch for that, and its exporter runs in Rust, past any JavaScript span processor; but its
 * HTTP instrumentation sets those attributes through the same `Span` class the OpenTelemetry
 * API hands us, so redacting in that class's `setAttribute` catches them before they are
 * recorded. tests/otel_export_test.ts checks that no token reaches the collector, so a Deno
 * that changes this is caught.
 * @module
 */

import { type AttributeValue, context, trace, type Tracer } from "npm:@opentelemetry/api@1.10.0";

/** Attributes that hold a URL or its query. */
export const URL_ATTRIBUTES: ReadonlySet<string> = new Set([
  "url.full",
  "url.query",
  "http.url",
  "http.target",
]);

const PATCHED = Symbol.for("flowcat.otel.urlRedaction");

/**
 * `value` with every query parameter's value replaced by `REDACTED` (names are kept: they say
 * what was there). Works on a whole URL or on a bare query string.
 *
 * @example
 * ```ts
 * redactQuery("http://h/ws/twilio/7?token=abc&x=1"); // "http://h/ws/twilio/7?token=REDACTED&x=REDACTED"
 * redactQuery("token=abc"); // "token=REDACTED"
 * ```
 */
export function redactQuery(value: string): string {
  const q = value.indexOf("?");
  const hasScheme = /^[a-z][a-z0-9+.-]*:\/\//i.test(value);
  if (hasScheme && q < 0) return value;
  const head = q < 0 ? "" : value.slice(0, q + 1);
  const query = q < 0 ? value : value.slice(q + 1);
  const hash = query.indexOf("#");
  const body = hash < 0 ? query : query.slice(0, hash);
  const redacted = body.split("&").map((p) => {
    const eq = p.indexOf("=");
    return eq < 0 ? p : `${p.slice(0, eq)}=REDACTED`;
  }).join("&");
  return head + redacted;
}

type SetAttribute = (this: unknown, key: string, value: AttributeValue) => unknown;
type SetAttributes = (this: unknown, attrs: Record<string, AttributeValue | undefined>) => unknown;

/**
 * Patch the span class of `tracer` (the global one by default) so URL attributes are recorded
 * with their query values redacted. Idempotent; returns false when the class has no
 * `setAttribute` to patch (a no-op tracer).
 */
export function redactUrlAttributes(tracer: Tracer = trace.getTracer("flowcat")): boolean {
  // A span that is never ended is never exported: it only shows us the class.
  const probe = tracer.startSpan("flowcat.probe", { root: true }, context.active());
  const proto = Object.getPrototypeOf(probe) as Record<string | symbol, unknown> | null;
  if (proto === null || typeof proto.setAttribute !== "function") return false;
  if (proto[PATCHED] === true) return true;
  const setAttribute = proto.setAttribute as SetAttribute;
  const setAttributes = proto.setAttributes as SetAttributes | undefined;
  const clean = (key: string, value: AttributeValue): AttributeValue =>
    URL_ATTRIBUTES.has(key) && typeof value === "string" ? redactQuery(value) : value;
  proto.setAttribute = function (this: unknown, key: string, value: AttributeValue) {
    return setAttribute.call(this, key, clean(key, value));
  };
  if (typeof setAttributes === "function") {
    proto.setAttributes = function (
      this: unknown,
      attrs: Record<string, AttributeValue | undefined>,
    ) {
      const out: Record<string, AttributeValue | undefined> = {};
      for (const [k, v] of Object.entries(attrs)) out[k] = v === undefined ? v : clean(k, v);
      return setAttributes.call(this, out);
    };
  }
  proto[PATCHED] = true;
  return true;
}
