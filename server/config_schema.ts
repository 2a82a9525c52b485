// Over 400 lines: the one zod schema of the config file, in docs/config.md's order.
/**
 * Zod schema of the agent server config file (snake_case, as written by the operator). Fields
 * that need a "did you mean" (provider, pipeline and carrier names) are checked here with custom
 * messages; rules that span fields live in `config_checks.ts`. Reference: docs/config.md.
 * @module
 */

import { z } from "npm:zod@^4.6.7";
import { type ProviderKind, providersOfKind } from "../providers/registry.ts";
import { CARRIER_NAMES } from "../telephony/serializers/mod.ts";
import { isE164 } from "../telephony/security.ts";
import { parseCidr } from "../telephony/sip/source_filter.ts";
import { parseHostPort, parseUri } from "../telephony/sip/uri.ts";
import { VARIABLE_NAME_RE } from "../core/agent/interpolate.ts";
import { DEFAULT_BARGE_IN, DEFAULT_TURN_WINDOWS } from "../core/turn_end.ts";
import { describeType, shown, suggestionHint } from "./config_suggest.ts";
import type { ConfigDocument } from "./config_document.ts";
import { TOOLS_INLINE_SECRET_HINTS, TOOLS_KNOWN_KEYS, toolsSchema } from "./config_tools.ts";

/** Pipeline shapes: one speech-to-speech model, or speech-to-text + language model + speech. */
export const PIPELINE_KINDS = ["s2s", "cascaded"] as const;

/** Pattern of an environment variable name (the `*_env` fields hold names, never values). */
export const ENV_NAME_RE: RegExp = /^[A-Za-z_][A-Za-z0-9_]*$/;

/** Default listening port of the agent server. */
export const DEFAULT_PORT = 6210;
/** Default listening address of the agent server (loopback: nothing outside this machine). */
export const DEFAULT_HOST = "127.0.0.1";
/**
 * Default idle timeout of a server call, seconds: shorter than the pipeline task's own 300 s, as
 * a phone line nobody speaks on for two minutes is almost always one left open.
 */
export const DEFAULT_IDLE_TIMEOUT_SECONDS = 120;

/** A string that must be one of `names` (read when checked, so late registrations count). */
function oneOfNames(what: string, names: () => readonly string[], noneHint?: string) {
  return z.string().superRefine((value, ctx) => {
    const all = names();
    if (all.includes(value)) return;
    const hint = all.length === 0 && noneHint ? noneHint : suggestionHint(value, all);
    ctx.addIssue({ code: "custom", message: `unknown ${what} ${shown(value)} (${hint})` });
  });
}

const envName = z.string().regex(
  ENV_NAME_RE,
  "must be the NAME of an environment variable (letters, digits, _), never the secret itself",
);

/** A URL with one of `schemes` (`http:` ...), shown with an example in the message. */
function urlWith(schemes: readonly string[], example: string) {
  return z.string().superRefine((value, ctx) => {
    let ok = false;
    try {
      ok = schemes.includes(new URL(value).protocol);
    } catch {
      ok = false;
    }
    if (!ok) {
      const list = schemes.map((s) => s.replace(":", "")).join(" or ");
      ctx.addIssue({
        code: "custom",
        message: `${shown(value)} is not a ${list} URL (e.g. ${example})`,
      });
    }
  });
}

const port = z.int().min(1).max(65535);

/** `host`, `host:port`, `[v6]:port`, a CIDR block, or `*` (any host) in an allow list. */
const hostEntry = z.string().superRefine((value, ctx) => {
  if (value === "*" || parseHostPort(value).ok || isCidrBlock(value)) return;
  ctx.addIssue({
    code: "custom",
    message: `${
      shown(value)
    } is not a host, host:port, CIDR block or "*" (e.g. 203.0.113.5, 203.0.113.5:5060 or 203.0.113.0/24)`,
  });
});

/**
 * An IPv4 address or CIDR block `a.b.c.d/n`. IPv4 only: the SIP agent listens on 0.0.0.0, and
 * Deno's --allow-net takes IPv4 blocks but not IPv6 ones.
 */
function isIpv4Block(value: string): boolean {
  return parseCidr(value)?.width === 32;
}

/** A CIDR block in an allow list (`host` and `host:port` entries are checked apart). */
function isCidrBlock(value: string): boolean {
  return value.includes("/") && isIpv4Block(value);
}

