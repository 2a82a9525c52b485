/**
 * Logger seam. The core never writes to the console directly; it logs through a {@link Logger}
 * so an embedder can route, silence or capture it. Never pass secrets in `fields`.
 * @module
 */

/** Log severity, lowest first. */
export type LogLevel = "debug" | "info" | "warn" | "error" | "silent";

/** A structured logger. */
export interface Logger {
  /** Log a detail useful when debugging. */
  debug(message: string, fields?: Record<string, unknown>): void;
  /** Log a normal event. */
  info(message: string, fields?: Record<string, unknown>): void;
  /** Log something unexpected that the call survives. */
  warn(message: string, fields?: Record<string, unknown>): void;
  /** Log a failure. */
  error(message: string, fields?: Record<string, unknown>): void;
}

const RANK: Record<LogLevel, number> = { debug: 0, info: 1, warn: 2, error: 3, silent: 4 };

/** True when `s` names a {@link LogLevel}. */
export function isLogLevel(s: string | undefined): s is LogLevel {
  return s !== undefined && Object.hasOwn(RANK, s);
}

/**
 * Logger writing one line per record to stderr at or above `level`.
 *
 * @example
 * ```ts
 * const log = consoleLogger("warn");
 * log.warn("heartbeat late", { seconds: 12 });
 * ```
 */
export function consoleLogger(level: LogLevel = "info", scope?: string): Logger {
  const min = RANK[level];
  const enc = new TextEncoder();
  const write = (lvl: LogLevel, message: string, fields?: Record<string, unknown>) => {
    if (RANK[lvl] < min) return;
    const head = scope ? `[${lvl}] ${scope}: ${message}` : `[${lvl}] ${message}`;
    const tail = fields && Object.keys(fields).length > 0 ? " " + JSON.stringify(fields) : "";
    Deno.stderr.writeSync(enc.encode(head + tail + "\n"));
  };
  return {
    debug: (m, f) => write("debug", m, f),
    info: (m, f) => write("info", m, f),
    warn: (m, f) => write("warn", m, f),
    error: (m, f) => write("error", m, f),
  };
}

/** A logger that drops everything. */
export const silentLogger: Logger = Object.freeze({
  debug() {},
  info() {},
  warn() {},
  error() {},
});

/** Record of one captured log line (tests). */
export interface LogRecord {
  /** Severity of the line. */
  level: Exclude<LogLevel, "silent">;
  /** The message. */
  message: string;
  /** Structured fields logged with the message. */
  fields?: Record<string, unknown>;
}

/** A logger that keeps every record in `records` (for tests and diagnostics). */
export function memoryLogger(): Logger & { records: LogRecord[] } {
  const records: LogRecord[] = [];
  const push = (level: LogRecord["level"]) => (message: string, fields?: Record<string, unknown>) =>
    void records.push(fields === undefined ? { level, message } : { level, message, fields });
  return {
    records,
    debug: push("debug"),
    info: push("info"),
    warn: push("warn"),
    error: push("error"),
  };
}
