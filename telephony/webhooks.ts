/**
 * Carrier webhook verification for the agent server's answer and status routes (and, for Exotel
 * and Genesys, the media WebSocket upgrade, since those carriers send no answer webhook): one
 * entry point, {@link verifyCarrierWebhook}, that picks the carrier's scheme, checks it in constant
 * time, applies the freshness window where the carrier signs a time, and refuses replays through
 * a shared {@link ReplayGuard}. Reasons never contain a secret.
 *
 * - twilio: `X-Twilio-Signature`, HMAC-SHA1(auth token, URL + sorted form params).
 * - signalwire: `X-SignalWire-Signature`, Twilio's scheme, or hex HMAC-SHA1(key, URL + body).
 * - telnyx: `telnyx-signature-ed25519` + `telnyx-timestamp`, Ed25519, 300 s window.
 * - plivo: `X-Plivo-Signature-V3` + nonce header, HMAC-SHA256(auth token, URL + params + nonce).
 * - vonage: `Authorization: Bearer <JWT>`, HS256 with the signature secret, `payload_hash`.
 * - sinch: `Authorization: Application <key>:<sig>` + `x-timestamp`, HMAC-SHA256.
 * - bandwidth, exotel: `Authorization: Basic` with the configured pair.
 * - genesys: `X-API-KEY` (AudioHook API key).
 *
 * @example
 * ```ts
 * import { ReplayGuard } from "@flowcat/flowcat/telephony/security";
 * import { verifyCarrierWebhook } from "@flowcat/flowcat/telephony/webhooks";
 * declare const req: Request;
 * declare const publicRequestUrl: string;
 * async function handle(): Promise<Response | undefined> {
 *   const replay = new ReplayGuard();
 *   const verdict = await verifyCarrierWebhook("twilio", {
 *     url: publicRequestUrl, headers: req.headers, body: new Uint8Array(await req.arrayBuffer()),
 *   }, { twilio: Deno.env.get("TWILIO_AUTH_TOKEN") }, { replay });
 *   if (!verdict.ok) return new Response("forbidden", { status: 403 });
 * }
 * ```
 *
 * Permissions: none (pure; the secrets are passed in).
 * @module
 */

import {
  DEFAULT_TOLERANCE_SECONDS,
  hmac,
  type ReplayGuard,
  timingSafeEqual,
  type Verdict,
  verifyTelnyxSignature,
  verifyTwilioSignature,
} from "./security.ts";
import { type CarrierName, isCarrierName } from "./serializers/mod.ts";
import {
  type BasicCredentials,
  checkApiKey,
  checkBasic,
  type Checked,
  checkPlivo,
  checkSinch,
  checkVonage,
  formParams,
  sha256Hex,
  type WebhookRequest,
} from "./webhook_schemes.ts";

export { plivoSignedBase } from "./webhook_schemes.ts";
export type { BasicCredentials, WebhookRequest };

/** Per-carrier webhook secrets; see {@link WEBHOOK_SECRET_ENV} for the variables they come from. */
export interface CarrierWebhookSecrets {
  /** Twilio account auth token. */
  twilio?: string;
  /** SignalWire project Signing Key (API Credentials page; not the API token). */
  signalwire?: string;
  /** Telnyx account public key, base64 of the 32 raw Ed25519 bytes (Mission Control Portal). */
  telnyx?: string;
  /** Plivo (sub)account auth token. */
  plivo?: string;
  /** Vonage account signature secret (signs the webhook JWT with HS256). */
  vonage?: string;
  /** Sinch application key and secret (the secret as the dashboard shows it, base64). */
  sinch?: { applicationKey: string; applicationSecret: string };
  /** Bandwidth callback credentials set on the Voice application. */
  bandwidth?: BasicCredentials;
  /** Exotel: the Basic-auth pair put in the Voicebot applet URL. */
  exotel?: BasicCredentials;
  /** Genesys AudioHook integration API key (`X-API-KEY`). */
  genesys?: string;
}

/** Options of {@link verifyCarrierWebhook}. */
export interface WebhookVerifyOptions {
  /** Clock, epoch milliseconds (tests). */
  now?: number;
  /** Refuses a signature, nonce or token id seen before inside the window; share one per server. */
  replay?: ReplayGuard;
  /** Accept requests from a carrier with no secret configured (local development only). */
  allowUnsigned?: boolean;
  /** Freshness window for signed times, seconds either side of now (default 300). */
  toleranceSeconds?: number;
}

