/**
 * A local fake of the two AWS HTTP APIs Flowcat calls, speaking their real wire:
 *
 * - Bedrock `ConverseStream` (`POST /model/<modelId>/converse-stream`): checks the request as
 *   Bedrock does (user first, roles alternating, each `toolResult` answering a `toolUse` of the
 *   message before, `toolConfig.tools[].toolSpec`) and answers with an
 *   `application/vnd.amazon.eventstream` body of scripted events (messageStart,
 *   contentBlockStart/Delta/Stop, messageStop, metadata) or exceptions;
 * - Polly `SynthesizeSpeech` (`POST /v1/speech`): checks `OutputFormat: pcm`, `SampleRate` 8000
 *   or 16000, `VoiceId`, SSML with a `<speak>` root, and streams raw PCM back.
 *
 * Every request must carry a valid SigV4 signature for the fake's credentials (verified as AWS
 * does: _aws_sigv4_verify.ts), else 403 with AWS's error shape: the code in
 * `x-amzn-ErrorType`, `{"message"}` in the body. Scripted HTTP errors use the same shape.
 * Listens on 127.0.0.1 at an ephemeral port.
 * @module
 */

import { encodeMessage, stringHeaders } from "../../providers/aws/event_stream.ts";
import type { AwsCredentials } from "../../providers/aws/sigv4.ts";
import { pacedStream } from "./_paced_stream.ts";
import { type SigV4Refusal, verifySignedRequest } from "./_aws_sigv4_verify.ts";

/** A request the fake received. */
export interface AwsRequest {
  path: string;
  headers: Headers;
  /** Parsed JSON body. */
  body: Record<string, unknown>;
  /** Why the signature was refused, if it was. */
  refused?: SigV4Refusal;
}

/** A scripted answer. */
export type AwsReply =
  | { status: number; code: string; message: string; retryAfter?: string }
  | {
    /** Wire bytes of the body, one piece per write. */
    pieces: Uint8Array[];
    gapMs?: number;
    /** Keep the body open after the last piece. */
    hold?: boolean;
    /** After the last piece, break the connection instead of ending the body (a drop). */
    reset?: boolean;
    contentType?: string;
  };

/** The fake's credentials and region. */
export interface AwsFakeOptions {
  credentials?: AwsCredentials;
  region?: string;
}

/** Credentials tests sign with (AWS's documented example key). */
export const FAKE_AWS_CREDENTIALS: AwsCredentials = {
  accessKeyId: "AKIDEXAMPLE",
  secretAccessKey: "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY",
};

/** The `credentials` service option for a fake's credentials and region. */
export function awsEnv(creds: AwsCredentials, region: string): Record<string, string> {
  return {
    AWS_ACCESS_KEY_ID: creds.accessKeyId,
    AWS_SECRET_ACCESS_KEY: creds.secretAccessKey,
    AWS_REGION: region,
    ...(creds.sessionToken ? { AWS_SESSION_TOKEN: creds.sessionToken } : {}),
  };
}

/** One Bedrock stream event as wire bytes. */
export function converseEvent(type: string, data: Record<string, unknown>): Uint8Array {
  return encodeMessage({
    headers: stringHeaders({
      ":event-type": type,
      ":content-type": "application/json",
      ":message-type": "event",
    }),
    // Bedrock pads events with a `p` field of letters (length hiding); clients ignore it.
    payload: new TextEncoder().encode(JSON.stringify({ ...data, p: "abcdefgh" })),
  });
}

/** An `exception` message as an event stream carries a modelled error. */
export function exceptionEvent(code: string, message: string): Uint8Array {
  return encodeMessage({
    headers: stringHeaders({
      ":exception-type": code,
      ":content-type": "application/json",
      ":message-type": "exception",
    }),
    payload: new TextEncoder().encode(JSON.stringify({ message })),
  });
}

/** What {@link converseStream} builds a reply from. */
export interface ConverseScript {
  text?: string[];
  tools?: { id: string; name: string; json: string[] }[];
  stopReason?: string;
  usage?: { inputTokens: number; outputTokens: number };
  /** Leave out messageStop and metadata (a stream cut short). */
  truncate?: boolean;
}

