/**
 * The server's logger, as the environment asks: `FLOWCAT_LOG` sets the level (`debug`, `info`
 * (default), `warn`, `error`, `silent`), `FLOWCAT_LOG_FORMAT` the format (`text` (default), or
 * `json`: one JSON object per line). A value that is neither falls back to the default, with
 * one warning line saying so.
 * @module
 */

import { consoleLogger, isLogFormat, isLogLevel, type Logger } from "../core/log.ts";
import { LOG_ENV, LOG_FORMAT_ENV } from "./config_env.ts";

/** Options of {@link loggerFromEnv}. */
export interface LoggerFromEnvOptions {
  /** Where lines go (default stderr). */
  write?: (line: string) => void;
}

/**
 * The logger `FLOWCAT_LOG` and `FLOWCAT_LOG_FORMAT` describe, read through `get`.
 *
 * @example
 * ```ts
 * const logger = loggerFromEnv((n) => Deno.env.get(n), "flowcat");
 * ```
 */
export function loggerFromEnv(
  get: (name: string) => string | undefined,
  scope: string,
  options: LoggerFromEnvOptions = {},
): Logger {
  const level = get(LOG_ENV);
  const format = get(LOG_FORMAT_ENV);
  const logger = consoleLogger(isLogLevel(level) ? level : "info", scope, {
    format: isLogFormat(format) ? format : "text",
    ...(options.write !== undefined ? { write: options.write } : {}),
  });
  if (level !== undefined && level !== "" && !isLogLevel(level)) {
    logger.warn(
      `${LOG_ENV}=${level} is not a level (debug, info, warn, error, silent); using info`,
    );
  }
  if (format !== undefined && format !== "" && !isLogFormat(format)) {
    logger.warn(`${LOG_FORMAT_ENV}=${format} is not a format (text, json); using text`);
  }
  return logger;
}