/** An IPv4 address or CIDR block: where SIP requests may come from. */
const sourceEntry = z.string().superRefine((value, ctx) => {
  if (isIpv4Block(value)) return;
  ctx.addIssue({
    code: "custom",
    message: `${
      shown(value)
    } is not an IPv4 address or CIDR block (e.g. 203.0.113.5 or 203.0.113.0/24)`,
  });
});

/** One of `values`, with the list in the message. */
function choice<const T extends readonly [string, ...string[]]>(values: T) {
  return z.enum(values, `must be one of: ${values.join(", ")}`);
}

/** A provider of `kind`: its registry name and the settings every provider understands. */
function providerSchema<T extends z.ZodRawShape>(kind: ProviderKind, extra: T) {
  const name = oneOfNames(
    "provider",
    () => Object.keys(providersOfKind(kind)),
    `no ${kind} providers are available yet`,
  );
  return z.strictObject({
    name,
    model: z.string().min(1).optional(),
    url: urlWith(["wss:", "ws:", "https:", "http:"], "wss://proxy.example.com/v1/realtime")
      .optional(),
    options: z.record(z.string(), z.unknown()).prefault({}),
    ...extra,
  });
}

const realtimeSchema = providerSchema("realtime", { voice: z.string().min(1).optional() });
const sttSchema = providerSchema("stt", { language: z.string().min(1).optional() });
const llmSchema = providerSchema("llm", {});
const ttsSchema = providerSchema("tts", { voice: z.string().min(1).optional() });

const providersSchema = z.strictObject({
  realtime: realtimeSchema.optional(),
  stt: sttSchema.optional(),
  llm: llmSchema.optional(),
  tts: ttsSchema.optional(),
});

const remoteSchema = z.strictObject({
  url: urlWith(["http:", "https:"], "http://127.0.0.1:8080"),
  brain_config: z.record(z.string(), z.unknown()).prefault({}),
  timeout_ms: z.int().min(1).max(600_000).default(5000),
  token_env: envName.optional(),
});

const variableName = z.string().regex(VARIABLE_NAME_RE, "must match [A-Za-z_][A-Za-z0-9_]*");

const agentSchema = z.strictObject({
  // A file path or an inline graph spec; resolved and validated by the loader.
  graph: z.unknown().optional(),
  remote: remoteSchema.optional(),
  vars: z.record(variableName, z.json()).prefault({}),
  greeting: z.string().min(1, "must not be empty").optional(),
});

const callerId = z.unknown().superRefine((value, ctx) => {
  if (isE164(value)) return;
  const yamlNumber = typeof value === "number"
    ? `; YAML read it as a number, so quote it: caller_id: "+${value}"`
    : "";
  ctx.addIssue({
    code: "custom",
    message: `must be an E.164 number like "+15551230000" (got ${shown(value)}${yamlNumber})`,
  });
});

const sipServer = z.string().superRefine((value, ctx) => {
  const uri = parseUri(value);
  const transport = uri.ok ? uri.value.params.get("transport")?.toLowerCase() : undefined;
  const sipOrSips = uri.ok && (uri.value.scheme === "sip" || uri.value.scheme === "sips");
  if (sipOrSips && transport !== undefined) {
    if (transport === "udp" || transport === "tcp" || transport === "tls") return;
    ctx.addIssue({
      code: "custom",
      message: `${shown(value)}: transport=${transport} is not supported (udp, tcp or tls)`,
    });
    return;
  }
  if (sipOrSips) return;
  ctx.addIssue({
    code: "custom",
    message: `${
      shown(value)
    } is not a SIP URI (e.g. sip:trunk.example.com or sip:203.0.113.5:5060)`,
  });
});

const inboundAuthSchema = z.strictObject({
  username: z.string().min(1, "must not be empty"),
  password_env: envName,
  realm: z.string().min(1, "must not be empty").default("flowcat"),
  challenge: z.union([z.literal(401), z.literal(407)], "must be 401 or 407").default(401),
  algorithms: z.array(choice(["MD5", "SHA-256"])).min(1).default(["MD5"]),
});

const inboundSchema = z.strictObject({
  allow: z.array(sourceEntry).default([]),
  filter: z.boolean().optional(),
  refused: choice(["reject", "ignore"]).default("reject"),
  auth: inboundAuthSchema.optional(),
});

const keepaliveSchema = z.strictObject({
  mode: choice(["crlf", "options", "off"]).default("crlf"),
  interval_seconds: z.int().min(5).max(3600).default(30),
});

