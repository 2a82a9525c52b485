/**
 * Answer documents: what the agent server returns when a carrier fetches the answer URL of a call,
 * so that the carrier opens a bidirectional media stream to Flowcat's media route
 * `wss://<public host>/telephony/ws/<carrier>/<run>?token=<call token>`. Pure functions: no I/O.
 *
 * Carriers whose answer URL returns instructions: Twilio (TwiML), SignalWire (cXML), Telnyx
 * (TeXML), Plivo (Plivo XML), Vonage (NCCO JSON), Bandwidth (BXML), Sinch (SVAML JSON). Exotel
 * and Genesys have no answer document (see {@link answerDocument}).
 *
 * @example
 * ```ts
 * import { answerDocument, streamUrl } from "@flowcat/flowcat/telephony/answer";
 * declare const token: string; // from signCallToken
 * const url = streamUrl("https://agent.example.com", "twilio", 42, token);
 * const doc = answerDocument("twilio", { streamUrl: url, token, runId: 42 });
 * // doc.contentType "application/xml", doc.body "<?xml ...><Response><Connect><Stream url=...
 * ```
 *
 * Permissions: none (pure).
 * @module
 */

import { FlowcatError } from "../core/errors.ts";
import { CARRIER_NAMES, type CarrierName, isCarrierName } from "./serializers/mod.ts";

/** A document to send back to the carrier's answer webhook. */
export interface AnswerDocument {
  /** Value for the HTTP `Content-Type` header. */
  contentType: string;
  /** The document itself. */
  body: string;
}

/** What every answer document needs. */
export interface AnswerOptions {
  /** The media WebSocket URL from {@link streamUrl} (token included in its query). */
  streamUrl: string;
  /** The call token; also passed as a custom stream parameter where the carrier has them. */
  token: string;
  /** The run the call belongs to (`[A-Za-z0-9_-]{1,64}`). */
  runId: number | string;
  /**
   * Audio rate to ask for where the carrier lets the answer choose it (Telnyx, Plivo, Vonage,
   * Sinch); must match the serializer's `sampleRate`. Twilio, SignalWire and Bandwidth are 8 kHz.
   */
  sampleRate?: number;
  /**
   * Vonage only: the call's `uuid` from the answer request. Sent as the `call_uuid` header, which
   * Vonage echoes in `websocket:connected`; without it (or the serializer's `callId` option) the
   * Vonage serializer cannot start the call.
   */
  callId?: string;
}

const RUN_ID = /^[A-Za-z0-9_-]{1,64}$/;
const XML_HEAD = '<?xml version="1.0" encoding="UTF-8"?>\n';
const XML_TYPE = "application/xml; charset=utf-8";
const JSON_TYPE = "application/json; charset=utf-8";

const XML_ESCAPES: Record<string, string> = {
  "&": "&amp;",
  "<": "&lt;",
  ">": "&gt;",
  '"': "&quot;",
  "'": "&apos;",
};