/** Environment variables the server reads each carrier's webhook secret from. */
export const WEBHOOK_SECRET_ENV: Readonly<Record<CarrierName, readonly string[]>> = Object.freeze({
  twilio: ["TWILIO_AUTH_TOKEN"],
  signalwire: ["SIGNALWIRE_SIGNING_KEY"],
  telnyx: ["TELNYX_PUBLIC_KEY"],
  plivo: ["PLIVO_AUTH_TOKEN"],
  vonage: ["VONAGE_SIGNATURE_SECRET"],
  sinch: ["SINCH_APPLICATION_KEY", "SINCH_APPLICATION_SECRET"],
  bandwidth: ["BANDWIDTH_CALLBACK_USERNAME", "BANDWIDTH_CALLBACK_PASSWORD"],
  exotel: ["EXOTEL_STREAM_USERNAME", "EXOTEL_STREAM_PASSWORD"],
  genesys: ["GENESYS_AUDIOHOOK_API_KEY"],
});

/**
 * Webhook secrets read through `get` (e.g. `(n) => Deno.env.get(n)`) from
 * {@link WEBHOOK_SECRET_ENV}; a carrier is left out unless all its variables are set and non-empty.
 */
export function webhookSecretsFromEnv(
  get: (name: string) => string | undefined,
): CarrierWebhookSecrets {
  const v = (name: string) => {
    const value = get(name)?.trim();
    return value ? value : undefined;
  };
  const pair = (a: string, b: string) => {
    const x = v(a), y = v(b);
    return x !== undefined && y !== undefined ? [x, y] as const : undefined;
  };
  const sinch = pair("SINCH_APPLICATION_KEY", "SINCH_APPLICATION_SECRET");
  const bandwidth = pair("BANDWIDTH_CALLBACK_USERNAME", "BANDWIDTH_CALLBACK_PASSWORD");
  const exotel = pair("EXOTEL_STREAM_USERNAME", "EXOTEL_STREAM_PASSWORD");
  return {
    twilio: v("TWILIO_AUTH_TOKEN"),
    signalwire: v("SIGNALWIRE_SIGNING_KEY"),
    telnyx: v("TELNYX_PUBLIC_KEY"),
    plivo: v("PLIVO_AUTH_TOKEN"),
    vonage: v("VONAGE_SIGNATURE_SECRET"),
    sinch: sinch && { applicationKey: sinch[0], applicationSecret: sinch[1] },
    bandwidth: bandwidth && { username: bandwidth[0], password: bandwidth[1] },
    exotel: exotel && { username: exotel[0], password: exotel[1] },
    genesys: v("GENESYS_AUDIOHOOK_API_KEY"),
  };
}

const OK: Verdict = Object.freeze({ ok: true });
const fail = (reason: string): Verdict => ({ ok: false, reason });

/**
 * Verify a carrier webhook (see the module doc for each scheme). Returns `{ ok: true }` or
 * `{ ok: false, reason }`; answer 403 on a failure and log the reason, which names no secret.
 * A carrier with no secret configured is refused unless `opts.allowUnsigned`. With `opts.replay`,
 * a valid request whose signature (Twilio, SignalWire, Telnyx, Sinch), nonce (Plivo) or token id
 * (Vonage) was already seen inside the window is refused as a replay. Basic-auth and API-key
 * carriers (Bandwidth, Exotel, Genesys) sign nothing per request, so they get no replay check.
 */
export async function verifyCarrierWebhook(
  carrier: CarrierName | string,
  req: WebhookRequest,
  secrets: CarrierWebhookSecrets,
  opts: WebhookVerifyOptions = {},
): Promise<Verdict> {
  if (!isCarrierName(carrier)) return fail("unknown carrier");
  const secret = secrets[carrier];
  if (secret === undefined || secret === "") {
    return opts.allowUnsigned ? OK : fail(`no webhook secret configured for ${carrier}`);
  }
  const now = opts.now ?? Date.now();
  const tolerance = opts.toleranceSeconds ?? DEFAULT_TOLERANCE_SECONDS;
  let checked: Checked;
  try {
    checked = await CHECKS[carrier](secret as never, req, now, tolerance);
  } catch {
    // Malformed keys or input must not turn into a 500 with a stack trace; the reason stays vague
    // on purpose so nothing about the secret leaks.
    return fail(`${carrier} webhook could not be verified (malformed secret or request)`);
  }
  if (!checked.verdict.ok) return checked.verdict;
  if (opts.replay && checked.replayKey !== undefined) {
    if (!opts.replay.firstSeen(`${carrier}:${checked.replayKey}`, now)) {
      return fail(`${carrier} webhook replayed`);
    }
  }
  return OK;
}