const sipTlsSchema = z.strictObject({
  port: z.int().min(0).max(65535).default(5061),
  cert_file: z.string().min(1, "must not be empty").optional(),
  key_file: z.string().min(1, "must not be empty").optional(),
  ca_file: z.string().min(1, "must not be empty").optional(),
}).refine(
  (t) => (t.cert_file === undefined) === (t.key_file === undefined),
  "cert_file and key_file go together (both to accept TLS, neither to only connect out)",
);

const sipMediaSchema = z.strictObject({
  srtp: choice(["required", "optional", "off"]).default("off"),
});

/** `telephony.sip.transfer`: what a transfer does beyond REFER (docs/call-control.md). */
const sipTransferSchema = z.strictObject({
  bridge_fallback: z.boolean().default(true),
  dial_timeout_seconds: z.int().min(5).max(300).default(30),
  hold_audio_file: z.string().min(1, "must not be empty").optional(),
});

const sipSchema = z.strictObject({
  server: sipServer,
  register: z.boolean().default(true),
  login: z.string().min(1, "must not be empty").optional(),
  password_env: envName.optional(),
  register_expires: z.int().min(30).max(86400).default(300),
  caller_id: callerId,
  public_ip: z.ipv4("must be an IPv4 address like 203.0.113.5").optional(),
  sip_port: port.default(5060),
  tcp: z.boolean().default(false),
  stream_idle_seconds: z.int().min(0).max(86400).default(300),
  rtp_port_base: z.int().min(1024).max(65534).default(16000).refine(
    (n) => n % 2 === 0,
    "must be even (RTP uses even ports, RTCP the odd one above)",
  ),
  rtp_port_tries: z.int().min(1).max(30000).default(200),
  rtp_source: choice(["latch", "sdp", "any"]).default("latch"),
  allow_hosts: z.array(hostEntry).default([]),
  inbound: inboundSchema.prefault({}),
  keepalive: keepaliveSchema.prefault({}),
  media: sipMediaSchema.prefault({}),
  tls: sipTlsSchema.optional(),
  transfer: sipTransferSchema.prefault({}),
});

const carrierName = oneOfNames("carrier", () => CARRIER_NAMES);

/** `telephony.answering_machine`: human or machine on outbound calls (docs/call-control.md). */
const answeringMachineSchema = z.strictObject({
  enabled: z.boolean().default(false),
  wait_for_beep: z.boolean().default(true),
  use_transcript: z.boolean().optional(),
});

const telephonySchema = z.strictObject({
  public_url: urlWith(["https:", "http:"], "https://agent.example.com").optional(),
  carriers: z.array(carrierName).default([]),
  webhook_secrets_env: z.record(z.string(), envName).prefault({}),
  sip: sipSchema.optional(),
  answering_machine: answeringMachineSchema.prefault({}),
});

const recordingSchema = z.strictObject({
  enabled: z.boolean().default(false),
  dir: z.string().min(1, "must not be empty").default("./recordings"),
});

const limitsSchema = z.strictObject({
  max_calls: z.int().min(1).default(100),
  max_call_seconds: z.int().min(1).default(3600),
  max_body_bytes: z.int().min(1024).max(64 * 1024 * 1024).default(65536),
  drain_seconds: z.int().min(0).max(3600).default(10),
  max_message_audio_ms: z.int().min(20).max(60_000).default(1000),
  media_burst_ms: z.int().min(0).max(600_000).default(1000),
  idle_timeout_seconds: z.int().min(0).max(86_400).default(DEFAULT_IDLE_TIMEOUT_SECONDS),
});

const windowMs = z.int().min(0).max(10_000);

/** `turns`: when the caller's turn is over (cascaded pipeline; core/turn_end.ts). */
const turnsSchema = z.strictObject({
  pause_ms: windowMs.default(DEFAULT_TURN_WINDOWS.pauseMs),
  complete_ms: windowMs.default(DEFAULT_TURN_WINDOWS.completeMs),
  unsure_ms: windowMs.default(DEFAULT_TURN_WINDOWS.unsureMs),
  incomplete_ms: windowMs.default(DEFAULT_TURN_WINDOWS.incompleteMs),
  speculate: z.boolean().default(DEFAULT_TURN_WINDOWS.speculate),
  barge_in_ms: windowMs.default(DEFAULT_BARGE_IN.startMs),
  barge_in_hold_ms: windowMs.default(DEFAULT_BARGE_IN.holdMs),
});

/**
 * `audio`: processing of the caller's audio (core/processors/echo_cancel.ts). `echo_cancel` has
 * no schema default: unset means the default by transport (server/echo_cancel_policy.ts).
 */
