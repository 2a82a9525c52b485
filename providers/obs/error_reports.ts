/**
 * Error reports to a Sentry-compatible server (Sentry, self-hosted Sentry, GlitchTip, Bugsink),
 * as Sentry's envelope protocol has them: one `POST <origin>/api/<project>/envelope/` per event,
 * authenticated by the DSN's public key in an `X-Sentry-Auth` header. Dependency-free on
 * purpose: `npm:@sentry/deno` patches `fetch`, `console` and `Deno.serve` and attaches
 * breadcrumbs with URLs and log text (docs/decisions.md, "Error reports: our own envelope
 * client"); this sends only what the caller built, after scrubbing every secret it was given.
 *
 * The agent server loads this module only when a DSN is configured (server/error_reporting.ts).
 *
 * @example
 * ```ts
 * declare const apiKey: string;
 * const reporter = createErrorReports({ dsn: "https://key@o1.ingest.sentry.io/42", secrets: [apiKey] });
 * reporter.send({ level: "error", message: "provider failed", tags: { call_id: "7" } });
 * await reporter.flush(2000);
 * ```
 * @module
 */

/** The parts of a DSN. */
export interface Dsn {
  /** The public key (the DSN's user part). */
  publicKey: string;
  /** Where envelopes go: `<scheme>://<host>[/<path>]/api/<project>/envelope/`. */
  envelopeUrl: string;
  /** `host:port` of the server, for `--allow-net`. */
  host: string;
  /** The project id. */
  projectId: string;
}

/**
 * Parse a DSN (`https://<key>@<host>[/<path>]/<project>`), or `undefined` when it is not one.
 *
 * @example
 * ```ts
 * parseDsn("https://abc@o1.ingest.sentry.io/42")?.envelopeUrl;
 * // "https://o1.ingest.sentry.io/api/42/envelope/"
 * ```
 */
export function parseDsn(dsn: string): Dsn | undefined {
  let u: URL;
  try {
    u = new URL(dsn.trim());
  } catch {
    return undefined;
  }
  if (u.protocol !== "https:" && u.protocol !== "http:") return undefined;
  const parts = u.pathname.split("/");
  const projectId = parts.pop() ?? "";
  if (u.username === "" || projectId === "") return undefined;
  const prefix = parts.join("/");
  const port = u.port !== "" ? u.port : u.protocol === "https:" ? "443" : "80";
  const host = u.hostname.includes(":") && !u.hostname.startsWith("[")
    ? `[${u.hostname}]`
    : u.hostname;
  return {
    publicKey: decodeURIComponent(u.username),
    envelopeUrl: `${u.protocol}//${u.host}${prefix}/api/${projectId}/envelope/`,
    host: `${host}:${port}`,
    projectId,
  };
}

/** One stack frame, Sentry-shaped. */
export interface StackFrame {
  filename: string;
  function: string;
  lineno?: number;
  colno?: number;
  in_app: boolean;
}

/** What an event says. */
export interface ErrorEvent {
  /** `fatal` (the process is going down), `error`, `warning`. */
  level: "fatal" | "error" | "warning";
  /** One line: what happened (when there is no exception, the event's title). */
  message: string;
  /** An exception: its type, text and stack. */
  exception?: { type: string; value: string; frames?: StackFrame[] };
  /** Searchable key/values (call_id, provider, ...). */
  tags?: Record<string, string>;
  /** Structured context, by name (`call`: the call's identity and pipeline). */
  contexts?: Record<string, Record<string, unknown>>;
  /** More key/values shown with the event. */
  extra?: Record<string, unknown>;
  /** Grouping: events with the same fingerprint are one issue. */
  fingerprint?: string[];
}

/** Options of {@link createErrorReports}. */
export interface ErrorReportsOptions {
  /** Where to send. */
  dsn: string;
  /** `release` of every event (default `flowcat@<version>`). */
  release?: string;
  /** `environment` of every event. */
  environment?: string;
  /**
   * Values that must never leave (API keys, tokens, passwords, the DSN's key): each is replaced
   * by `[redacted]` anywhere in an event. Empty and very short values are ignored.
   */
  secrets?: readonly string[];
  /** At most this many events a minute (default 30); the rest are counted and dropped. */
  maxPerMinute?: number;
  /** The fetch to use (tests; default the global one). */
  fetch?: typeof fetch;
  /** Told once per failure to send (the report is dropped). */
  onSendError?: (message: string) => void;
  /** Wall clock, ms (default `Date.now`). */
  now?: () => number;
}

/** A sender of error reports. */
export interface ErrorReports {
  /** The parsed DSN. */
  readonly dsn: Dsn;
  /**
   * Send `event` in the background (see {@link ErrorReports.flush}), with `secrets` scrubbed
   * besides the sender's own. Returns its id, or `undefined` when the rate limit dropped it.
   */
  send(event: ErrorEvent, secrets?: readonly string[]): string | undefined;
  /** Wait until every send began so far is done, at most `ms`. */
  flush(ms?: number): Promise<void>;
  /** Events dropped by the rate limit so far. */
  readonly dropped: number;
}

/** Flowcat's version, for `release` and the client name. */
export const CLIENT_VERSION = "0.1.0";

const MIN_SECRET_LENGTH = 6;

/**
 * `text` with every secret replaced by `[redacted]`, and the value of every query parameter in
 * a URL (`?key=...`, `&token=...`) replaced by `REDACTED`.
 */