type Check<S> = (
  secret: S,
  req: WebhookRequest,
  now: number,
  tolerance: number,
) => Promise<Checked>;

const CHECKS: { [C in CarrierName]: Check<NonNullable<CarrierWebhookSecrets[C]>> } = {
  twilio: (authToken, req) => checkTwilio(authToken, req),
  signalwire: checkSignalWire,
  telnyx: checkTelnyx,
  plivo: checkPlivo,
  vonage: checkVonage,
  sinch: checkSinch,
  bandwidth: (creds, req) => Promise.resolve(checkBasic("bandwidth", creds, req)),
  exotel: (creds, req) => Promise.resolve(checkBasic("exotel", creds, req)),
  genesys: (apiKey, req) => Promise.resolve(checkApiKey(apiKey, req)),
};

/**
 * Twilio: form POSTs are signed over URL + sorted params; JSON bodies are signed over the URL
 * alone, which then carries `bodySHA256` (hex SHA-256 of the body) that must match.
 */
async function checkTwilio(
  authToken: string,
  req: WebhookRequest,
  header = "x-twilio-signature",
): Promise<Checked> {
  const signature = req.headers.get(header) ?? req.headers.get("x-twilio-signature");
  if (!signature) return { verdict: fail(`missing ${header}`) };
  const bodyHash = new URL(req.url).searchParams.get("bodySHA256");
  let params: [string, string][] = [];
  if (bodyHash !== null) {
    if (!timingSafeEqual(await sha256Hex(req.body), bodyHash.toLowerCase())) {
      return { verdict: fail("bodySHA256 does not match the body") };
    }
  } else {
    // Without bodySHA256 only form parameters are covered, so the body is read as a form; any
    // other body changes the parameters and fails the signature.
    params = formParams(req.body);
  }
  const verdict = await verifyTwilioSignature({ authToken, url: req.url, params, signature });
  return { verdict, replayKey: signature };
}

/**
 * SignalWire: Compatibility (cXML) webhooks use Twilio's scheme under `X-SignalWire-Signature`
 * (or `X-Twilio-Signature`); JSON webhooks are signed as hex HMAC-SHA1 over URL + raw body.
 */
async function checkSignalWire(signingKey: string, req: WebhookRequest): Promise<Checked> {
  const signature = req.headers.get("x-signalwire-signature") ??
    req.headers.get("x-twilio-signature");
  if (!signature) return { verdict: fail("missing X-SignalWire-Signature") };
  if (/^[0-9a-f]{40}$/i.test(signature)) {
    const url = new TextEncoder().encode(req.url);
    const signed = new Uint8Array(url.length + req.body.length);
    signed.set(url);
    signed.set(req.body, url.length);
    const expected = (await hmac(signingKey, signed, "SHA-1")).toHex();
    const ok = timingSafeEqual(expected, signature.toLowerCase());
    return { verdict: ok ? OK : fail("X-SignalWire-Signature mismatch"), replayKey: signature };
  }
  const checked = await checkTwilio(signingKey, req, "x-signalwire-signature");
  return checked.verdict.ok ? checked : { verdict: fail("X-SignalWire-Signature mismatch") };
}

async function checkTelnyx(
  publicKey: string,
  req: WebhookRequest,
  now: number,
  tolerance: number,
): Promise<Checked> {
  const signature = req.headers.get("telnyx-signature-ed25519");
  const verdict = await verifyTelnyxSignature({
    publicKey,
    body: req.body,
    signature,
    timestamp: req.headers.get("telnyx-timestamp"),
    now,
    toleranceSeconds: tolerance,
  });
  return { verdict, replayKey: signature ?? undefined };
}