const audioSchema = z.strictObject({
  echo_cancel: z.enum(["auto", "on", "off"]).optional(),
});

/** `server.guard`: the connection guard in front of Deno.serve (server/conn_guard.ts). */
const guardSchema = z.strictObject({
  enabled: z.boolean().default(true),
  header_timeout_ms: z.int().min(100).max(600_000).default(10_000),
  idle_timeout_ms: z.int().min(100).max(3_600_000).default(30_000),
  body_timeout_ms: z.int().min(100).max(3_600_000).default(30_000),
  max_header_bytes: z.int().min(1024).max(1024 * 1024).default(32 * 1024),
  max_pending: z.int().min(1).max(1_000_000).default(512),
  max_pending_per_client: z.int().min(1).max(1_000_000).default(16),
  hop_port: port.optional(),
});

const serverSchema = z.strictObject({
  host: z.string().min(1, "must not be empty").default(DEFAULT_HOST),
  port: z.int().min(0).max(65535).default(DEFAULT_PORT),
  tls: z.strictObject({
    cert_file: z.string().min(1, "must not be empty"),
    key_file: z.string().min(1, "must not be empty"),
  }).optional(),
  trusted_proxies: z.array(
    z.union([z.ipv4(), z.ipv6()], {
      error: "must be an IP address like 10.0.0.5 (the proxy's address as this server sees it)",
    }),
  ).default([]),
  cluster_secret_env: envName.optional(),
  guard: guardSchema.prefault({}),
});

const apiSchema = z.strictObject({ token_env: envName.optional() });

const playgroundSchema = z.strictObject({
  enabled: z.boolean().default(true),
  media_hosts: z.array(hostEntry).default([]),
  hosts: z.array(z.string().min(1, "must not be empty")).default([]),
});

/** A Sentry DSN: `https://<public key>@<host>[/<path>]/<project id>`. */
const dsnUrl = z.string().superRefine((value, ctx) => {
  if (parseDsnShape(value)) return;
  ctx.addIssue({
    code: "custom",
    message: `${shown(value)} is not a DSN (e.g. https://publickey@o123.ingest.sentry.io/456)`,
  });
});

/** True when `value` has a DSN's parts: http(s), a public key, a numeric-ish project id. */
function parseDsnShape(value: string): boolean {
  try {
    const u = new URL(value);
    return (u.protocol === "https:" || u.protocol === "http:") && u.username !== "" &&
      /\/[^/]+$/.test(u.pathname);
  } catch {
    return false;
  }
}

const errorsSchema = z.strictObject({
  dsn: dsnUrl.optional(),
  environment: z.string().min(1, "must not be empty").optional(),
});

const tracingSchema = z.strictObject({
  record_content: z.boolean().default(false),
});

const observabilitySchema = z.strictObject({
  errors: errorsSchema.prefault({}),
  tracing: tracingSchema.prefault({}),
});

/** Zod schema of the whole config document. */
export const configSchema = z.strictObject({
  version: z.literal(1, "the only config version is 1").optional(),
  agent: agentSchema,
  pipeline: oneOfNames("pipeline", () => PIPELINE_KINDS).default("s2s"),
  providers: providersSchema.prefault({}),
  telephony: telephonySchema.prefault({}),
  recording: recordingSchema.prefault({}),
  limits: limitsSchema.prefault({}),
  turns: turnsSchema.prefault({}),
  audio: audioSchema.prefault({}),
  server: serverSchema.prefault({}),
  api: apiSchema.prefault({}),
  playground: playgroundSchema.prefault({}),
  observability: observabilitySchema.prefault({}),
  tools: toolsSchema(envName).prefault({}),
});

export type { ConfigDocument };

/** True when `A` and `B` are the same type, not merely assignable to each other. */
type Same<A, B> = (<T>() => T extends A ? 1 : 2) extends (<T>() => T extends B ? 1 : 2) ? true
  : false;
// The hand-written ConfigDocument must stay exactly what the schema outputs.
const _documentMatchesSchema: Same<ConfigDocument, z.output<typeof configSchema>> = true;

