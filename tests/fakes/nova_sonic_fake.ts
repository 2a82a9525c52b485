/**
 * A local fake of Bedrock `InvokeModelWithBidirectionalStream` for Nova Sonic, over HTTP/2 with
 * TLS (a throwaway CA from tests/_tls_certs.ts), speaking the real wire:
 *
 * - the request must be `POST /model/<modelId>/invoke-with-bidirectional-stream`, SigV4-signed
 *   for the fake's credentials with the payload hash `STREAMING-AWS4-HMAC-SHA256-EVENTS`
 *   (else 403 with AWS's error shape: code in `x-amzn-ErrorType`, `{"message"}` body);
 * - the body is read as it streams in: each event-stream message must be a signed envelope
 *   (`:date`, `:chunk-signature` chained from the request's signature, checked in constant
 *   time) around a `chunk` message whose payload is `{"bytes": base64(JSON event)}`; an
 *   envelope with an empty payload ends the input. A bad envelope is answered with an
 *   `InvalidSignatureException` and the stream ends;
 * - the answer is an event stream of `chunk` messages the test scripts through the
 *   {@link NovaFakeSession} it gets per request, or an exception message.
 * @module
 */

import { eventSignature } from "../../providers/aws/event_signing.ts";
import {
  decodeMessage,
  encodeMessage,
  EventStreamDecoder,
  headerString,
  stringHeaders,
} from "../../providers/aws/event_stream.ts";
import type { AwsCredentials } from "../../providers/aws/sigv4.ts";
import { same, verifyStreamingRequest } from "./_aws_sigv4_verify.ts";

/** A scripted HTTP refusal of the next request(s). */
export interface NovaHttpRefusal {
  status: number;
  code: string;
  message: string;
}

/** One Nova Sonic event as the model sends it: `{event: {<name>: body}}`. */
export type NovaOut = { event: Record<string, Record<string, unknown>> };

const enc = new TextEncoder();
const dec = new TextDecoder();

/** One request: the events that came in, and a way to answer. */
export class NovaFakeSession {
  /** Input events (`{event: {...}}`) in arrival order, as verified and decoded. */
  readonly events: NovaOut["event"][] = [];
  /** Why an envelope was refused, if one was. */
  refusal: string | undefined;
  /** True once the signed end-of-input envelope arrived. */
  inputEnded = false;
  /** The model id from the path. */
  readonly modelId: string;
  #controller!: ReadableStreamDefaultController<Uint8Array>;
  #closed = false;
  #waiters: { test: () => boolean; resolve: () => void; reject: (e: Error) => void }[] = [];
  /** The response body. */
  readonly body: ReadableStream<Uint8Array>;

  constructor(modelId: string) {
    this.modelId = modelId;
    this.body = new ReadableStream({
      start: (c) => void (this.#controller = c),
      cancel: () => void (this.#closed = true),
    });
  }

  /** Names of the input events so far. */
  names(): string[] {
    return this.events.map((e) => Object.keys(e)[0]);
  }

  /** Bodies of the input events named `name`. */
  bodies(name: string): Record<string, unknown>[] {
    return this.events.filter((e) => name in e).map((e) => e[name]);
  }

  /** Resolves once `test()` holds (checked after each input event); rejects on a refusal. */
  until(test: () => boolean): Promise<void> {
    if (test()) return Promise.resolve();
    if (this.refusal !== undefined) return Promise.reject(new Error(`refused: ${this.refusal}`));
    return new Promise((resolve, reject) => this.#waiters.push({ test, resolve, reject }));
  }

  /** Refuse the input: answer with an exception and fail every waiter. */
  refuse(why: string): void {
    this.refusal = why;
    this.exception("InvalidSignatureException", why);
    for (const w of this.#waiters.splice(0)) w.reject(new Error(`refused: ${why}`));
  }

  /** Resolves once an input event named `name` arrived (`count` of them). */
  waitFor(name: string, count = 1): Promise<void> {
    return this.until(() => this.bodies(name).length >= count);
  }

  /** Send output events, each as a `chunk` message. */
  send(...events: NovaOut[]): void {
    for (const ev of events) {
      this.#enqueue(encodeMessage({
        headers: stringHeaders({
          ":event-type": "chunk",
          ":message-type": "event",
          ":content-type": "application/json",
        }),
        payload: enc.encode(
          JSON.stringify({ bytes: enc.encode(JSON.stringify(ev)).toBase64() }),
        ),
      }));
    }
  }

  /** Send a modelled error (`throttlingException`...) and end the stream. */
  exception(type: string, message: string): void {
    this.#enqueue(encodeMessage({
      headers: stringHeaders({
        ":exception-type": type,
        ":content-type": "application/json",
        ":message-type": "exception",
      }),
      payload: enc.encode(JSON.stringify({ message })),
    }));
    this.end();
  }

  /** End the response stream. */
  end(): void {
    if (this.#closed) return;
    this.#closed = true;
    this.#controller.close();
  }

  /** Break the response stream (a dropped connection). */
  drop(): void {
    if (this.#closed) return;
    this.#closed = true;
    this.#controller.error(new Error("connection reset"));
  }

  #enqueue(bytes: Uint8Array): void {
    if (!this.#closed) this.#controller.enqueue(bytes);
  }

  /** Called by the fake for every verified input event. */
  record(ev: NovaOut["event"]): void {
    this.events.push(ev);
    this.#wake();
  }

  /** Called by the fake when the signed end of input arrived. */
  markInputEnded(): void {
    this.inputEnded = true;
    // Bedrock closes its output once the input ended.
    this.end();
    this.#wake();
  }

  #wake(): void {
    this.#waiters = this.#waiters.filter((w) => {
      if (!w.test()) return true;
      w.resolve();
      return false;
    });
  }
}

