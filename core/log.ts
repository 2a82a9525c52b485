/**
 * Logger seam. The core never writes to the console directly; it logs through a {@link Logger}
 * so an embedder can route, silence or capture it. Never pass secrets in `fields`.
 * @module
 */

/** Log severity, lowest first. */
export type LogLevel = "debug" | "info" | "warn" | "error" | "silent";

/** How {@link consoleLogger} writes a record: readable text (default) or one JSON object a line. */
export type LogFormat = "text" | "json";

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

/** True when `s` names a {@link LogFormat}. */
export function isLogFormat(s: string | undefined): s is LogFormat {
  return s === "text" || s === "json";
}

/** Options of {@link consoleLogger}. */
export interface ConsoleLoggerOptions {
  /** `text` (default): `[level] scope: message {fields}`; `json`: one JSON object a line. */
  format?: LogFormat;
  /** Where each line goes, without its newline (default: stderr). */
  write?: (line: string) => void;
  /** Clock of the `time` field of JSON lines (default `Date.now`). */
  now?: () => number;
}

/** Keys every JSON line has; a field of the same name is written as `field.<name>`. */
const JSON_KEYS = new Set(["time", "level", "scope", "msg"]);

/** JSON text of `value`: errors as their message, bigints as strings, never a throw. */
function toJson(value: unknown): string {
  try {
    return JSON.stringify(
      value,
      (_k, v) => typeof v === "bigint" ? v.toString() : v instanceof Error ? v.message : v,
    );
  } catch {
    return JSON.stringify(String(value));
  }
}

/** One record as a line of `format` (no newline). */
export function formatLogLine(
  format: LogFormat,
  record: { time: number; level: Exclude<LogLevel, "silent">; scope?: string; message: string },
  fields?: Record<string, unknown>,
): string {
  const { level, scope, message } = record;
  if (format === "text") {
    const head = scope ? `[${level}] ${scope}: ${message}` : `[${level}] ${message}`;
    return fields && Object.keys(fields).length > 0 ? `${head} ${toJson(fields)}` : head;
  }
  const o: Record<string, unknown> = { time: new Date(record.time).toISOString(), level };
  if (scope) o.scope = scope;
  o.msg = message;
  if (fields) {
    for (const [k, v] of Object.entries(fields)) o[JSON_KEYS.has(k) ? `field.${k}` : k] = v;
  }
  return toJson(o);
}

/**
 * Logger writing one line per record to stderr at or above `level`: readable text by default,
 * or one JSON object per line (`{"time", "level", "scope", "msg", ...fields}`) with
 * `format: "json"`.
 *
 * @example
 * ```ts
 * const log = consoleLogger("warn");
 * log.warn("heartbeat late", { seconds: 12 });
 * const json = consoleLogger("info", "flowcat", { format: "json" });
 * json.info("call started", { runId: 7 }); // {"time":"...","level":"info","scope":"flowcat",...}
 * ```
 */
export function consoleLogger(
  level: LogLevel = "info",
  scope?: string,
  options: ConsoleLoggerOptions = {},
): Logger {
  const min = RANK[level];
  const format = options.format ?? "text";
  const now = options.now ?? Date.now;
  const enc = new TextEncoder();
  const out = options.write ?? ((line: string) => Deno.stderr.writeSync(enc.encode(line + "\n")));
  const write = (
    lvl: Exclude<LogLevel, "silent">,
    message: string,
    fields?: Record<string, unknown>,
  ) => {
    if (RANK[lvl] < min) return;
    out(formatLogLine(format, { time: now(), level: lvl, scope, message }, fields));
  };
  return {
    debug: (m, f) => write("debug", m, f),
    info: (m, f) => write("info", m, f),
    warn: (m, f) => write("warn", m, f),
    error: (m, f) => write("error", m, f),
  };
}

/**
 * A logger that adds `fields` (e.g. a call's id) to every record it passes to `logger`; a
 * record's own fields win over them.
 *
 * @example
 * ```ts
 * import { consoleLogger, withFields } from "@flowcat/flowcat";
 * const log = consoleLogger();
 * const callLog = withFields(log, { runId: 7 });
 * callLog.warn("upload failed"); // fields: { runId: 7 }
 * ```
 */
export function withFields(logger: Logger, fields: Record<string, unknown>): Logger {
  return new FieldsLogger(logger, fields);
}

/** {@link withFields}' logger: one small object per call, methods on the prototype. */
class FieldsLogger implements Logger {
  constructor(readonly inner: Logger, readonly fields: Record<string, unknown>) {}
  #merge(f: Record<string, unknown> | undefined): Record<string, unknown> {
    return f === undefined ? this.fields : { ...this.fields, ...f };
  }
  debug(m: string, f?: Record<string, unknown>): void {
    this.inner.debug(m, this.#merge(f));
  }
  info(m: string, f?: Record<string, unknown>): void {
    this.inner.info(m, this.#merge(f));
  }
  warn(m: string, f?: Record<string, unknown>): void {
    this.inner.warn(m, this.#merge(f));
  }
  error(m: string, f?: Record<string, unknown>): void {
    this.inner.error(m, this.#merge(f));
  }
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
