/**
 * HTTP pieces every cascaded provider client shares: a fetch with a deadline and bounded
 * retries, provider errors that name the provider and never echo a secret, and a
 * Server-Sent-Events reader for streaming responses.
 *
 * @example
 * ```ts
 * import { providerFetch, readSse } from "./http.ts";
 * declare const key: string;
 * declare const body: string;
 * const res = await providerFetch("openai", "https://api.openai.com/v1/chat/completions", {
 *   method: "POST", headers: { authorization: `Bearer ${key}` }, body,
 * });
 * for await (const ev of readSse(res.body!)) console.log(ev.event, ev.data);
 * ```
 * @module
 */

import { FlowcatError, type FlowcatErrorKind } from "../core/errors.ts";

/** Options of {@link providerFetch}. */
export interface ProviderFetchOptions {
  /** Deadline for the response headers, in ms (default 15000). The body may stream longer. */
  timeoutMs?: number;
  /** Extra attempts on 408/429/5xx or a network error (default 2; 0 for none). */
  retries?: number;
  /** First backoff in ms, doubled each attempt, capped at 4 s (default 250). */
  backoffMs?: number;
  /** Aborts the request (and any backoff wait) at once. */
  signal?: AbortSignal;
  /** The fetch to use (tests; default the global one). */
  fetch?: typeof fetch;
  /**
   * Whether a non-2xx answer outside 408/429/5xx is worth another attempt too (AWS names
   * throttling in a header and may send it with status 400).
   */
  retryable?: (res: Response) => boolean;
}

// 529: Anthropic's "overloaded".
const RETRY_STATUS = new Set([408, 429, 500, 502, 503, 504, 529]);
const MAX_BODY_IN_ERROR = 300;

/**
 * `fetch` for a provider call: a deadline on the headers, retries with exponential backoff
 * (honouring `Retry-After` up to 10 s) on 408/429/5xx/529 and network errors, and a
 * {@link FlowcatError} naming `provider` for any other non-2xx answer.
 * An abort through `opts.signal` rethrows the abort (`DOMException` "AbortError").
 */
export async function providerFetch(
  provider: string,
  url: string | URL,
  init: RequestInit,
  opts: ProviderFetchOptions = {},
): Promise<Response> {
  const retries = opts.retries ?? 2;
  const doFetch = opts.fetch ?? fetch;
  let delay = opts.backoffMs ?? 250;
  const timeoutMs = opts.timeoutMs ?? 15000;
  for (let attempt = 0;; attempt++) {
    opts.signal?.throwIfAborted();
    // The deadline covers the headers only: a fetch signal also aborts the body, and a streamed
    // answer (speech, SSE) may rightly take longer. The caller's signal covers both.
    const ctl = new AbortController();
    let timedOut = false;
    const deadline = setTimeout(() => {
      timedOut = true;
      ctl.abort(new DOMException("deadline", "TimeoutError"));
    }, timeoutMs);
    const forward = () => ctl.abort(opts.signal?.reason);
    opts.signal?.addEventListener("abort", forward, { once: true });
    let res: Response;
    try {
      res = await doFetch(url, { ...init, signal: ctl.signal });
    } catch (err) {
      opts.signal?.removeEventListener("abort", forward);
      if (opts.signal?.aborted) throw opts.signal.reason ?? err;
      if (attempt < retries && replayable(init)) {
        await sleep(delay, opts.signal);
        delay = Math.min(delay * 2, 4000);
        continue;
      }
      throw new FlowcatError(
        timedOut ? "timeout" : "closed",
        timedOut
          ? `${provider}: no answer within ${timeoutMs} ms from ${hostOf(url)}${tries(attempt)}`
          : `${provider}: request failed: ${networkCause(err)} (${hostOf(url)})${tries(attempt)}`,
        { cause: err },
      );
    } finally {
      clearTimeout(deadline);
    }
    if (res.ok) return res;
    const again = RETRY_STATUS.has(res.status) || opts.retryable?.(res) === true;
    if (again && attempt < retries && replayable(init)) {
      const wait = retryAfterMs(res.headers.get("retry-after")) ?? delay;
      await res.body?.cancel().catch(() => {});
      await sleep(Math.min(wait, 10_000), opts.signal);
      delay = Math.min(delay * 2, 4000);
      continue;
    }
    throw await providerHttpError(provider, res, attempt + 1);
  }
}

/** ` (3 attempts)` after retries, else nothing. */
function tries(attempt: number): string {
  return attempt > 0 ? ` (${attempt + 1} attempts)` : "";
}

/** `host:port` of a request URL: where it went, never a secret (keys ride in paths and queries). */
function hostOf(url: string | URL): string {
  try {
    return new URL(url).host;
  } catch {
    return "?";
  }
}

/**
 * Why a fetch failed, in a few words: Deno says only "fetch failed" and keeps the reason
 * (connection refused, DNS, TLS) in the error's cause chain.
 */
