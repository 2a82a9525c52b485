/**
 * Problems: where a document is wrong and why, as `{path, message}` pairs a user can act on.
 * Shared by graph-spec validation, the remote-brain client and the reference brain server.
 * @module
 */

import type { z } from "zod";

/** One thing wrong with a document. `path` is like `nodes[2].transitions[0].target`. */
export interface Problem {
  path: string;
  message: string;
  /** Machine-readable kind (graph validation sets it; e.g. `unknown_target`). */
  code?: string;
}

/**
 * Render a path as `a.b[2].c`; the empty path is `""`.
 *
 * @example
 * ```ts
 * formatPath(["nodes", 2, "id"]); // "nodes[2].id"
 * ```
 */
export function formatPath(path: readonly PropertyKey[]): string {
  let out = "";
  for (const seg of path) {
    if (typeof seg === "number") out += `[${seg}]`;
    else out += out === "" ? String(seg) : `.${String(seg)}`;
  }
  return out;
}

/** Turn a zod error into problems, one per issue, with readable paths. */
export function zodProblems(error: z.ZodError, prefix: readonly PropertyKey[] = []): Problem[] {
  return error.issues.map((issue) => {
    let message = issue.message;
    // A bad record key says only "Invalid key in record"; the inner issue says why.
    if (issue.code === "invalid_key" && issue.issues.length > 0) {
      message = `invalid key: ${issue.issues[0].message}`;
    }
    return { path: formatPath([...prefix, ...issue.path]), message, code: "schema" };
  });
}

/** One line per problem, `path: message` (the path is `(root)` when empty). */
export function formatProblems(problems: readonly Problem[]): string {
  return problems.map((p) => `${p.path === "" ? "(root)" : p.path}: ${p.message}`).join("\n");
}
