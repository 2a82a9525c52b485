/**
 * Outbound calls through a carrier's REST API. The carrier dials `to` from `from`; when the callee
 * answers it fetches `answerUrl` (the agent server's answer route), whose answer document
 * (`telephony/answer.ts`) opens the media stream. Supported: Twilio, SignalWire (same API shape),
 * Telnyx (TeXML calls API) and Plivo. Numbers are checked as E.164 before anything is sent.
 *
 * @example
 * ```ts
 * import { originateCall } from "@flowcat/flowcat/telephony/originate";
 * const { callId } = await originateCall("twilio", {
 *   to: "+15550002222",
 *   from: "+15550001111",
 *   answerUrl: "https://agent.example.com/telephony/answer/twilio/42",
 * }, { accountSid: "AC...", authToken: "..." });
 * ```
 *
 * Permissions: `--allow-net=<carrier API host>:443` (`api.twilio.com`, `api.telnyx.com`,
 * `api.plivo.com`).
 * @module
 */

import { FlowcatError } from "../core/errors.ts";
import { assertE164 } from "./security.ts";
import { apiOrigin, basicAuth, carrierError, jsonObject, scrub } from "./_carrier_http.ts";
import type { CarrierName } from "./serializers/mod.ts";

/** The call to place. */
export interface OriginateRequest {
  /** Callee, E.164. */
  to: string;
  /** Caller id (a number you own at the carrier), E.164. */
  from: string;
  /** The URL the carrier fetches the answer document from when the call is answered. */
  answerUrl: string;
  /** Where the carrier posts call status events (optional). */
  statusCallbackUrl?: string;
}

/** Twilio REST credentials. */
export interface TwilioCredentials {
  /** Account SID (`AC...`); the Basic auth user and part of the API path. */
  accountSid: string;
  /** Auth token; the Basic auth password. */
  authToken: string;
}

/** SignalWire Compatibility API credentials. */
export interface SignalWireCredentials {
  /** Project id; the Basic auth user and part of the API path. */
  projectId: string;
  /** API token; the Basic auth password. */
  apiToken: string;
  /** The Space host, e.g. `example.signalwire.com` (or its https URL). */
  spaceUrl: string;
}

/** Telnyx credentials: API key and the TeXML application's connection id. */
export interface TelnyxCredentials {
  /** API key, sent as a Bearer token. */
  apiKey: string;
  /** TeXML application (connection) id the call is placed through. */
  connectionId: string;
}

/** Plivo REST credentials. */
export interface PlivoCredentials {
  /** Auth ID; the Basic auth user and part of the API path. */
  authId: string;
  /** Auth token; the Basic auth password. */
  authToken: string;
}

/** Credentials of any supported carrier. */
export type OriginateCredentials =
  | TwilioCredentials
  | SignalWireCredentials
  | TelnyxCredentials
  | PlivoCredentials;

/** Options of {@link originateCall}. */
export interface OriginateOptions {
  /** HTTP client (tests inject one); default the global `fetch`. */
  fetch?: typeof fetch;
  /** Replaces the carrier's API origin, e.g. `http://127.0.0.1:8123` for a fake server. */
  baseUrl?: string;
  /** Give up after this many milliseconds (default 15000). */
  timeoutMs?: number;
}

/** Carriers {@link originateCall} can place calls through. */
export const ORIGINATE_CARRIERS: readonly CarrierName[] = [
  "twilio",
  "signalwire",
  "telnyx",
  "plivo",
];

/** Environment variables the server reads each originating carrier's REST credentials from. */
export const ORIGINATE_ENV: Readonly<Partial<Record<CarrierName, Record<string, string>>>> = Object
  .freeze({
    twilio: { accountSid: "TWILIO_ACCOUNT_SID", authToken: "TWILIO_AUTH_TOKEN" },
    signalwire: {
      projectId: "SIGNALWIRE_PROJECT_ID",
      apiToken: "SIGNALWIRE_API_TOKEN",
      spaceUrl: "SIGNALWIRE_SPACE_URL",
    },
    telnyx: { apiKey: "TELNYX_API_KEY", connectionId: "TELNYX_CONNECTION_ID" },
    plivo: { authId: "PLIVO_AUTH_ID", authToken: "PLIVO_AUTH_TOKEN" },
  });