export function networkCause(err: unknown): string {
  const chain: string[] = [];
  for (let e: unknown = err, depth = 0; e !== undefined && depth < 5; depth++) {
    chain.push(e instanceof Error ? e.message : String(e));
    e = e instanceof Error ? e.cause : undefined;
  }
  const all = chain.join(" | ");
  if (/connection refused/i.test(all)) return "connection refused";
  if (/dns error|failed to lookup|name or service not known|no address/i.test(all)) {
    return "host not found";
  }
  if (/connection reset/i.test(all)) return "connection reset";
  if (/certificate|tls|handshake/i.test(all)) return `TLS failed: ${chain.at(-1)!.slice(0, 200)}`;
  return chain.at(-1)!.slice(0, 200);
}

/** A request body that can be sent again (a stream cannot). */
function replayable(init: RequestInit): boolean {
  return !(init.body instanceof ReadableStream);
}

/** Milliseconds from a `Retry-After` header (seconds or HTTP date), if present and sane. */
export function retryAfterMs(header: string | null): number | undefined {
  if (header === null) return undefined;
  const secs = Number(header);
  if (Number.isFinite(secs) && secs >= 0) return secs * 1000;
  const at = Date.parse(header);
  return Number.isFinite(at) ? Math.max(0, at - Date.now()) : undefined;
}

/**
 * The {@link FlowcatError} for a non-2xx provider answer: `auth` for 401/403, `timeout` for
 * 408/504, else `protocol`; the message holds the status and the start of the body (providers
 * put the reason there; they never echo the key back), and how many attempts were made when
 * `attempts` is more than one.
 */
export async function providerHttpError(
  provider: string,
  res: Response,
  attempts = 1,
): Promise<FlowcatError> {
  let detail = "";
  try {
    detail = (await res.text()).replace(/\s+/g, " ").trim();
  } catch { /* no body */ }
  if (detail.length > MAX_BODY_IN_ERROR) detail = `${detail.slice(0, MAX_BODY_IN_ERROR)}…`;
  return new FlowcatError(
    httpStatusKind(res.status),
    `${provider}: HTTP ${res.status}${detail ? `: ${detail}` : ""}${tries(attempts - 1)}`,
  );
}

/** The error kind of a refused request's status: `auth` (401, 403), `timeout` (408, 504), else `protocol`. */
export function httpStatusKind(status: number): FlowcatErrorKind {
  if (status === 401 || status === 403) return "auth";
  return status === 408 || status === 504 ? "timeout" : "protocol";
}

/** Wait `ms`, or reject with the abort reason as soon as `signal` aborts. */
export function sleep(ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal?.aborted) return reject(signal.reason);
    const t = setTimeout(() => {
      signal?.removeEventListener("abort", onAbort);
      resolve();
    }, ms);
    const onAbort = () => {
      clearTimeout(t);
      reject(signal!.reason);
    };
    signal?.addEventListener("abort", onAbort, { once: true });
  });
}

/** One Server-Sent Event. `event` is absent for the default "message" type. */
export interface SseEvent {
  /** Event type from the `event:` field. */
  event?: string;
  /** The `data:` lines, joined with newlines. */
  data: string;
  /** Event id from the `id:` field. */
  id?: string;
}

/**
 * Server-Sent Events from a response body (the WHATWG event-stream format: `data:` lines joined
 * with "\n", blank line dispatches, `:` comments ignored, CR/LF/CRLF line ends, the last `id`
 * carried over to later events). Stops reading
 * (and cancels the body) when the consumer breaks out or `signal` aborts.
 */
export async function* readSse(
  body: ReadableStream<Uint8Array>,
  signal?: AbortSignal,
): AsyncGenerator<SseEvent> {
  const reader = body.pipeThrough(new TextDecoderStream()).getReader();
  const onAbort = () => reader.cancel().catch(() => {});
  signal?.addEventListener("abort", onAbort, { once: true });
  let buf = "";
  let data: string[] = [];
  let event: string | undefined;
  let id: string | undefined;
  try {
    while (true) {
      if (signal?.aborted) return;
      const { value, done } = await reader.read();
      if (done) break;
      buf += value;
      let nl: number;
      while ((nl = buf.search(/\r\n|\r|\n/)) >= 0) {
        // A lone CR at the end of the chunk may be half of a CRLF: wait for more.
        if (buf[nl] === "\r" && nl === buf.length - 1) break;
        const line = buf.slice(0, nl);
        buf = buf.slice(buf[nl] === "\r" && buf[nl + 1] === "\n" ? nl + 2 : nl + 1);
        if (line === "") {
          if (data.length > 0) {
            const ev: SseEvent = { data: data.join("\n") };
            if (event !== undefined) ev.event = event;
            if (id !== undefined) ev.id = id;
            yield ev;
          }
          data = [];
          event = undefined;
          continue;
        }
        if (line.startsWith(":")) continue;
        const colon = line.indexOf(":");
        const field = colon < 0 ? line : line.slice(0, colon);
        let value = colon < 0 ? "" : line.slice(colon + 1);
        if (value.startsWith(" ")) value = value.slice(1);
        if (field === "data") data.push(value);
        else if (field === "event") event = value;
        else if (field === "id") id = value;
      }
    }
    // As the spec says: an event the stream ended in the middle of is not dispatched.
  } finally {
    signal?.removeEventListener("abort", onAbort);
    await reader.cancel().catch(() => {});
  }
}
