/**
 * `{{var}}` interpolation for graph prompts and `say` texts.
 *
 * A placeholder is `{{name}}` with optional spaces inside the braces; a name is a letter or `_`
 * followed by letters, digits or `_`. Anything else between `{{` and `}}` is left as written (and
 * reported by {@link templatePlaceholders} so validation can flag it).
 *
 * @example
 * ```ts
 * import { interpolate } from "@flowcat/flowcat/agent";
 * interpolate("Hello {{ name }}!", { name: "Ada" }); // "Hello Ada!"
 * ```
 * @module
 */

/** Pattern a variable name must match (`__proto__` is refused: it would reach the prototype). */
export const VARIABLE_NAME_RE: RegExp = /^(?!__proto__$)[A-Za-z_][A-Za-z0-9_]*$/;

// Non-greedy, no nested braces: `{{a}} {{b}}` is two placeholders.
const PLACEHOLDER_RE = /\{\{([^{}]*)\}\}/g;

/** One `{{...}}` occurrence in a template. */
export interface Placeholder {
  /** The trimmed text between the braces. */
  name: string;
  /** True when `name` is a well-formed variable name. */
  valid: boolean;
}

/** Every placeholder in `template`, in order, duplicates kept. */
export function templatePlaceholders(template: string): Placeholder[] {
  const out: Placeholder[] = [];
  for (const m of template.matchAll(PLACEHOLDER_RE)) {
    const name = m[1].trim();
    out.push({ name, valid: VARIABLE_NAME_RE.test(name) });
  }
  return out;
}

/**
 * Text form of a variable value: strings as they are, numbers and booleans through `String`,
 * `null`/`undefined` as the empty string (a voice agent must never say "undefined"), anything
 * else as JSON.
 */
export function formatValue(value: unknown): string {
  if (value === null || value === undefined) return "";
  if (typeof value === "string") return value;
  if (typeof value === "number" || typeof value === "boolean" || typeof value === "bigint") {
    return String(value);
  }
  return JSON.stringify(value) ?? "";
}

/**
 * Replace each well-formed `{{name}}` with `vars[name]` (see {@link formatValue}). A name with
 * no value becomes the empty string; malformed placeholders stay as written.
 *
 * @example
 * ```ts
 * interpolate("{{n}} guests on {{ day }}", { n: 4, day: "Friday" }); // "4 guests on Friday"
 * ```
 */
export function interpolate(template: string, vars: Readonly<Record<string, unknown>>): string {
  if (!template.includes("{{")) return template;
  return template.replace(PLACEHOLDER_RE, (whole, inner: string) => {
    const name = inner.trim();
    if (!VARIABLE_NAME_RE.test(name)) return whole;
    // Own properties only: `{{constructor}}` must not reach Object.prototype.
    return Object.hasOwn(vars, name) ? formatValue(vars[name]) : "";
  });
}
