/**
 * The Prometheus text exposition format (version 0.0.4) itself: escaping, sample values, label
 * sets, and families rendered or merged across sources. The metric families and the registry
 * that produce these lines are in server/prometheus.ts.
 *
 * @example
 * ```ts
 * renderFamilies([{ name: "up", help: "Up.", type: "gauge", samples: ["up 1"] }]);
 * // "# HELP up Up.\n# TYPE up gauge\nup 1\n"
 * ```
 * @module
 */

/** The `Content-Type` of the text format (what `Registry.expose` writes). */
export const PROMETHEUS_CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8";

const METRIC_NAME = /^[a-zA-Z_:][a-zA-Z0-9_:]*$/;
const LABEL_NAME = /^[a-zA-Z_][a-zA-Z0-9_]*$/;

/** A label value escaped for the text format (backslash, double quote, newline). */
export function escapeLabelValue(value: string): string {
  return value.replaceAll("\\", "\\\\").replaceAll("\n", "\\n").replaceAll('"', '\\"');
}

/** A HELP text escaped for the text format (backslash, newline). */
export function escapeHelp(help: string): string {
  return help.replaceAll("\\", "\\\\").replaceAll("\n", "\\n");
}

/** A sample value as the text format writes it (`+Inf`, `-Inf`, `NaN`, else the number). */
export function formatValue(v: number): string {
  if (Number.isNaN(v)) return "NaN";
  if (v === Infinity) return "+Inf";
  if (v === -Infinity) return "-Inf";
  return String(v);
}

/** Throws on a metric or label name the text format does not allow. */
export function checkNames(name: string, labels: readonly string[]): void {
  if (!METRIC_NAME.test(name)) throw new TypeError(`bad metric name "${name}"`);
  for (const l of labels) {
    if (!LABEL_NAME.test(l) || l.startsWith("__")) {
      throw new TypeError(`bad label name "${l}" on ${name}`);
    }
  }
  if (new Set(labels).size !== labels.length) {
    throw new TypeError(`duplicate label name on ${name}`);
  }
}

/**
 * `{a="x",b="y"}` for the label names and values, after the rendered constant labels `fixed`
 * and before `extra` (`le`), or "" when there are none.
 */
export function labelText(
  fixed: string,
  names: readonly string[],
  values: readonly string[],
  extra = "",
): string {
  const parts = names.map((n, i) => `${n}="${escapeLabelValue(values[i])}"`);
  if (fixed) parts.unshift(fixed);
  if (extra) parts.push(extra);
  return parts.length === 0 ? "" : `{${parts.join(",")}}`;
}

/** One family's lines, ready to be rendered or merged with the same family of other sources. */
export interface FamilySnapshot {
  /** Metric name. */
  name: string;
  /** HELP text (unescaped). */
  help: string;
  /** TYPE word. */
  type: "counter" | "gauge" | "histogram";
  /** Sample lines. */
  samples: string[];
}

/** The text format of `families`: HELP, TYPE, then samples each; ends with a newline. */
export function renderFamilies(families: readonly FamilySnapshot[]): string {
  const out: string[] = [];
  for (const f of families) {
    out.push(`# HELP ${f.name} ${escapeHelp(f.help)}`, `# TYPE ${f.name} ${f.type}`, ...f.samples);
  }
  return out.join("\n") + "\n";
}

/**
 * Families of several sources (each worker's registry, with its own constant `worker` label) as
 * one list: a family once, in first-seen order, with every source's samples.
 */
export function mergeFamilies(sources: readonly (readonly FamilySnapshot[])[]): FamilySnapshot[] {
  const byName = new Map<string, FamilySnapshot>();
  for (const list of sources) {
    for (const f of list) {
      const seen = byName.get(f.name);
      if (seen === undefined) byName.set(f.name, { ...f, samples: [...f.samples] });
      else seen.samples.push(...f.samples);
    }
  }
  return [...byName.values()];
}