/** The events of one ConverseStream answer, in Bedrock's order. */
export function converseStream(s: ConverseScript): Uint8Array[] {
  const out = [converseEvent("messageStart", { role: "assistant" })];
  let index = 0;
  if (s.text) {
    for (const t of s.text) {
      out.push(
        converseEvent("contentBlockDelta", { contentBlockIndex: index, delta: { text: t } }),
      );
    }
    out.push(converseEvent("contentBlockStop", { contentBlockIndex: index++ }));
  }
  for (const tool of s.tools ?? []) {
    out.push(converseEvent("contentBlockStart", {
      contentBlockIndex: index,
      start: { toolUse: { toolUseId: tool.id, name: tool.name } },
    }));
    for (const j of tool.json) {
      out.push(converseEvent("contentBlockDelta", {
        contentBlockIndex: index,
        delta: { toolUse: { input: j } },
      }));
    }
    out.push(converseEvent("contentBlockStop", { contentBlockIndex: index++ }));
  }
  if (s.truncate) return out;
  out.push(converseEvent("messageStop", {
    stopReason: s.stopReason ?? (s.tools?.length ? "tool_use" : "end_turn"),
  }));
  const usage = s.usage ?? { inputTokens: 10, outputTokens: 5 };
  out.push(converseEvent("metadata", {
    usage: { ...usage, totalTokens: usage.inputTokens + usage.outputTokens },
    metrics: { latencyMs: 42 },
  }));
  return out;
}

/** The fake server (see the module doc). */
export class AwsHttpFake {
  /** Every request, refused ones included. */
  readonly requests: AwsRequest[] = [];
  /** Bodies the client dropped before their end. */
  cancelled = 0;
  readonly credentials: AwsCredentials;
  readonly region: string;
  readonly #replies: AwsReply[] = [];
  #server: Deno.HttpServer<Deno.NetAddr> | undefined;
  readonly #streams = new Set<() => void>();

  /** A fake accepting `opts.credentials` (default {@link FAKE_AWS_CREDENTIALS}). */
  constructor(opts: AwsFakeOptions = {}) {
    this.credentials = opts.credentials ?? FAKE_AWS_CREDENTIALS;
    this.region = opts.region ?? "us-east-1";
  }

  /** Listen on 127.0.0.1 (ephemeral port). */
  start(): this {
    this.#server = Deno.serve(
      {
        hostname: "127.0.0.1",
        port: 0,
        onListen: () => {},
        // A body broken on purpose (`reset`) is no server fault to print.
        onError: () => new Response(null, { status: 500 }),
      },
      (req) => this.#handle(req),
    );
    return this;
  }

  /** `http://127.0.0.1:<port>`. */
  get url(): string {
    return `http://127.0.0.1:${this.#server!.addr.port}`;
  }

  /** The `credentials` service option matching this fake. */
  get env(): Record<string, string> {
    return awsEnv(this.credentials, this.region);
  }

  /** Queue the answer to the next accepted request. */
  reply(r: AwsReply): void {
    this.#replies.push(r);
  }

  /** Stop serving; ends held bodies. */
  async close(): Promise<void> {
    for (const stop of this.#streams) stop();
    await this.#server?.shutdown();
  }

  async #handle(req: Request): Promise<Response> {
    const path = new URL(req.url).pathname;
    const raw = new Uint8Array(await req.arrayBuffer());
    let body: Record<string, unknown> = {};
    try {
      body = JSON.parse(new TextDecoder().decode(raw));
    } catch { /* validated below */ }
    const bedrock = /^\/model\/[^/]+\/converse-stream$/.test(path);
    const service = bedrock ? "bedrock" : "polly";
    const refused = await verifySignedRequest(req, raw, {
      credentials: this.credentials,
      region: this.region,
      service,
    });
    const rec: AwsRequest = { path, headers: req.headers, body, ...(refused ? { refused } : {}) };
    this.requests.push(rec);
    if (refused) return awsError(403, refused.code, refused.message);
    if (!bedrock && path !== "/v1/speech") return awsError(404, "UnknownOperationException", path);
    const invalid = bedrock ? converseProblem(body) : pollyProblem(body);
    if (invalid) return awsError(400, invalid.code, invalid.message);
    const reply = this.#replies.shift() ??
      (bedrock ? { pieces: converseStream({ text: ["ok"] }) } : { pieces: [new Uint8Array(320)] });
    if ("status" in reply) {
      return awsError(reply.status, reply.code, reply.message, reply.retryAfter);
    }
    const stream = pacedStream(reply.pieces, {
      gapMs: reply.gapMs,
      hold: reply.hold,
      onCancel: () => this.cancelled++,
      onDone: () => this.#streams.delete(stream.stop),
    });
    this.#streams.add(stream.stop);
    // An errored body makes the server abort the response mid-way, as a dropped socket looks.
    const out = reply.reset
      ? stream.body.pipeThrough(
        new TransformStream({
          flush() {
            throw new Error("connection reset by the test");
          },
        }),
      )
      : stream.body;
    return new Response(out, {
      headers: {
        "content-type": reply.contentType ??
          (bedrock ? "application/vnd.amazon.eventstream" : "audio/pcm"),
        "x-amzn-requestid": crypto.randomUUID(),
      },
    });
  }
}

