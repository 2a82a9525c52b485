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

/**
 * Run a build tool's `main` as the program and exit with its code. A {@link ToolInputError} is
 * one line prefixed `name:`, a permission refusal one line ending in `notCapable` (what to do),
 * both exit 2; anything else is a bug and propagates with its stack.
 */
export async function runToolMain(
  name: string,
  main: (args: string[]) => Promise<number>,
  notCapable: string,
): Promise<never> {
  let code: number;
  try {
    code = await main(Deno.args);
  } catch (err) {
    if (err instanceof ToolInputError) {
      console.error(err.message.startsWith(`${name}:`) ? err.message : `${name}: ${err.message}`);
    } else if (err instanceof Deno.errors.NotCapable) {
      console.error(`${name}: ${err.message} (${notCapable})`);
    } else throw err;
    code = 2;
  }
  Deno.exit(code);
}
