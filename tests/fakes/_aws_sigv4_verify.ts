/**
 * What an AWS endpoint checks before it serves a request, for the local AWS fakes: the SigV4
 * `Authorization` header (or a presigned query) is rebuilt from the request exactly as it
 * arrived (method, raw path, query, the signed headers' received values, the body's hash) and
 * signed with the fake's own copy of the secret; the signature must match (compared in
 * constant time), the access key, region and service of the credential scope must be the
 * fake's, the time within 5 minutes (a presigned URL: not expired) and a session token, when
 * the fake has one, signed and equal. The rebuilt canonical form is AWS's, checked against the
 * published suite in tests/aws_sigv4_test.ts.
 */

import { type AwsCredentials, sha256Hex, signatureParts } from "../../providers/aws/sigv4.ts";

/** What the fake expects of a signature. */
export interface SigV4Expect {
  /** The credentials the fake accepts. */
  credentials: AwsCredentials;
  /** Region of the fake's endpoint. */
  region: string;
  /** Signing name of the service. */
  service: string;
  /** Clock (default now). */
  now?: Date;
}

/** Why a request was refused, as AWS's error code and message. */
export interface SigV4Refusal {
  code: string;
  message: string;
}

const SKEW_MS = 5 * 60_000;

/** Check a header-signed request; `undefined` when it is good. */
export function verifySignedRequest(
  req: Request,
  body: Uint8Array,
  expect: SigV4Expect,
): Promise<SigV4Refusal | undefined> {
  return verifyHeaderSignature(req, sha256Hex(body), expect);
}

/**
 * Check a request whose body is signed message by message: its payload hash must be the literal
 * `STREAMING-AWS4-HMAC-SHA256-EVENTS`. Gives the request's signature (the chain's seed) when
 * it is good.
 */
export async function verifyStreamingRequest(
  req: Request,
  expect: SigV4Expect,
): Promise<{ refused: SigV4Refusal } | { seed: string }> {
  const literal = "STREAMING-AWS4-HMAC-SHA256-EVENTS";
  if (req.headers.get("x-amz-content-sha256") !== literal) {
    return {
      refused: { code: "InvalidSignatureException", message: `payload hash not ${literal}` },
    };
  }
  const refused = await verifyHeaderSignature(req, Promise.resolve(literal), expect);
  if (refused) return { refused };
  return { seed: /Signature=([0-9a-f]{64})$/.exec(req.headers.get("authorization")!)![1] };
}

async function verifyHeaderSignature(
  req: Request,
  payloadHash: Promise<string>,
  expect: SigV4Expect,
): Promise<SigV4Refusal | undefined> {
  const auth = req.headers.get("authorization") ?? "";
  const m = /^AWS4-HMAC-SHA256 Credential=([^,]+), SignedHeaders=([^,]+), Signature=([0-9a-f]{64})$/
    .exec(auth);
  if (!m) return { code: "MissingAuthenticationTokenException", message: "no SigV4 header" };
  const [, credential, signedNames, signature] = m;
  const date = req.headers.get("x-amz-date") ?? "";
  const bad = checkScope(credential, date, expect);
  if (bad) return bad;
  const names = signedNames.split(";");
  if (!names.includes("host") || !names.includes("x-amz-date")) {
    return { code: "InvalidSignatureException", message: "host and x-amz-date must be signed" };
  }
  const token = expect.credentials.sessionToken;
  if (token !== undefined) {
    const sent = req.headers.get("x-amz-security-token");
    if (!names.includes("x-amz-security-token") || sent === null || !same(sent, token)) {
      return { code: "UnrecognizedClientException", message: "The security token is invalid." };
    }
  }
  const bodyHash = await payloadHash;
  const claimed = req.headers.get("x-amz-content-sha256");
  if (claimed !== null && claimed !== bodyHash) {
    return { code: "XAmzContentSHA256Mismatch", message: "The body does not match its hash." };
  }
  const url = new URL(req.url);
  // Over HTTP/2 the host travels as `:authority`, which the server puts in the URL.
  const headers = names.map((n) =>
    [n, req.headers.get(n) ?? (n === "host" ? url.host : "")] as [string, string]
  );
  return await compare(
    { method: req.method, path: url.pathname, query: [...url.searchParams], headers },
    bodyHash,
    date,
    signature,
    expect,
  );
}

