/**
 * One Bedrock `InvokeModelWithBidirectionalStream` request: a SigV4-signed POST over HTTP/2
 * whose body stays open for the whole session. The request is signed with the payload hash
 * `STREAMING-AWS4-HMAC-SHA256-EVENTS` and every outgoing event is wrapped in a signed envelope
 * chained to that signature (event_signing.ts), as the AWS SDKs do; the answer is an event
 * stream read as it arrives. `fetch` in Deno sends a `ReadableStream` body (`duplex: "half"`)
 * and hands over the response while that body is still open, which is all a full-duplex
 * exchange over one HTTP/2 stream needs.
 *
 * Errors: an HTTP refusal is REST-JSON (code in `x-amzn-ErrorType`, `{"message"}` in the
 * body): 403 is `auth`; an error inside the stream is an `exception` message
 * (`validationException`, `throttlingException`, `modelTimeoutException`...).
 * @module
 */

import { FlowcatError } from "../../core/errors.ts";
import { httpStatusKind, networkCause } from "../http.ts";
import type { AwsAccess } from "./defaults.ts";
import { EventSigner, STREAMING_EVENTS_PAYLOAD } from "./event_signing.ts";
import { readEventStream } from "./event_stream.ts";
import { chunkEvent, chunkMessage, type NovaEvent } from "./nova_sonic_wire.ts";
import { eventStreamError, withoutSecret } from "./signed_http.ts";
import { signRequest } from "./sigv4.ts";

/** How to open a stream. */
export interface NovaStreamOptions {
  /** Provider name for errors. */
  provider: string;
  /** `https://<host>/model/<modelId>/invoke-with-bidirectional-stream`. */
  url: URL;
  /** Credentials and region. */
  access: AwsAccess;
  /** Deadline for the response headers, ms. */
  timeoutMs: number;
  /** The fetch to use (tests: one with a client trusting a test CA). */
  fetch?: typeof fetch;
  /** Clock (tests). */
  now?: () => Date;
}

/** An output event: its name and body. */
export type NovaOutputEvent = { name: string; body: Record<string, unknown> };

/** One open session stream. */
export class NovaStream {
  readonly #drained = Promise.withResolvers<void>();
  #controller!: ReadableStreamDefaultController<Uint8Array>;
  #signer!: EventSigner;
  #out: Promise<void> = Promise.resolve();
  #ended = false;
  #abort = new AbortController();
  #response: Response | undefined;

  private constructor(private readonly opts: NovaStreamOptions) {}

  /** Sign the request, queue `first` events and wait for the response headers. */
  static async open(opts: NovaStreamOptions, first: readonly NovaEvent[]): Promise<NovaStream> {
    const s = new NovaStream(opts);
    await s.#open(first);
    return s;
  }

