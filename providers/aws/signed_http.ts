/**
 * What the AWS HTTP clients (Bedrock, Polly) share: a SigV4-signed JSON POST through the
 * common provider fetch (deadline, retries on 429/5xx and on throttling codes sent with 400,
 * `auth` errors for 403), and the error an event-stream `exception` or `error` message stands
 * for.
 *
 * AWS REST-JSON errors carry the error code in the `x-amzn-ErrorType` header and
 * `{"message": ...}` in the body (smithy.io/2.0/aws/protocols/aws-restjson1-protocol.html,
 * "Operation error serialization"); a modelled error inside an event stream is a message with
 * `:message-type: exception`, `:exception-type: <code>` and the error as its JSON payload, an
 * unmodelled one has `:message-type: error` with `:error-code` and `:error-message` headers
 * (smithy.io/2.0/aws/amazon-eventstream.html).
 * @module
 */

import { FlowcatError } from "../../core/errors.ts";
import { providerFetch } from "../http.ts";
import type { AwsAccess, AwsService } from "./defaults.ts";
import { type EventMessage, headerString } from "./event_stream.ts";
import { signRequest } from "./sigv4.ts";

/** Options of {@link signedPost}. */
export interface SignedPostOptions {
  /** Provider name for errors. */
  provider: string;
  /** The service (its signing name). */
  service: AwsService;
  /** Credentials and region. */
  access: AwsAccess;
  /** Header deadline, ms. */
  timeoutMs?: number;
  /** Aborts the request. */
  signal?: AbortSignal;
  /** The fetch to use (tests). */
  fetch?: typeof fetch;
  /** Extra request headers (signed too). */
  headers?: Record<string, string>;
  /** Clock (tests); default now. */
  now?: () => Date;
}

/** POST `body` (JSON text) to `url`, signed with SigV4; resolves with the 2xx response. */
export async function signedPost(
  url: URL,
  body: string,
  opts: SignedPostOptions,
): Promise<Response> {
  const headers: [string, string][] = [
    ["host", url.host],
    ["content-type", "application/json"],
    ...Object.entries(opts.headers ?? {}),
  ];
  const signed = await signRequest(
    {
      method: "POST",
      path: url.pathname,
      query: [...url.searchParams],
      headers,
      body,
    },
    opts.access.credentials,
    {
      region: opts.access.region,
      service: opts.service.signingName,
      date: (opts.now ?? (() => new Date()))(),
    },
    // The AWS SDKs send and sign the body's hash too (x-amz-content-sha256); so does this.
    { signBody: true },
  );
  // `host` is set by fetch itself from the URL, which is what was signed.
  const sent = [...headers.slice(1), ...signed.headers];
  try {
    return await providerFetch(opts.provider, url, {
      method: "POST",
      headers: sent,
      body,
    }, {
      timeoutMs: opts.timeoutMs,
      signal: opts.signal,
      fetch: opts.fetch,
      retryable: isAwsThrottling,
    });
  } catch (err) {
    throw withoutSecret(err, opts.access.credentials.secretAccessKey);
  }
}

// The throttling codes the AWS SDKs retry whatever the status (services send some as 400):
// @smithy/service-error-classification THROTTLING_ERROR_CODES.
const THROTTLING_CODES = new Set([
  "BandwidthLimitExceeded",
  "EC2ThrottledException",
  "LimitExceededException",
  "PriorRequestNotComplete",
  "ProvisionedThroughputExceededException",
  "RequestLimitExceeded",
  "RequestThrottled",
  "RequestThrottledException",
  "SlowDown",
  "ThrottledException",
  "Throttling",
  "ThrottlingException",
  "TooManyRequestsException",
  "TransactionInProgressException",
]);

/** Whether an AWS error answer names throttling (`x-amzn-ErrorType`, before any `:`). */
export function isAwsThrottling(res: Response): boolean {
  const type = res.headers.get("x-amzn-errortype")?.split(":")[0];
  return type !== undefined && THROTTLING_CODES.has(type);
}

/** The error an `exception` / `error` message stands for; `undefined` for an event. */
export function eventStreamError(provider: string, msg: EventMessage): FlowcatError | undefined {
  const type = headerString(msg, ":message-type");
  if (type === "exception") {
    const code = headerString(msg, ":exception-type") ?? "exception";
    return new FlowcatError(errorKind(code), `${provider}: ${code}: ${payloadMessage(msg)}`);
  }
  if (type === "error") {
    const code = headerString(msg, ":error-code") ?? "error";
    const text = headerString(msg, ":error-message") ?? "";
    return new FlowcatError(errorKind(code), `${provider}: ${code}${text ? `: ${text}` : ""}`);
  }
  return undefined;
}

/** `auth` for access and signature errors, `timeout` for model timeouts, else `protocol`. */
function errorKind(code: string): FlowcatError["kind"] {
  if (/accessdenied|unrecognizedclient|signature|security|expiredtoken/i.test(code)) return "auth";
  if (/timeout/i.test(code)) return "timeout";
  return "protocol";
}

function payloadMessage(msg: EventMessage): string {
  const text = new TextDecoder().decode(msg.payload);
  try {
    const v = JSON.parse(text) as { message?: unknown; Message?: unknown };
    const m = v.message ?? v.Message;
    if (typeof m === "string") return m.slice(0, 300);
  } catch { /* not JSON: the raw text */ }
  return text.slice(0, 300);
}

/** The same error with `secret` masked (a proxy might echo a header back). */
export function withoutSecret<E>(err: E, secret: string): E | FlowcatError {
  if (!secret || !(err instanceof FlowcatError) || !err.message.includes(secret)) return err;
  return new FlowcatError(err.kind, err.message.replaceAll(secret, "[redacted]"));
}
