/**
 * "Did you mean" for config errors: the closest allowed name by edit distance, and the one-line
 * hints built from it (`did you mean "openai"?`, `expected one of: a, b`).
 * @module
 */

/** Optimal-string-alignment distance (Levenshtein plus adjacent swaps), case-insensitive. */
export function editDistance(a: string, b: string): number {
  const s = a.toLowerCase();
  const t = b.toLowerCase();
  const rows: number[][] = [];
  for (let i = 0; i <= s.length; i++) {
    rows.push(new Array<number>(t.length + 1).fill(0));
    rows[i][0] = i;
  }
  for (let j = 0; j <= t.length; j++) rows[0][j] = j;
  for (let i = 1; i <= s.length; i++) {
    for (let j = 1; j <= t.length; j++) {
      const cost = s[i - 1] === t[j - 1] ? 0 : 1;
      let d = Math.min(rows[i - 1][j] + 1, rows[i][j - 1] + 1, rows[i - 1][j - 1] + cost);
      if (i > 1 && j > 1 && s[i - 1] === t[j - 2] && s[i - 2] === t[j - 1]) {
        d = Math.min(d, rows[i - 2][j - 2] + 1);
      }
      rows[i][j] = d;
    }
  }
  return rows[s.length][t.length];
}

/**
 * The candidate closest to `name`, when it is close enough to be a likely typo: at most one
 * edit for short names, about a third of the length for longer ones.
 *
 * @example
 * ```ts
 * closestName("opnai", ["echo", "gemini", "openai"]); // "openai"
 * closestName("zzz", ["echo"]); // undefined
 * ```
 */
export function closestName(name: string, candidates: Iterable<string>): string | undefined {
  let best: string | undefined;
  let bestDistance = Infinity;
  for (const candidate of candidates) {
    const d = editDistance(name, candidate);
    if (d < bestDistance) {
      best = candidate;
      bestDistance = d;
    }
  }
  const allowed = Math.max(1, Math.floor(Math.max(name.length, best?.length ?? 0) / 3));
  return bestDistance <= allowed ? best : undefined;
}

/**
 * The hint for a name that is not one of `candidates`: `did you mean "x"?` when one is close,
 * else the full list (or `none are available` when there is none).
 */
export function suggestionHint(name: string, candidates: readonly string[]): string {
  const close = closestName(name, candidates);
  if (close !== undefined) return `did you mean "${close}"?`;
  if (candidates.length === 0) return "none are available";
  return `expected one of: ${candidates.join(", ")}`;
}

/** A value shown in a message: short strings quoted, everything else by its type only. */
export function shown(value: unknown): string {
  if (typeof value === "string") {
    return value.length <= 40 ? JSON.stringify(value) : `${JSON.stringify(value.slice(0, 40))}...`;
  }
  return describeType(value);
}

/** The type of a parsed YAML/JSON value in words: `a number`, `a list`, `null`. */
export function describeType(value: unknown): string {
  if (value === null) return "null";
  if (value === undefined) return "nothing";
  if (Array.isArray(value)) return "a list";
  if (typeof value === "object") return "a mapping";
  if (typeof value === "number") return Number.isInteger(value) ? "an integer" : "a number";
  return `a ${typeof value}`;
}