  async #open(first: readonly NovaEvent[]): Promise<void> {
    const { url, access, provider } = this.opts;
    const now = this.opts.now ?? (() => new Date());
    const headers: [string, string][] = [
      ["host", url.host],
      ["content-type", "application/vnd.amazon.eventstream"],
    ];
    const signed = await signRequest(
      { method: "POST", path: url.pathname, query: [], headers, body: STREAMING_EVENTS_PAYLOAD },
      access.credentials,
      { region: access.region, service: "bedrock", date: now() },
      { signBody: true },
    );
    this.#signer = new EventSigner(
      access.credentials.secretAccessKey,
      { region: access.region, service: "bedrock" },
      signed.parts.signature,
      now,
    );
    const body = new ReadableStream<Uint8Array>({ start: (c) => void (this.#controller = c) });
    for (const ev of first) this.send(ev);
    const deadline = setTimeout(
      () => this.#abort.abort(new DOMException("deadline", "TimeoutError")),
      this.opts.timeoutMs,
    );
    let res: Response;
    try {
      res = await (this.opts.fetch ?? fetch)(url, {
        method: "POST",
        // `host` is set by fetch from the URL, which is what was signed.
        headers: [...headers.slice(1), ...signed.headers],
        body,
        signal: this.#abort.signal,
        duplex: "half",
      } as RequestInit);
    } catch (err) {
      this.#ended = true;
      const timedOut = this.#abort.signal.reason instanceof DOMException &&
        this.#abort.signal.reason.name === "TimeoutError";
      throw timedOut
        ? new FlowcatError("timeout", `${provider}: no answer within ${this.opts.timeoutMs} ms`)
        : new FlowcatError("closed", `${provider}: could not connect: ${networkCause(err)}`, {
          cause: err,
        });
    } finally {
      clearTimeout(deadline);
    }
    if (!res.ok) {
      this.#ended = true;
      const err = await httpError(provider, res);
      this.#abort.abort();
      throw withoutSecret(err, access.credentials.secretAccessKey);
    }
    this.#response = res;
  }

  /** Queue `ev` (signed in order); ignored once the stream ended. */
  send(ev: NovaEvent): void {
    if (this.#ended) return;
    const message = chunkMessage(ev);
    this.#out = this.#out.then(async () => {
      const frame = await this.#signer.sign(message);
      if (!this.#ended) this.#controller.enqueue(frame);
    }).catch(() => {});
  }

  /** Send the signed empty message that ends the input, then close the body; idempotent. */
  async end(): Promise<void> {
    if (this.#ended) return;
    const done = this.#out.then(async () => {
      const frame = await this.#signer.sign(new Uint8Array(0));
      this.#controller.enqueue(frame);
      this.#controller.close();
    }).catch(() => {});
    this.#out = done;
    await done;
    this.#ended = true;
  }

  /** Drop the connection at once; idempotent. */
  abort(): void {
    this.#ended = true;
    try {
      this.#controller.close();
    } catch { /* already closed */ }
    this.#abort.abort();
  }

  /**
   * The output events, as they arrive. Throws the stream's `exception` as a `FlowcatError`, or
   * `closed` when the connection breaks; ends quietly after {@link NovaStream.abort}.
   */
  async *events(): AsyncGenerator<NovaOutputEvent> {
    try {
      yield* this.#events();
    } finally {
      this.#drained.resolve();
    }
  }

  /** Settles once the output stream ended or failed: the service had all the input by then. */
  get drained(): Promise<void> {
    return this.#drained.promise;
  }

  async *#events(): AsyncGenerator<NovaOutputEvent> {
    const p = this.opts.provider;
    const body = this.#response?.body;
    if (!body) return;
    for await (const msg of readEventStream(body, this.#abort.signal, p)) {
      const err = eventStreamError(p, msg);
      if (err !== undefined) throw err;
      let event: Record<string, Record<string, unknown>> | undefined;
      try {
        event = chunkEvent(msg);
      } catch (e) {
        throw new FlowcatError("protocol", `${p}: bad output event: ${(e as Error).message}`);
      }
      for (const [name, value] of Object.entries(event ?? {})) {
        yield { name, body: typeof value === "object" && value !== null ? value : {} };
      }
    }
  }
}

/** The error a refused request stands for: `<provider>: <code> (HTTP <status>): <message>`. */
async function httpError(provider: string, res: Response): Promise<FlowcatError> {
  const code = (res.headers.get("x-amzn-errortype") ?? "").split(":")[0] || `HTTP ${res.status}`;
  let message = "";
  try {
    const text = await res.text();
    try {
      const v = JSON.parse(text) as { message?: unknown; Message?: unknown };
      message = String(v.message ?? v.Message ?? "");
    } catch {
      message = text;
    }
  } catch { /* no body */ }
  message = message.replace(/\s+/g, " ").trim().slice(0, 300);
  return new FlowcatError(
    httpStatusKind(res.status),
    `${provider}: ${code} (HTTP ${res.status})${message ? `: ${message}` : ""}`,
  );
}