/** Options of {@link startNovaSonicFake}. */
export interface NovaFakeOptions {
  credentials: AwsCredentials;
  region: string;
  /** TLS certificate and key (HTTP/2 by ALPN); without them plain HTTP/1.1. */
  cert?: string;
  key?: string;
  /** Called with each new session (script the model here). */
  onSession?: (s: NovaFakeSession) => void;
}

/** A running fake. */
export interface NovaFake {
  /** `https://127.0.0.1:<port>` (`http://` without TLS) */
  url: string;
  /** Sessions in the order they were opened. */
  sessions: NovaFakeSession[];
  /** Refuse the next requests with these, one each. */
  refusals: NovaHttpRefusal[];
  /** Resolves with session number `n` (0-based) once it is open. */
  session(n: number): Promise<NovaFakeSession>;
  close(): Promise<void>;
}

/** Start the fake on 127.0.0.1 at an ephemeral port. */
export function startNovaSonicFake(opts: NovaFakeOptions): NovaFake {
  const sessions: NovaFakeSession[] = [];
  const refusals: NovaHttpRefusal[] = [];
  let waiters: (() => void)[] = [];
  const expect = { credentials: opts.credentials, region: opts.region, service: "bedrock" };
  const tls = opts.cert !== undefined && opts.key !== undefined;
  const listen = { hostname: "127.0.0.1", port: 0, onListen: () => {} };
  const server = Deno.serve(
    tls ? { ...listen, cert: opts.cert!, key: opts.key! } : listen,
    async (req) => {
      const m = /^\/model\/([^/]+)\/invoke-with-bidirectional-stream$/.exec(
        new URL(req.url).pathname,
      );
      if (req.method !== "POST" || !m) {
        return awsError(
          404,
          "UnknownOperationException",
          "no route",
        );
      }
      const verdict = await verifyStreamingRequest(req, expect);
      if ("refused" in verdict) {
        return awsError(403, verdict.refused.code, verdict.refused.message);
      }
      const refusal = refusals.shift();
      if (refusal) return awsError(refusal.status, refusal.code, refusal.message);
      const session = new NovaFakeSession(decodeURIComponent(m[1]));
      sessions.push(session);
      void readInput(req.body!, session, verdict.seed, opts);
      opts.onSession?.(session);
      const w = waiters;
      waiters = [];
      for (const f of w) f();
      return new Response(session.body, {
        headers: { "content-type": "application/vnd.amazon.eventstream" },
      });
    },
  );
  const addr = server.addr as Deno.NetAddr;
  return {
    url: `${tls ? "https" : "http"}://127.0.0.1:${addr.port}`,
    sessions,
    refusals,
    session(n) {
      return new Promise((resolve) => {
        const check = () => (sessions.length > n ? resolve(sessions[n]) : waiters.push(check));
        check();
      });
    },
    async close() {
      for (const s of sessions) s.end();
      await server.shutdown();
    },
  };
}