/** Keys allowed in each object of the document, by dotted path (for "did you mean"). */
export const KNOWN_KEYS: Readonly<Record<string, readonly string[]>> = Object.freeze({
  "": Object.keys(configSchema.shape),
  agent: Object.keys(agentSchema.shape),
  "agent.remote": Object.keys(remoteSchema.shape),
  providers: Object.keys(providersSchema.shape),
  "providers.realtime": Object.keys(realtimeSchema.shape),
  "providers.stt": Object.keys(sttSchema.shape),
  "providers.llm": Object.keys(llmSchema.shape),
  "providers.tts": Object.keys(ttsSchema.shape),
  telephony: Object.keys(telephonySchema.shape),
  "telephony.sip": Object.keys(sipSchema.shape),
  "telephony.sip.inbound": Object.keys(inboundSchema.shape),
  "telephony.sip.inbound.auth": Object.keys(inboundAuthSchema.shape),
  "telephony.sip.keepalive": Object.keys(keepaliveSchema.shape),
  "telephony.sip.media": Object.keys(sipMediaSchema.shape),
  "telephony.sip.transfer": Object.keys(sipTransferSchema.shape),
  "telephony.sip.tls": ["port", "cert_file", "key_file", "ca_file"],
  recording: Object.keys(recordingSchema.shape),
  limits: Object.keys(limitsSchema.shape),
  turns: Object.keys(turnsSchema.shape),
  audio: Object.keys(audioSchema.shape),
  server: Object.keys(serverSchema.shape),
  "server.guard": Object.keys(guardSchema.shape),
  api: Object.keys(apiSchema.shape),
  playground: Object.keys(playgroundSchema.shape),
  observability: Object.keys(observabilitySchema.shape),
  "observability.errors": Object.keys(errorsSchema.shape),
  "observability.tracing": Object.keys(tracingSchema.shape),
  ...TOOLS_KNOWN_KEYS,
});

/** Where each secret comes from instead, for keys that would put a secret in the file. */
const PROVIDER_SECRET =
  "provider keys are never written in the config; the server reads <PROVIDER>_API_KEY";
/** Inline-secret keys refused per object path, with the hint that replaces them. */
export const INLINE_SECRET_HINTS: Readonly<Record<string, Readonly<Record<string, string>>>> =
  Object
    .freeze({
      "telephony.sip": {
        password:
          "put the password in an environment variable and name it: password_env: SIP_PASSWORD",
      },
      "telephony.sip.inbound.auth": {
        password:
          "put the password in an environment variable and name it: password_env: SIP_INBOUND_PASSWORD",
      },
      api: {
        token: "put the token in an environment variable and name it: token_env: FLOWCAT_API_TOKEN",
      },
      "agent.remote": {
        token: "put the token in an environment variable and name it: token_env: BRAIN_TOKEN",
      },
      "providers.realtime": { api_key: PROVIDER_SECRET, key: PROVIDER_SECRET },
      "providers.stt": { api_key: PROVIDER_SECRET, key: PROVIDER_SECRET },
      "providers.llm": { api_key: PROVIDER_SECRET, key: PROVIDER_SECRET },
      "providers.tts": { api_key: PROVIDER_SECRET, key: PROVIDER_SECRET },
      ...TOOLS_INLINE_SECRET_HINTS,
    });

/** Hints for required fields when they are missing, by dotted path. */
export const MISSING_HINTS: Readonly<Record<string, string>> = Object.freeze({
  agent: "add agent.graph: <graph file> or agent.remote.url: <brain URL>",
  "agent.remote.url": "the remote brain's base URL, e.g. http://127.0.0.1:8080",
  "providers.realtime.name":
    "a realtime provider: echo, gemini, openai, xai, ultravox, nova-sonic, azure or openai-compatible",
  "providers.stt.name": "a speech-to-text provider name",
  "providers.llm.name": "a language-model provider name",
  "providers.tts.name": "a text-to-speech provider name",
  "telephony.sip.server": "the registrar or proxy SIP URI, e.g. sip:trunk.example.com",
  "telephony.sip.caller_id": 'the trunk number in E.164 form, e.g. "+15551230000"',
  "telephony.sip.inbound.auth.username": "the username callers must authenticate with",
  "telephony.sip.inbound.auth.password_env":
    "the name of the environment variable holding that password, e.g. SIP_INBOUND_PASSWORD",
});

/** What a zod type name means to a config author. */
export function expectedWords(expected: string): string {
  const words: Record<string, string> = {
    string: "a string",
    number: "a number",
    int: "an integer",
    boolean: "true or false",
    object: "a mapping",
    record: "a mapping",
    array: "a list",
  };
  return words[expected] ?? expected;
}

/** `expected X, got Y` for a value of the wrong type. */
export function wrongTypeMessage(expected: string, actual: unknown): string {
  return `expected ${expectedWords(expected)}, got ${describeType(actual)}`;
}
