/**
 * AWS Signature Version 4: the `Authorization` header of a signed request and the query of a
 * presigned URL (docs.aws.amazon.com/IAM/latest/UserGuide/reference_sigv-create-signed-request.html).
 * Paths are normalized and their segments URI-encoded once more, as every AWS service but S3
 * expects; the session token, when there is one, is signed (`x-amz-security-token`). Checked
 * against AWS's published test suite (tests/aws_sigv4_test.ts).
 *
 * @example
 * ```ts
 * import { signRequest } from "./sigv4.ts";
 * const signed = await signRequest(
 *   { method: "GET", path: "/", query: [], headers: [["host", "example.amazonaws.com"]] },
 *   { accessKeyId: "AKID", secretAccessKey: "secret" },
 *   { region: "us-east-1", service: "service", date: new Date() },
 * );
 * signed.headers; // [["x-amz-date", ...], ["authorization", "AWS4-HMAC-SHA256 Credential=..."]]
 * ```
 * @module
 */

/** Long-lived or temporary AWS credentials. */
export interface AwsCredentials {
  /** `AWS_ACCESS_KEY_ID`. */
  accessKeyId: string;
  /** `AWS_SECRET_ACCESS_KEY`; never logged. */
  secretAccessKey: string;
  /** `AWS_SESSION_TOKEN` of temporary credentials. */
  sessionToken?: string;
}

/** Where and when a signature is valid. */
export interface SigningScope {
  /** Region, e.g. `us-east-1`. */
  region: string;
  /** Signing name of the service (`transcribe`, `bedrock`, `polly`). */
  service: string;
  /** Signing time. */
  date: Date;
}

/** A request as the signer sees it. */
export interface SignableRequest {
  /** HTTP method. */
  method: string;
  /** Path as it appears on the request line; normalized and encoded for the signature. */
  path: string;
  /** Query parameters, decoded; repeated names allowed. */
  query: readonly (readonly [string, string])[];
  /** Headers (any case, repeated names allowed); `host` among them. */
  headers: readonly (readonly [string, string])[];
  /** The body, or the hex SHA-256 of it; empty when absent. */
  body?: Uint8Array | string;
}

/** The intermediate strings of a signature (for tests and for a verifying fake). */
export interface SignatureParts {
  /** The canonical request. */
  canonicalRequest: string;
  /** The string to sign. */
  stringToSign: string;
  /** Hex HMAC-SHA256 signature. */
  signature: string;
  /** `;`-joined lower-case names of the signed headers. */
  signedHeaders: string;
  /** `<date>/<region>/<service>/aws4_request`. */
  credentialScope: string;
}

/** A request signed in its headers. */
export interface SignedHeaders {
  /** Headers to add to the request (`x-amz-date`, token, payload hash, `authorization`). */
  headers: [string, string][];
  /** How the signature was made. */
  parts: SignatureParts;
}

/** A presigned request. */
export interface PresignedQuery {
  /** The whole query to send: the request's own parameters and the `X-Amz-*` ones. */
  query: [string, string][];
  /** How the signature was made. */
  parts: SignatureParts;
}

const ALGORITHM = "AWS4-HMAC-SHA256";
const enc = new TextEncoder();

/** `20150830T123600Z` of a date. */
export function amzDate(date: Date): string {
  return date.toISOString().replace(/[-:]/g, "").replace(/\.\d{3}/, "");
}

/** Hex SHA-256 of bytes or UTF-8 text. */
export async function sha256Hex(data: Uint8Array | string): Promise<string> {
  const bytes = typeof data === "string" ? enc.encode(data) : data;
  return hex(new Uint8Array(await crypto.subtle.digest("SHA-256", bytes as BufferSource)));
}

