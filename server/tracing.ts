/**
 * Whether the agent server traces its calls, and the tracing it then uses. Deno exports
 * OpenTelemetry data when the process starts with `OTEL_DENO=true` (it reads that and the
 * `OTEL_EXPORTER_OTLP_*` variables itself, whatever `--allow-env` says); the server reads
 * `OTEL_DENO` too and only then loads its span code (providers/obs/otel.ts) and the
 * OpenTelemetry API. Without it no tracing module is loaded and no call carries a tracer.
 * @module
 */

import type { CallTracing } from "../providers/obs/otel.ts";
import type { EnvGet } from "./call_shapes.ts";
import type { Registry } from "./prometheus.ts";
import { OTLP_METRIC_NAMES } from "./server_metrics.ts";

export type {
  CallTracing,
  TracedCall,
  TracedCallEnd,
  TracedCallInfo,
} from "../providers/obs/otel.ts";

/** The variable that turns Deno's OpenTelemetry export on (and with it, call spans). */
export const OTEL_ENV = "OTEL_DENO";

/** True when `OTEL_DENO` asks for export (`true` or `1`, as Deno reads it). */
export function tracingWanted(env: EnvGet): boolean {
  let v: string | undefined;
  try {
    v = env(OTEL_ENV);
  } catch {
    return false; // not granted: reads as unset
  }
  return v !== undefined && /^(true|1)$/i.test(v.trim());
}

/**
 * The call tracing `env` asks for, or `undefined` (nothing loaded); with `recordContent`, LLM
 * spans carry prompts and completions. Loading it also keeps query values (call tokens) out of
 * the URLs of Deno's own HTTP spans.
 */
export async function tracingFromEnv(
  env: EnvGet,
  opts: { recordContent?: boolean } = {},
): Promise<CallTracing | undefined> {
  if (!tracingWanted(env)) return undefined;
  const [otel, urls] = await Promise.all([
    import("../providers/obs/otel.ts"),
    import("../providers/obs/url_redaction.ts"),
  ]);
  urls.redactUrlAttributes();
  return otel.createOtelTracing({ recordContent: opts.recordContent === true });
}

/**
 * When `env` asks for OpenTelemetry export, mirror every family of `registry` that has an OTLP
 * name ({@link OTLP_METRIC_NAMES}) into an OpenTelemetry instrument, which Deno exports over
 * OTLP beside `/metrics`, each point with the `constant` attributes too (a worker's index).
 * Returns true when it did; otherwise nothing is loaded.
 */
export async function exportMetricsFromEnv(
  env: EnvGet,
  registry: Registry,
  constant: Readonly<Record<string, string>> = {},
): Promise<boolean> {
  if (!tracingWanted(env)) return false;
  const { mirrorToOtel } = await import("../providers/obs/otel_metrics.ts");
  mirrorToOtel(
    registry.families().flatMap((family) => {
      const otlp = OTLP_METRIC_NAMES[family.name];
      return otlp === undefined ? [] : [{ family, ...otlp }];
    }),
    constant,
  );
  return true;
}