/** AWS REST-JSON error response. */
function awsError(status: number, code: string, message: string, retryAfter?: string): Response {
  return Response.json({ message }, {
    status,
    headers: {
      "x-amzn-errortype": code,
      "x-amzn-requestid": crypto.randomUUID(),
      ...(retryAfter ? { "retry-after": retryAfter } : {}),
    },
  });
}

type Problem = { code: string; message: string } | undefined;

function converseProblem(body: Record<string, unknown>): Problem {
  const messages = body.messages as { role: string; content: Record<string, unknown>[] }[];
  if (!Array.isArray(messages) || messages.length === 0) {
    return { code: "ValidationException", message: "messages is required" };
  }
  if (messages[0].role !== "user") {
    return {
      code: "ValidationException",
      message: "A conversation must start with a user message.",
    };
  }
  for (let i = 0; i < messages.length; i++) {
    const m = messages[i];
    if (i > 0 && m.role === messages[i - 1].role) {
      return { code: "ValidationException", message: "roles must alternate" };
    }
    if (!Array.isArray(m.content) || m.content.length === 0) {
      return { code: "ValidationException", message: "content must not be empty" };
    }
    for (const block of m.content) {
      const result = block.toolResult as { toolUseId?: string } | undefined;
      if (!result) continue;
      const prev = messages[i - 1]?.content ?? [];
      const asked = prev.some((b) =>
        (b.toolUse as { toolUseId?: string } | undefined)?.toolUseId === result.toolUseId
      );
      if (!asked) {
        return { code: "ValidationException", message: "toolResult without a matching toolUse" };
      }
    }
  }
  const tools = (body.toolConfig as { tools?: unknown[] } | undefined)?.tools;
  if (tools !== undefined) {
    for (
      const t of tools as { toolSpec?: { name?: unknown; inputSchema?: { json?: unknown } } }[]
    ) {
      if (
        typeof t.toolSpec?.name !== "string" || typeof t.toolSpec.inputSchema?.json !== "object"
      ) {
        return { code: "ValidationException", message: "bad toolSpec" };
      }
    }
  }
  return undefined;
}

function pollyProblem(body: Record<string, unknown>): Problem {
  if (body.OutputFormat !== "pcm") {
    return { code: "ValidationException", message: "this fake serves OutputFormat pcm only" };
  }
  if (body.SampleRate !== "8000" && body.SampleRate !== "16000") {
    return { code: "InvalidSampleRateException", message: "pcm takes 8000 or 16000" };
  }
  if (typeof body.VoiceId !== "string" || typeof body.Text !== "string") {
    return { code: "ValidationException", message: "VoiceId and Text are required" };
  }
  if (body.TextType === "ssml" && !/^\s*<speak[\s>]/.test(body.Text)) {
    return { code: "InvalidSsmlException", message: "Invalid SSML request" };
  }
  return undefined;
}