/** `value` safe inside an XML attribute (double or single quoted) or element text. */
export function xmlEscape(value: string): string {
  return value.replace(/[&<>"']/g, (c) => XML_ESCAPES[c]);
}

function runIdOf(runId: number | string): string {
  const id = String(runId);
  if (!RUN_ID.test(id)) {
    throw new FlowcatError("config", "run id must match [A-Za-z0-9_-]{1,64}");
  }
  return id;
}

function carrierOf(carrier: string): CarrierName {
  if (!isCarrierName(carrier)) {
    throw new FlowcatError(
      "config",
      `unknown carrier "${carrier.slice(0, 40)}"; expected one of: ${CARRIER_NAMES.join(", ")}`,
    );
  }
  return carrier;
}

/**
 * The media WebSocket URL for a call: `publicUrl`'s origin with `http` → `ws` and `https` →
 * `wss`, path `/telephony/ws/<carrier>/<runId>` and `?token=<token>` (URL-encoded). `publicUrl`
 * must be a bare origin (`https://agent.example.com`, a trailing `/` is fine): a path, query,
 * fragment or credentials in it is refused with a `config` error, since the carrier would dial
 * the wrong place.
 */
export function streamUrl(
  publicUrl: string,
  carrier: CarrierName,
  runId: number | string,
  token: string,
): string {
  const origin = publicOrigin(publicUrl);
  const scheme = origin.protocol === "https:" || origin.protocol === "wss:" ? "wss:" : "ws:";
  if (token.length === 0) throw new FlowcatError("config", "call token is empty");
  return `${scheme}//${origin.host}/telephony/ws/${carrierOf(carrier)}/${runIdOf(runId)}` +
    `?token=${encodeURIComponent(token)}`;
}

/** The answer webhook URL for a run: `https://<host>/telephony/answer/<carrier>/<runId>`. */
export function answerUrl(publicUrl: string, carrier: CarrierName, runId: number | string): string {
  const origin = publicOrigin(publicUrl);
  const scheme = origin.protocol === "https:" || origin.protocol === "wss:" ? "https:" : "http:";
  return `${scheme}//${origin.host}/telephony/answer/${carrierOf(carrier)}/${runIdOf(runId)}`;
}

/** `publicUrl` parsed, checked to be a bare http(s) or ws(s) origin. */
function publicOrigin(publicUrl: string): URL {
  let u: URL;
  try {
    u = new URL(publicUrl);
  } catch {
    throw new FlowcatError(
      "config",
      `public URL ${
        JSON.stringify(publicUrl.slice(0, 80))
      } is not a URL; expected https://host[:port]`,
    );
  }
  const problem = !["http:", "https:", "ws:", "wss:"].includes(u.protocol)
    ? `scheme ${u.protocol} (use https:// or http://)`
    : u.username || u.password
    ? "credentials"
    : u.pathname !== "/"
    ? `path ${JSON.stringify(u.pathname.slice(0, 60))}`
    : u.search || publicUrl.includes("?")
    ? "a query"
    : u.hash || publicUrl.includes("#")
    ? "a fragment"
    : undefined;
  if (problem !== undefined) {
    throw new FlowcatError(
      "config",
      `public URL must be the server's origin only, like https://agent.example.com; ` +
        `it has ${problem}. Flowcat adds the /telephony/... routes itself`,
    );
  }
  return u;
}

function checkedStreamUrl(url: string): string {
  // Escaping would keep a stray quote harmless, but no URL from streamUrl() contains one, so a
  // value with quotes, brackets or spaces is a wiring mistake worth failing loudly on.
  let valid = /^wss?:\/\/[^/?#]+\/[^\s"'<>]*$/.test(url);
  try {
    new URL(url);
  } catch {
    valid = false;
  }
  if (!valid) {
    throw new FlowcatError("config", "streamUrl must be a ws:// or wss:// URL from streamUrl()");
  }
  return url;
}

function rateOf(carrier: CarrierName, rate: number | undefined, allowed: number[]): number {
  const r = rate ?? allowed[0];
  if (!allowed.includes(r)) {
    throw new FlowcatError(
      "config",
      `${carrier} streams support sample rates ${allowed.join(", ")}; got ${r}`,
    );
  }
  return r;
}

function xml(body: string): AnswerDocument {
  return { contentType: XML_TYPE, body: `${XML_HEAD}<Response>${body}</Response>` };
}

/** `<Parameter name=".." value=".."/>` children carrying the token and run id. */
function parameters(tag: string, token: string, runId: string): string {
  return `<${tag} name="token" value="${xmlEscape(token)}"/>` +
    `<${tag} name="run_id" value="${xmlEscape(runId)}"/>`;
}

/** Twilio TwiML / SignalWire cXML: `<Connect><Stream>` is the bidirectional form. */
function twimlConnectStream(url: string, token: string, runId: string, attrs = ""): string {
  return `<Connect><Stream url="${xmlEscape(url)}"${attrs}>${
    parameters("Parameter", token, runId)
  }</Stream></Connect>`;
}

/**
 * Whether the carrier fetches an answer document at all (Exotel and Genesys do not: their
 * stream URL is configured on the carrier's side).
 *
 * @example
 * ```ts
 * hasAnswerDocument("twilio"); // true
 * hasAnswerDocument("genesys"); // false
 * ```
 */
export function hasAnswerDocument(carrier: CarrierName): boolean {
  const name = carrierOf(carrier);
  return name !== "exotel" && name !== "genesys";
}

/**
 * The carrier's own call id from its answer-webhook request, for a carrier whose answer document
 * must hand it back ({@link AnswerOptions.callId}); `undefined` for the others. Vonage: the
 * `uuid` (query string for GET-style webhooks, JSON body for POST), the only call id its socket
 * carries.
 *
 * @example
 * ```ts
 * import { answerCallId } from "@flowcat/flowcat/telephony/answer";
 * const url = new URL("https://agent.example.com/telephony/answer/vonage?uuid=63f6");
 * answerCallId("vonage", url, new Uint8Array()); // "63f6"
 * ```
 */
export function answerCallId(
  carrier: CarrierName,
  url: URL,
  body: Uint8Array,
): string | undefined {
  if (carrier !== "vonage") return undefined;
  const fromQuery = url.searchParams.get("uuid");
  if (fromQuery) return fromQuery;
  try {
    const o = JSON.parse(new TextDecoder().decode(body));
    return typeof o?.uuid === "string" && o.uuid !== "" ? o.uuid : undefined;
  } catch {
    return undefined;
  }
}

/**
 * The carrier's answer document pointing the call at `opts.streamUrl`, or `undefined` for a
 * carrier that has none:
 * - **exotel**: the Voicebot applet's URL is set in the call flow (App Bazaar), not returned by an
 *   answer webhook; configure the applet with {@link streamUrl}'s URL.
 * - **genesys**: AudioHook is configured as an integration in Genesys Cloud (its URI and API
 *   key); Genesys never fetches an answer document.
 *
 * Every XML attribute and text value is escaped (the token sits in the URL query, so `&` becomes
 * `&amp;`). Throws a `config` {@link FlowcatError} for an unknown carrier, a bad run id or stream
 * URL, or a sample rate the carrier cannot stream.
 */
export function answerDocument(
  carrier: CarrierName,
  opts: AnswerOptions,
): AnswerDocument | undefined {
  if (!hasAnswerDocument(carrier)) return undefined;
  const name = carrierOf(carrier);
  const url = checkedStreamUrl(opts.streamUrl);
  const runId = runIdOf(opts.runId);
  const token = opts.token;
  if (token.length === 0) throw new FlowcatError("config", "call token is empty");
  switch (name) {
    case "twilio":
    case "signalwire":
      rateOf(name, opts.sampleRate, [8000]);
      return xml(twimlConnectStream(url, token, runId));
    case "telnyx": {
      // TeXML <Connect> runs the stream synchronously; rtp mode makes it bidirectional.
      const rate = rateOf(name, opts.sampleRate, [8000, 16000, 24000]);
      const attrs =
        ` bidirectionalMode="rtp" bidirectionalCodec="PCMU" bidirectionalSamplingRate="${rate}"`;
      return xml(twimlConnectStream(url, token, runId, attrs));
    }
    case "plivo": {
      const rate = rateOf(name, opts.sampleRate, [8000, 16000]);
      const type = rate === 8000 ? "audio/x-mulaw;rate=8000" : `audio/x-l16;rate=${rate}`;
      return xml(
        `<Stream bidirectional="true" keepCallAlive="true" contentType="${type}">${
          xmlEscape(url)
        }</Stream>`,
      );
    }
    case "bandwidth": {
      rateOf(name, opts.sampleRate, [8000]);
      // <StartStream> does not block: the waiting <StopStream> keeps the call up until the
      // socket closes, else the call would end right after the stream starts.
      const stream = `flowcat-${runId}`;
      return xml(
        `<StartStream name="${stream}" mode="bidirectional" tracks="inbound" destination="${
          xmlEscape(url)
        }">${parameters("StreamParam", token, runId)}</StartStream>` +
          `<StopStream name="${stream}" wait="true"/>`,
      );
    }
    case "vonage": {
      const rate = rateOf(name, opts.sampleRate, [16000, 8000, 24000]);
      const headers: Record<string, string> = { token, run_id: runId };
      if (opts.callId !== undefined) headers.call_uuid = opts.callId;
      const ncco = [{
        action: "connect",
        endpoint: [{
          type: "websocket",
          uri: url,
          "content-type": `audio/l16;rate=${rate}`,
          headers,
        }],
      }];
      return { contentType: JSON_TYPE, body: JSON.stringify(ncco) };
    }
    case "sinch": {
      const rate = rateOf(name, opts.sampleRate, [16000, 8000, 24000, 44100, 48000, 96000]);
      const svaml = {
        action: {
          name: "connectStream",
          destination: { type: "Websocket", endpoint: url },
          streamingOptions: { version: 1, sampleRate: rate },
          callHeaders: [{ key: "token", value: token }, { key: "run_id", value: runId }],
        },
      };
      return { contentType: JSON_TYPE, body: JSON.stringify(svaml) };
    }
  }
}