/** Read, verify and decode the envelopes of a request body as they arrive. */
async function readInput(
  body: ReadableStream<Uint8Array>,
  session: NovaFakeSession,
  seed: string,
  opts: NovaFakeOptions,
): Promise<void> {
  const decoder = new EventStreamDecoder();
  let prior = seed;
  try {
    for await (const chunk of body) {
      for (const envelope of decoder.push(chunk)) {
        const date = envelope.headers[":date"];
        const sig = envelope.headers[":chunk-signature"];
        if (date?.type !== "timestamp" || sig?.type !== "binary") {
          return refuse(session, "envelope without :date and :chunk-signature");
        }
        const at = new Date(Number(date.value));
        if (Math.abs(Date.now() - at.getTime()) > 5 * 60_000) {
          return refuse(session, "envelope :date out of range");
        }
        const want = await eventSignature(
          opts.credentials.secretAccessKey,
          { region: opts.region, service: "bedrock", date: at },
          prior,
          { ":date": date },
          envelope.payload,
        );
        if (!same(sig.value.toHex(), want)) return refuse(session, "bad :chunk-signature");
        prior = want;
        if (envelope.payload.length === 0) return session.markInputEnded();
        const inner = decodeMessage(envelope.payload);
        if (headerString(inner, ":event-type") !== "chunk") {
          return refuse(session, "inner message is not a chunk event");
        }
        const { bytes } = JSON.parse(dec.decode(inner.payload)) as { bytes: string };
        const ev = JSON.parse(dec.decode(Uint8Array.fromBase64(bytes))) as NovaOut;
        session.record(ev.event);
      }
    }
  } catch { /* the client went away */ }
}

function refuse(session: NovaFakeSession, why: string): void {
  session.refuse(why);
}

function awsError(status: number, code: string, message: string): Response {
  return new Response(JSON.stringify({ message }), {
    status,
    headers: { "content-type": "application/json", "x-amzn-errortype": code },
  });
}

/** Output events as Nova Sonic writes them (AWS's "Handling output events" guide). */
export const novaOut = {
  completionStart: (): NovaOut => ({
    event: { completionStart: { sessionId: "s", promptName: "p", completionId: "c" } },
  }),
  contentStart: (role: string, type: string, stage?: "SPECULATIVE" | "FINAL"): NovaOut => ({
    event: {
      contentStart: {
        contentId: crypto.randomUUID(),
        role,
        type,
        ...(stage ? { additionalModelFields: JSON.stringify({ generationStage: stage }) } : {}),
      },
    },
  }),
  textOutput: (role: string, content: string): NovaOut => ({
    event: { textOutput: { role, content } },
  }),
  audioOutput: (pcm: Int16Array): NovaOut => ({
    event: {
      audioOutput: {
        content: new Uint8Array(pcm.buffer, pcm.byteOffset, pcm.byteLength).toBase64(),
      },
    },
  }),
  toolUse: (toolUseId: string, toolName: string, args: unknown): NovaOut => ({
    event: { toolUse: { toolUseId, toolName, content: JSON.stringify(args) } },
  }),
  /** A whole TEXT block of `role` (the caller's transcript, the model's words). */
  textBlock: (
    role: string,
    text: string,
    stage: "SPECULATIVE" | "FINAL" = "FINAL",
    stopReason = "END_TURN",
  ): NovaOut[] => [
    novaOut.contentStart(role, "TEXT", stage),
    novaOut.textOutput(role, text),
    novaOut.contentEnd(stopReason),
  ],
  /** A whole TOOL block: the model calls `toolName` with `args`. */
  toolCall: (toolUseId: string, toolName: string, args: unknown): NovaOut[] => [
    novaOut.contentStart("ASSISTANT", "TOOL"),
    novaOut.toolUse(toolUseId, toolName, args),
    novaOut.contentEnd("TOOL_USE", "TOOL"),
  ],
  contentEnd: (stopReason: string, type = "TEXT"): NovaOut => ({
    event: { contentEnd: { stopReason, type } },
  }),
  usage: (totalInputTokens: number, totalOutputTokens: number): NovaOut => ({
    event: {
      usageEvent: {
        totalInputTokens,
        totalOutputTokens,
        totalTokens: totalInputTokens + totalOutputTokens,
      },
    },
  }),
  completionEnd: (): NovaOut => ({ event: { completionEnd: { stopReason: "END_TURN" } } }),
};
