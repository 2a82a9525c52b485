/**
 * The build tools' user-facing error: a mistake in their input or environment (bad flag, bad
 * config, no denort, no `deno` on PATH). The tools print its message as one line and exit 2,
 * never a stack trace.
 * @module
 */

/** A mistake the user can fix; its message says how. */
export class ToolInputError extends Error {
  /** Make one with a user-readable message. */
  constructor(message: string) {
    super(message);
    this.name = "ToolInputError";
  }
}
