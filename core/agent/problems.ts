/**
 * Problems: where a document is wrong and why, as `{path, message}` pairs a user can act on.
 * Shared by graph-spec validation, the remote-brain client and the reference brain server.
 * @module
 */

/** One thing wrong with a document. `path` is like `nodes[2].transitions[0].target`. */
export interface Problem {
  /** Where the problem is, like `nodes[2].transitions[0].target` (`""` for the whole document). */
  path: string;
  /** What is wrong, in words a user can act on. */
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

/**
 * The issues a failed validation found. A zod `ZodError` is one; declared here, not imported
 * from zod, so the public API does not expose zod's types.
 */
export interface SchemaError {
  /** Every issue found, in document order. */
  readonly issues: readonly {
    /** Machine-readable issue kind, such as `invalid_type` or `invalid_key`. */
    readonly code: string;
    /** Where in the document the issue is, as keys and array indexes. */
    readonly path: readonly PropertyKey[];
    /** What is wrong, in words. */
    readonly message: string;
    /** Inner issues; an `invalid_key` issue says here why the key is bad. */
    readonly issues?: readonly { readonly message: string }[];
  }[];
}

/** A runtime validator of untrusted data; every zod schema whose output is `T` is one. */
export interface Validator<T> {
  /** Check `data`: the parsed value with defaults filled in, or the issues found. */
  safeParse(
    data: unknown,
  ):
    | { readonly success: true; readonly data: T }
    | { readonly success: false; readonly error: SchemaError };
}

/** Turn a zod error into problems, one per issue, with readable paths. */
export function zodProblems(error: SchemaError, prefix: readonly PropertyKey[] = []): Problem[] {
  return error.issues.map((issue) => {
    let message = issue.message;
    // A bad record key says only "Invalid key in record"; the inner issue says why.
    if (issue.code === "invalid_key" && issue.issues !== undefined && issue.issues.length > 0) {
      message = `invalid key: ${issue.issues[0].message}`;
    }
    return { path: formatPath([...prefix, ...issue.path]), message, code: "schema" };
  });
}

/** One line per problem, `path: message` (the path is `(root)` when empty). */
export function formatProblems(problems: readonly Problem[]): string {
  return problems.map((p) => `${p.path === "" ? "(root)" : p.path}: ${p.message}`).join("\n");
}
