/**
 * The flags `deno task compile` and `deno task dist` share: `--config <agent.yaml>`,
 * `--out <dir>` and `--help`. A bad flag is a {@link ToolInputError} pointing at `--help`.
 * @module
 */

import { parseArgs } from "node:util";
import { errorMessage } from "../core/errors.ts";
import { DEFAULT_CONFIG } from "../server/main.ts";
import { ToolInputError } from "./tool_error.ts";

/** The parsed flags of a build tool. */
export interface BuildArgs {
  /** The agent config the build is for (default `examples/agent.yaml`). */
  config: string;
  /** Where the build goes. */
  out: string;
  /** `--help` / `-h` was given. */
  help: boolean;
}

/** Parse a build tool's flags; `defaultOut` is where the build goes without `--out`. */
export function parseBuildArgs(args: string[], defaultOut: string): BuildArgs {
  try {
    const { values } = parseArgs({
      args,
      options: {
        config: { type: "string" },
        out: { type: "string" },
        help: { type: "boolean", short: "h", default: false },
      },
      strict: true,
      allowPositionals: false,
    });
    return {
      config: values.config ?? DEFAULT_CONFIG,
      out: values.out ?? defaultOut,
      help: values.help ?? false,
    };
  } catch (err) {
    throw new ToolInputError(`${errorMessage(err)} (see --help)`);
  }
}
