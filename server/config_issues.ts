/**
 * Turns zod issues on the config document into problems a config author can act on: the
 * unknown key with its nearest allowed key, the missing field with what to write, the wrong type
 * in words. Values are never echoed here (a misplaced secret must not reach a log).
 * @module
 */

import type { z } from "npm:zod@^4.6.7";
import { formatPath, type Problem } from "../core/agent/problems.ts";
import { configProblem } from "./config_checks.ts";
import {
  expectedWords,
  INLINE_SECRET_HINTS,
  KNOWN_KEYS,
  MISSING_HINTS,
  wrongTypeMessage,
} from "./config_schema.ts";
import { closestName } from "./config_suggest.ts";

/** The value at `path` in a parsed document, or undefined. */
export function valueAt(doc: unknown, path: readonly PropertyKey[]): unknown {
  let cur: unknown = doc;
  for (const seg of path) {
    if (typeof cur !== "object" || cur === null) return undefined;
    cur = (cur as Record<PropertyKey, unknown>)[seg];
  }
  return cur;
}

/** Dotted path without list indexes, the key of {@link KNOWN_KEYS}. */
function shapeKey(path: readonly PropertyKey[]): string {
  return path.filter((s) => typeof s !== "number").map(String).join(".");
}

function unknownKeyProblem(parent: readonly PropertyKey[], key: string): Problem {
  const path = formatPath([...parent, key]);
  const where = shapeKey(parent);
  const secretHint = INLINE_SECRET_HINTS[where]?.[key];
  if (secretHint !== undefined) {
    return configProblem(path, "secrets are not accepted inline", secretHint);
  }
  const allowed = KNOWN_KEYS[where] ?? [];
  const close = closestName(key, allowed);
  const hint = close !== undefined
    ? `did you mean "${close}"?`
    : allowed.length > 0
    ? `allowed here: ${allowed.join(", ")}`
    : undefined;
  return configProblem(path, `unknown key "${key.slice(0, 40)}"`, hint);
}

function sizeMessage(issue: z.core.$ZodIssue, below: boolean): string {
  const i = issue as unknown as { origin?: string; minimum?: unknown; maximum?: unknown };
  const bound = below ? i.minimum : i.maximum;
  if (i.origin === "string") {
    return below && bound === 1
      ? "must not be empty"
      : `length must be ${below ? "at least" : "at most"} ${bound}`;
  }
  if (i.origin === "array") return `needs ${below ? "at least" : "at most"} ${bound} entries`;
  return `must be ${below ? "at least" : "at most"} ${bound}`;
}

/** Problems for one zod issue on the config document `doc`. */
export function issueProblems(
  issue: z.core.$ZodIssue,
  doc: unknown,
  prefix: readonly PropertyKey[] = [],
): Problem[] {
  const full = [...prefix, ...issue.path];
  const path = formatPath(full);
  switch (issue.code) {
    case "unrecognized_keys":
      return issue.keys.map((k) => unknownKeyProblem(full, k));
    case "invalid_type": {
      const actual = valueAt(doc, issue.path);
      if (actual === undefined) {
        const hint = MISSING_HINTS[shapeKey(full)] ?? `expected ${expectedWords(issue.expected)}`;
        return [configProblem(path, "is missing", hint)];
      }
      return [configProblem(path, wrongTypeMessage(issue.expected, actual))];
    }
    case "too_small":
      return [configProblem(path, sizeMessage(issue, true))];
    case "too_big":
      return [configProblem(path, sizeMessage(issue, false))];
    case "invalid_key":
      return [configProblem(path, `invalid key: ${issue.issues[0]?.message ?? issue.message}`)];
    default:
      return [configProblem(path, issue.message)];
  }
}

/** Problems for every zod issue, in order, duplicates removed. */
export function schemaProblems(error: z.ZodError, doc: unknown): Problem[] {
  const out: Problem[] = [];
  const seen = new Set<string>();
  for (const issue of error.issues) {
    for (const p of issueProblems(issue, doc)) {
      const key = `${p.path}\u0000${p.message}`;
      if (seen.has(key)) continue;
      seen.add(key);
      out.push(p);
    }
  }
  return out;
}