/** RFC 3986 encoding: everything but `A-Z a-z 0-9 - . _ ~` as `%XX` of its UTF-8 bytes. */
export function uriEncode(s: string): string {
  return encodeURIComponent(s).replace(
    /[!'()*]/g,
    (c) => `%${c.charCodeAt(0).toString(16).toUpperCase()}`,
  );
}

/**
 * Sign `req` in its headers: adds `x-amz-date`, `x-amz-security-token` (temporary credentials),
 * `x-amz-content-sha256` when `signBody` asks for it, and `authorization`.
 */
export async function signRequest(
  req: SignableRequest,
  creds: AwsCredentials,
  scope: SigningScope,
  opts: { signBody?: boolean } = {},
): Promise<SignedHeaders> {
  const date = amzDate(scope.date);
  const payloadHash = await payloadHashOf(req.body);
  const added: [string, string][] = [["x-amz-date", date]];
  if (creds.sessionToken) added.push(["x-amz-security-token", creds.sessionToken]);
  if (opts.signBody) added.push(["x-amz-content-sha256", payloadHash]);
  const parts = await signatureParts(
    { ...req, headers: [...req.headers, ...added] },
    payloadHash,
    creds,
    scope,
  );
  const authorization = `${ALGORITHM} Credential=${creds.accessKeyId}/${parts.credentialScope}, ` +
    `SignedHeaders=${parts.signedHeaders}, Signature=${parts.signature}`;
  return { headers: [...added, ["authorization", authorization]], parts };
}

/**
 * Presign `req` for `expiresSeconds`: its query gains `X-Amz-Algorithm`, `X-Amz-Credential`,
 * `X-Amz-Date`, `X-Amz-Expires`, `X-Amz-SignedHeaders`, the session token and, last,
 * `X-Amz-Signature`.
 */
export async function presignRequest(
  req: SignableRequest,
  creds: AwsCredentials,
  scope: SigningScope,
  expiresSeconds: number,
): Promise<PresignedQuery> {
  const signed = signedHeaderNames(req.headers);
  const query: [string, string][] = [
    ...req.query.map(([k, v]) => [k, v] as [string, string]),
    ["X-Amz-Algorithm", ALGORITHM],
    ["X-Amz-Credential", `${creds.accessKeyId}/${credentialScope(scope)}`],
    ["X-Amz-Date", amzDate(scope.date)],
    ["X-Amz-Expires", String(expiresSeconds)],
    ["X-Amz-SignedHeaders", signed],
  ];
  if (creds.sessionToken) query.push(["X-Amz-Security-Token", creds.sessionToken]);
  const parts = await signatureParts(
    { ...req, query },
    await payloadHashOf(req.body),
    creds,
    scope,
  );
  query.push(["X-Amz-Signature", parts.signature]);
  return { query, parts };
}

/** `a=b&c=d` with RFC 3986 encoding, in the given order. */
export function encodeQuery(query: readonly (readonly [string, string])[]): string {
  return query.map(([k, v]) => `${uriEncode(k)}=${uriEncode(v)}`).join("&");
}

/** The canonical request, string to sign and signature of a request whose headers are final. */
export async function signatureParts(
  req: SignableRequest,
  payloadHash: string,
  creds: AwsCredentials,
  scope: SigningScope,
): Promise<SignatureParts> {
  const signedHeaders = signedHeaderNames(req.headers);
  const canonicalRequest = [
    req.method.toUpperCase(),
    canonicalPath(req.path),
    canonicalQuery(req.query),
    canonicalHeaders(req.headers),
    signedHeaders,
    payloadHash,
  ].join("\n");
  const scopeText = credentialScope(scope);
  const stringToSign = [
    ALGORITHM,
    amzDate(scope.date),
    scopeText,
    await sha256Hex(canonicalRequest),
  ]
    .join("\n");
  const key = await signingKey(creds.secretAccessKey, scope);
  const signature = hex(await hmac(key, stringToSign));
  return { canonicalRequest, stringToSign, signature, signedHeaders, credentialScope: scopeText };
}

/** `<yyyymmdd>/<region>/<service>/aws4_request`. */
export function credentialScope(scope: SigningScope): string {
  return `${amzDate(scope.date).slice(0, 8)}/${scope.region}/${scope.service}/aws4_request`;
}

/** The derived signing key: HMAC chain over date, region, service and `aws4_request`. */
export async function signingKey(secret: string, scope: SigningScope): Promise<Uint8Array> {
  let key = await hmac(enc.encode(`AWS4${secret}`), amzDate(scope.date).slice(0, 8));
  for (const part of [scope.region, scope.service, "aws4_request"]) key = await hmac(key, part);
  return key;
}

/**
 * Hex SHA-256 of a body, or the given hash when `body` already is one (or one of the literal
 * payload hashes: `UNSIGNED-PAYLOAD`, `STREAMING-...` of a body signed message by message).
 */
function payloadHashOf(body: Uint8Array | string | undefined): Promise<string> {
  if (
    typeof body === "string" &&
    (/^[0-9a-f]{64}$/.test(body) || body === "UNSIGNED-PAYLOAD" || body.startsWith("STREAMING-"))
  ) {
    return Promise.resolve(body);
  }
  return sha256Hex(body ?? "");
}

/** Remove `.` and `..` segments and repeated slashes, then encode each segment. */
function canonicalPath(path: string): string {
  const out: string[] = [];
  const segments = path.split("/");
  for (const s of segments) {
    if (s === "" || s === ".") continue;
    if (s === "..") out.pop();
    else out.push(s);
  }
  const trailing = path.length > 1 && path.endsWith("/") && out.length > 0;
  return `/${out.map(uriEncode).join("/")}${trailing ? "/" : ""}`;
}

function canonicalQuery(query: readonly (readonly [string, string])[]): string {
  const pairs = query.map(([k, v]) => [uriEncode(k), uriEncode(v)] as const);
  pairs.sort((a, b) => compare(a[0], b[0]) || compare(a[1], b[1]));
  return pairs.map(([k, v]) => `${k}=${v}`).join("&");
}

/** Header values of one name joined by commas in order; whitespace trimmed and collapsed. */
function headerMap(headers: readonly (readonly [string, string])[]): Map<string, string> {
  const map = new Map<string, string>();
  for (const [name, value] of headers) {
    const n = name.toLowerCase().trim();
    const v = value.trim().replace(/\s+/g, " ");
    map.set(n, map.has(n) ? `${map.get(n)},${v}` : v);
  }
  return map;
}

function canonicalHeaders(headers: readonly (readonly [string, string])[]): string {
  const map = headerMap(headers);
  return [...map.keys()].sort(compare).map((n) => `${n}:${map.get(n)}\n`).join("");
}

function signedHeaderNames(headers: readonly (readonly [string, string])[]): string {
  return [...headerMap(headers).keys()].sort(compare).join(";");
}

function compare(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}

async function hmac(key: Uint8Array, data: string): Promise<Uint8Array> {
  const k = await crypto.subtle.importKey(
    "raw",
    key as BufferSource,
    { name: "HMAC", hash: "SHA-256" },
    false,
    ["sign"],
  );
  return new Uint8Array(await crypto.subtle.sign("HMAC", k, enc.encode(data)));
}

function hex(bytes: Uint8Array): string {
  let s = "";
  for (const b of bytes) s += b.toString(16).padStart(2, "0");
  return s;
}