export function scrub(text: string, secrets: readonly string[]): string {
  let out = text;
  for (const s of secrets) {
    if (s.length < MIN_SECRET_LENGTH) continue;
    out = out.split(s).join("[redacted]");
    // The same value as it appears inside JSON or a URL.
    const json = JSON.stringify(s).slice(1, -1);
    if (json !== s) out = out.split(json).join("[redacted]");
    const url = encodeURIComponent(s);
    if (url !== s) out = out.split(url).join("[redacted]");
  }
  return out.replace(/([?&][A-Za-z0-9_.-]+=)[^&\s"'\\#]+/g, "$1REDACTED");
}

/**
 * Stack frames from an `Error.stack` (V8 format), oldest first as Sentry wants them.
 *
 * @example
 * ```ts
 * stackFrames("Error: x\n    at f (file:///a/b.ts:3:9)")[0]; // { filename: "/a/b.ts", function: "f", lineno: 3, colno: 9, in_app: true }
 * ```
 */
export function stackFrames(stack: string | undefined): StackFrame[] {
  if (stack === undefined) return [];
  const frames: StackFrame[] = [];
  for (const line of stack.split("\n")) {
    const m = /^\s*at (?:(.+?) \()?(.+?):(\d+):(\d+)\)?$/.exec(line);
    if (m === null) continue;
    const file = m[2].replace(/^file:\/\//, "");
    frames.push({
      filename: file,
      function: m[1] ?? "?",
      lineno: Number(m[3]),
      colno: Number(m[4]),
      in_app: !file.includes("/node_modules/") && !file.startsWith("ext:"),
    });
  }
  return frames.reverse();
}

function eventId(): string {
  return crypto.randomUUID().replaceAll("-", "");
}

/** The envelope body for one event (header line, item header line, payload line). */
export function envelope(
  id: string,
  event: ErrorEvent,
  opts: { release: string; environment?: string; nowMs: number },
): string {
  const payload: Record<string, unknown> = {
    event_id: id,
    timestamp: opts.nowMs / 1000,
    platform: "javascript",
    level: event.level,
    logger: "flowcat",
    release: opts.release,
    ...(opts.environment !== undefined ? { environment: opts.environment } : {}),
    tags: event.tags ?? {},
    contexts: {
      runtime: { name: "deno", version: Deno.version.deno },
      os: { name: Deno.build.os },
      ...event.contexts,
    },
    sdk: { name: "flowcat.envelope", version: CLIENT_VERSION },
  };
  if (event.exception !== undefined) {
    const e = event.exception;
    payload.exception = {
      values: [{
        type: e.type,
        value: e.value,
        ...(e.frames !== undefined && e.frames.length > 0
          ? { stacktrace: { frames: e.frames } }
          : {}),
      }],
    };
    if (event.message !== e.value) payload.message = { formatted: event.message };
  } else {
    payload.message = { formatted: event.message };
  }
  if (event.extra !== undefined) payload.extra = event.extra;
  if (event.fingerprint !== undefined) payload.fingerprint = event.fingerprint;
  const body = JSON.stringify(payload);
  const header = JSON.stringify({ event_id: id, sent_at: new Date(opts.nowMs).toISOString() });
  const item = JSON.stringify({ type: "event", content_type: "application/json" });
  return `${header}\n${item}\n${body}\n`;
}

/** A sender for `opts.dsn`; throws on a DSN that cannot be parsed. */
export function createErrorReports(opts: ErrorReportsOptions): ErrorReports {
  const dsn = parseDsn(opts.dsn);
  if (dsn === undefined) throw new TypeError("error reports: the DSN cannot be parsed");
  const secrets = [...(opts.secrets ?? []), dsn.publicKey];
  const release = opts.release ?? `flowcat@${CLIENT_VERSION}`;
  const limit = opts.maxPerMinute ?? 30;
  const now = opts.now ?? Date.now;
  const doFetch = opts.fetch ?? fetch;
  const auth =
    `Sentry sentry_version=7, sentry_key=${dsn.publicKey}, sentry_client=flowcat/${CLIENT_VERSION}`;
  const inFlight = new Set<Promise<void>>();
  let windowStart = 0;
  let inWindow = 0;
  let dropped = 0;
  const post = async (body: string) => {
    try {
      const res = await doFetch(dsn.envelopeUrl, {
        method: "POST",
        headers: { "content-type": "application/x-sentry-envelope", "x-sentry-auth": auth },
        body,
        signal: AbortSignal.timeout(10_000),
      });
      await res.body?.cancel();
      if (!res.ok) opts.onSendError?.(`HTTP ${res.status} from ${new URL(dsn.envelopeUrl).host}`);
    } catch (err) {
      opts.onSendError?.(scrub(err instanceof Error ? err.message : String(err), secrets));
    }
  };
  return {
    dsn,
    get dropped() {
      return dropped;
    },
    send(event, more = []) {
      const t = now();
      if (t - windowStart >= 60_000) [windowStart, inWindow] = [t, 0];
      if (inWindow >= limit) {
        dropped++;
        return undefined;
      }
      inWindow++;
      const id = eventId();
      const body = scrub(
        envelope(id, event, {
          release,
          nowMs: t,
          ...(opts.environment !== undefined ? { environment: opts.environment } : {}),
        }),
        more.length === 0 ? secrets : [...secrets, ...more],
      );
      const p = post(body);
      inFlight.add(p);
      p.finally(() => inFlight.delete(p));
      return id;
    },
    async flush(ms = 2000) {
      if (inFlight.size === 0) return;
      let timer: ReturnType<typeof setTimeout> | undefined;
      await Promise.race([
        Promise.allSettled([...inFlight]),
        new Promise<void>((r) => (timer = setTimeout(r, ms))),
      ]);
      clearTimeout(timer);
    },
  };
}