/**
 * Credentials for `carrier` read through `get` (e.g. `(n) => Deno.env.get(n)`); throws a `config`
 * {@link FlowcatError} naming every missing variable (never a value).
 */
export function originateCredentialsFromEnv(
  carrier: CarrierName,
  get: (name: string) => string | undefined,
): OriginateCredentials {
  const names = ORIGINATE_ENV[carrier];
  if (!names) throw unsupported(carrier);
  const out: Record<string, string> = {};
  const missing: string[] = [];
  for (const [field, env] of Object.entries(names)) {
    const value = get(env)?.trim();
    if (value) out[field] = value;
    else missing.push(env);
  }
  if (missing.length > 0) {
    throw new FlowcatError(
      "config",
      `outbound calls through ${carrier} need ${missing.join(", ")} in the environment`,
    );
  }
  return out as unknown as OriginateCredentials;
}

function unsupported(carrier: string): FlowcatError {
  return new FlowcatError(
    "config",
    `outbound calls through "${carrier.slice(0, 40)}" are not supported; use one of: ${
      ORIGINATE_CARRIERS.join(", ")
    } (or a SIP trunk)`,
  );
}

/** A prepared HTTP request to the carrier plus how to read its answer. */
interface CarrierCall {
  url: string;
  init: RequestInit;
  callIdOf: (json: Record<string, unknown>) => unknown;
  secrets: string[];
}

function field(creds: OriginateCredentials, name: string, carrier: string): string {
  const value = (creds as unknown as Record<string, unknown>)[name];
  if (typeof value !== "string" || value.trim() === "") {
    throw new FlowcatError("config", `${carrier} credentials lack ${name}`);
  }
  return value.trim();
}

function twilioLike(
  base: string,
  user: string,
  pass: string,
  call: OriginateRequest,
  pathPrefix: string,
): CarrierCall {
  const form = new URLSearchParams({ To: call.to, From: call.from, Url: call.answerUrl });
  form.set("Method", "POST");
  if (call.statusCallbackUrl) form.set("StatusCallback", call.statusCallbackUrl);
  return {
    url: `${base}${pathPrefix}/2010-04-01/Accounts/${encodeURIComponent(user)}/Calls.json`,
    init: {
      method: "POST",
      headers: {
        authorization: basicAuth(user, pass),
        "content-type": "application/x-www-form-urlencoded",
        accept: "application/json",
      },
      body: form.toString(),
    },
    callIdOf: (j) => j.sid,
    secrets: [pass],
  };
}

