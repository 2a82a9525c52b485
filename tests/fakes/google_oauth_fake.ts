/**
 * A local Google OAuth 2.0 token endpoint for tests (developers.google.com/identity/protocols/
 * oauth2/service-account, "Making the access token request"): `POST /token` with a form body
 * `grant_type=urn:ietf:params:oauth:grant-type:jwt-bearer&assertion=<JWT>`. The fake checks
 * what Google checks: the grant type, an RS256 JWT whose signature verifies with the public half
 * of the test key, `iss` the key's client_email, `aud` this endpoint, a scope, and `iat`/`exp`
 * within an hour around now. A bad one is answered 400 `{"error":"invalid_grant"}` as Google
 * does; a good one `{access_token, expires_in, token_type: "Bearer"}`.
 *
 * {@link makeServiceAccountKey} makes the key pair and the service-account JSON a client reads.
 * @module
 */

/** A service-account key made for a test, and the public key that checks its signatures. */
export interface TestServiceAccount {
  /** The key file's JSON text, as Google hands it out. */
  json: string;
  /** `client_email` in it. */
  clientEmail: string;
  /** The RSA public key. */
  publicKey: CryptoKey;
}

function pem(der: ArrayBuffer): string {
  const b64 = btoa(String.fromCharCode(...new Uint8Array(der)));
  return `-----BEGIN PRIVATE KEY-----\n${
    b64.match(/.{1,64}/g)!.join("\n")
  }\n-----END PRIVATE KEY-----\n`;
}

/** A fresh 2048-bit RSA service-account key whose `token_uri` is `tokenUri`. */
export async function makeServiceAccountKey(
  tokenUri: string,
  projectId = "flowcat-test",
): Promise<TestServiceAccount> {
  const pair = await crypto.subtle.generateKey(
    {
      name: "RSASSA-PKCS1-v1_5",
      modulusLength: 2048,
      publicExponent: new Uint8Array([1, 0, 1]),
      hash: "SHA-256",
    },
    true,
    ["sign", "verify"],
  );
  const clientEmail = `flowcat@${projectId}.iam.gserviceaccount.com`;
  const json = JSON.stringify({
    type: "service_account",
    project_id: projectId,
    private_key_id: "0123456789abcdef",
    private_key: pem(await crypto.subtle.exportKey("pkcs8", pair.privateKey)),
    client_email: clientEmail,
    client_id: "1234567890",
    token_uri: tokenUri,
  });
  return { json, clientEmail, publicKey: pair.publicKey };
}

const fromB64url = (s: string): Uint8Array<ArrayBuffer> =>
  Uint8Array.from(atob(s.replace(/-/g, "+").replace(/_/g, "/")), (c) => c.charCodeAt(0));

/** The fake token endpoint. */
export class GoogleOAuthFake {
  /** Every verified assertion's claims, in order. */
  readonly grants: Record<string, unknown>[] = [];
  /** Requests refused, with Google's error code. */
  readonly refusals: string[] = [];
  /** `expires_in` of the tokens issued (seconds). */
  expiresIn = 3599;
  /** Answer the next requests with this HTTP status instead (e.g. 503), then recover. */
  failNext: number[] = [];
  /** The fake's clock, ms since the epoch (a test moving the client's clock moves this too). */
  clock: () => number = Date.now;
  /** The account whose signatures verify; set by {@link GoogleOAuthFake.account}. */
  #account: TestServiceAccount | undefined;
  readonly #issued = new Set<string>();
  readonly #abort = new AbortController();
  #server: Deno.HttpServer<Deno.NetAddr> | undefined;
  #seq = 0;

  /** Listen on an ephemeral 127.0.0.1 port. */
  start(): Promise<this> {
    this.#server = Deno.serve(
      { hostname: "127.0.0.1", port: 0, signal: this.#abort.signal, onListen() {} },
      (req) => this.#handle(req),
    );
    return Promise.resolve(this);
  }

  /** The token endpoint URL (a key's `token_uri`). */
  get tokenUri(): string {
    return `http://127.0.0.1:${this.#server!.addr.port}/token`;
  }

  /** Make the service account this endpoint trusts (a fresh key each time). */
  async account(): Promise<TestServiceAccount> {
    this.#account = await makeServiceAccountKey(this.tokenUri);
    return this.#account;
  }

  /** True for a token this endpoint issued. */
  accepts(token: string): boolean {
    return this.#issued.has(token);
  }

  /** Revoke every issued token (the API then answers UNAUTHENTICATED). */
  revokeAll(): void {
    this.#issued.clear();
  }

  /** Stop the server. */
  async close(): Promise<void> {
    this.#abort.abort();
    await this.#server?.finished;
  }

  async #handle(req: Request): Promise<Response> {
    const form = new URLSearchParams(await req.text());
    const fail = this.failNext.shift();
    if (fail !== undefined) return json(fail, { error: "backend_error" });
    if (req.method !== "POST" || new URL(req.url).pathname !== "/token") {
      return json(404, { error: "not_found" });
    }
    if (form.get("grant_type") !== "urn:ietf:params:oauth:grant-type:jwt-bearer") {
      return this.#refuse("unsupported_grant_type");
    }
    const claims = await this.#verify(form.get("assertion") ?? "");
    if (typeof claims === "string") return this.#refuse("invalid_grant", claims);
    this.grants.push(claims);
    const token = `ya29.fake-${++this.#seq}`;
    this.#issued.add(token);
    return json(200, { access_token: token, expires_in: this.expiresIn, token_type: "Bearer" });
  }

  #refuse(error: string, description = ""): Response {
    this.refusals.push(error);
    return json(400, { error, error_description: description });
  }

  /** The JWT's claims, or why it is refused. */
  async #verify(jwt: string): Promise<Record<string, unknown> | string> {
    const parts = jwt.split(".");
    if (parts.length !== 3 || !this.#account) return "malformed JWT";
    const header = JSON.parse(new TextDecoder().decode(fromB64url(parts[0])));
    if (header.alg !== "RS256") return "alg must be RS256";
    const ok = await crypto.subtle.verify(
      "RSASSA-PKCS1-v1_5",
      this.#account.publicKey,
      fromB64url(parts[2]),
      new TextEncoder().encode(`${parts[0]}.${parts[1]}`),
    );
    if (!ok) return "Invalid JWT Signature.";
    const c = JSON.parse(new TextDecoder().decode(fromB64url(parts[1])));
    const now = this.clock() / 1000;
    if (c.iss !== this.#account.clientEmail) return "bad iss";
    if (c.aud !== this.tokenUri) return "bad aud";
    if (typeof c.scope !== "string" || c.scope === "") return "no scope";
    if (!(c.iat <= now + 60 && c.exp > now && c.exp - c.iat <= 3600)) return "bad iat/exp";
    return c;
  }
}

function json(status: number, body: unknown): Response {
  return new Response(JSON.stringify(body), {
    status,
    headers: { "content-type": "application/json; charset=utf-8" },
  });
}