/** Check a presigned request (a WebSocket upgrade); `undefined` when it is good. */
export async function verifyPresigned(
  req: Request,
  expect: SigV4Expect,
): Promise<SigV4Refusal | undefined> {
  const url = new URL(req.url);
  const q = url.searchParams;
  if (q.get("X-Amz-Algorithm") !== "AWS4-HMAC-SHA256") {
    return { code: "MissingAuthenticationTokenException", message: "not presigned" };
  }
  const date = q.get("X-Amz-Date") ?? "";
  const bad = checkScope(
    q.get("X-Amz-Credential") ?? "",
    date,
    expect,
    Number(q.get("X-Amz-Expires")),
  );
  if (bad) return bad;
  const token = expect.credentials.sessionToken;
  if (token !== undefined && !same(q.get("X-Amz-Security-Token") ?? "", token)) {
    return { code: "UnrecognizedClientException", message: "The security token is invalid." };
  }
  const names = (q.get("X-Amz-SignedHeaders") ?? "").split(";");
  const headers = names.map((n) => [n, req.headers.get(n) ?? ""] as [string, string]);
  const query = [...q].filter(([k]) => k !== "X-Amz-Signature");
  return await compare(
    { method: req.method, path: url.pathname, query, headers },
    await sha256Hex(""),
    date,
    q.get("X-Amz-Signature") ?? "",
    expect,
  );
}

function checkScope(
  credential: string,
  date: string,
  expect: SigV4Expect,
  expiresS?: number,
): SigV4Refusal | undefined {
  const [key, day, region, service, term] = credential.split("/");
  if (key !== expect.credentials.accessKeyId) {
    return { code: "UnrecognizedClientException", message: "The security token is invalid." };
  }
  if (region !== expect.region || service !== expect.service || term !== "aws4_request") {
    return { code: "InvalidSignatureException", message: `bad credential scope ${credential}` };
  }
  const at = parseAmzDate(date);
  if (at === undefined || day !== date.slice(0, 8)) {
    return { code: "InvalidSignatureException", message: "bad X-Amz-Date" };
  }
  const now = (expect.now ?? new Date()).getTime();
  if (expiresS !== undefined) {
    if (!(expiresS > 0 && expiresS <= 604800) || now > at + expiresS * 1000) {
      return { code: "InvalidSignatureException", message: "Signature expired" };
    }
  } else if (Math.abs(now - at) > SKEW_MS) {
    return { code: "InvalidSignatureException", message: "Signature expired" };
  }
  return undefined;
}

async function compare(
  req: Parameters<typeof signatureParts>[0],
  payloadHash: string,
  date: string,
  signature: string,
  expect: SigV4Expect,
): Promise<SigV4Refusal | undefined> {
  const parts = await signatureParts(req, payloadHash, expect.credentials, {
    region: expect.region,
    service: expect.service,
    date: new Date(parseAmzDate(date)!),
  });
  if (same(parts.signature, signature)) return undefined;
  return {
    code: "InvalidSignatureException",
    message: "The request signature we calculated does not match the signature you provided.",
  };
}

function parseAmzDate(s: string): number | undefined {
  const m = /^(\d{4})(\d{2})(\d{2})T(\d{2})(\d{2})(\d{2})Z$/.exec(s);
  if (!m) return undefined;
  return Date.UTC(+m[1], +m[2] - 1, +m[3], +m[4], +m[5], +m[6]);
}

/** Constant-time string equality. */
export function same(a: string, b: string): boolean {
  if (a.length !== b.length) return false;
  let diff = 0;
  for (let i = 0; i < a.length; i++) diff |= a.charCodeAt(i) ^ b.charCodeAt(i);
  return diff === 0;
}