function prepare(
  carrier: CarrierName,
  call: OriginateRequest,
  creds: OriginateCredentials,
  baseUrl: string | undefined,
): CarrierCall {
  const f = (name: string) => field(creds, name, carrier);
  switch (carrier) {
    case "twilio":
      return twilioLike(
        apiOrigin(baseUrl, "https://api.twilio.com"),
        f("accountSid"),
        f("authToken"),
        call,
        "",
      );
    case "signalwire": {
      const space = f("spaceUrl").replace(/^https?:\/\//, "").replace(/\/.*$/, "");
      return twilioLike(
        apiOrigin(baseUrl, `https://${space}`),
        f("projectId"),
        f("apiToken"),
        call,
        "/api/laml",
      );
    }
    case "telnyx": {
      // TeXML calls API: Telnyx fetches the TeXML answer document from Url, like Twilio does.
      const body: Record<string, string> = {
        To: call.to,
        From: call.from,
        Url: call.answerUrl,
        Method: "POST",
      };
      if (call.statusCallbackUrl) body.StatusCallback = call.statusCallbackUrl;
      const apiKey = f("apiKey");
      return {
        url: `${apiOrigin(baseUrl, "https://api.telnyx.com")}/v2/texml/calls/${
          encodeURIComponent(f("connectionId"))
        }`,
        init: {
          method: "POST",
          headers: {
            authorization: `Bearer ${apiKey}`,
            "content-type": "application/json",
            accept: "application/json",
          },
          body: JSON.stringify(body),
        },
        callIdOf: (j) => j.call_sid ?? (j.data as Record<string, unknown> | undefined)?.call_sid,
        secrets: [apiKey],
      };
    }
    case "plivo": {
      const authId = f("authId");
      const authToken = f("authToken");
      // Plivo takes numbers with the country code but without the leading "+".
      const body: Record<string, string> = {
        from: call.from.slice(1),
        to: call.to.slice(1),
        answer_url: call.answerUrl,
        answer_method: "POST",
      };
      if (call.statusCallbackUrl) {
        body.hangup_url = call.statusCallbackUrl;
        body.hangup_method = "POST";
      }
      return {
        url: `${apiOrigin(baseUrl, "https://api.plivo.com")}/v1/Account/${
          encodeURIComponent(authId)
        }/Call/`,
        init: {
          method: "POST",
          headers: {
            authorization: basicAuth(authId, authToken),
            "content-type": "application/json",
            accept: "application/json",
          },
          body: JSON.stringify(body),
        },
        callIdOf: (j) => Array.isArray(j.request_uuid) ? j.request_uuid[0] : j.request_uuid,
        secrets: [authToken],
      };
    }
    default:
      throw unsupported(carrier);
  }
}

/**
 * Place an outbound call through `carrier`'s REST API and return the carrier's call id (Twilio
 * `sid`, Telnyx `call_sid`, Plivo `request_uuid`). `to` and `from` must be E.164 (checked first,
 * `protocol` error). A carrier error becomes a `protocol` {@link FlowcatError} with the HTTP status
 * and the carrier's own message (401/403 give `auth`); a timeout gives `timeout`. No message ever
 * contains a credential.
 */
export async function originateCall(
  carrier: CarrierName,
  call: OriginateRequest,
  creds: OriginateCredentials,
  opts: OriginateOptions = {},
): Promise<{ callId: string }> {
  assertE164(call.to, "to");
  assertE164(call.from, "from");
  if (!/^https?:\/\/\S+$/.test(call.answerUrl)) {
    throw new FlowcatError("config", "answerUrl must be an http(s) URL");
  }
  const req = prepare(carrier, call, creds, opts.baseUrl);
  const doFetch = opts.fetch ?? fetch;
  const controller = new AbortController();
  const timer = setTimeout(() => controller.abort(), opts.timeoutMs ?? 15_000);
  let res: Response;
  let text: string;
  try {
    res = await doFetch(req.url, { ...req.init, signal: controller.signal });
    text = await res.text();
  } catch (err) {
    if (controller.signal.aborted) {
      throw new FlowcatError("timeout", `${carrier}: originate request timed out`);
    }
    const why = scrub(err instanceof Error ? err.message : String(err), req.secrets);
    throw new FlowcatError("protocol", `${carrier}: originate request failed: ${why}`);
  } finally {
    clearTimeout(timer);
  }
  const json = jsonObject(text);
  if (!res.ok) {
    const kind = res.status === 401 || res.status === 403 ? "auth" : "protocol";
    throw new FlowcatError(
      kind,
      `${carrier}: originate refused (HTTP ${res.status}): ${
        scrub(carrierError(json, text), req.secrets)
      }`,
    );
  }
  const callId = json ? req.callIdOf(json) : undefined;
  if (typeof callId !== "string" || callId === "") {
    throw new FlowcatError("protocol", `${carrier}: originate answer has no call id`);
  }
  return { callId };
}
