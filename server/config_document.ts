/**
 * The agent server config document after schema validation: snake_case as the operator wrote
 * it, defaults filled in. Spelled out by hand (not inferred from the zod schema) so the public
 * API has explicit types; `config_schema.ts` checks at compile time that the schema's output is
 * exactly this shape. Field reference: docs/config.md.
 * @module
 */

import type { ToolsDocument } from "./config_tools.ts";

/** A JSON value, as `agent.vars` holds them. */
export type JsonValue = string | number | boolean | null | JsonValue[] | {
  [key: string]: JsonValue;
};

/** One `providers.<kind>` entry: the settings every provider understands. */
export interface ProviderDocument {
  /** Registry name, e.g. `gemini`. */
  name: string;
  /** Model id; absent uses the provider's default. */
  model?: string;
  /** Endpoint override (ws, wss, http or https URL). */
  url?: string;
  /** Provider-specific options, passed through as written. */
  options: Record<string, unknown>;
}

/** `providers.realtime` or `providers.tts`: a provider that speaks. */
export interface VoiceProviderDocument extends ProviderDocument {
  /** Voice name. */
  voice?: string;
}

/** `providers.stt`: a speech-to-text provider. */
export interface SttProviderDocument extends ProviderDocument {
  /** Language hint. */
  language?: string;
}

/** `providers`: the pipeline's providers by kind. */
export interface ProvidersDocument {
  /** Speech-to-speech provider (s2s pipeline). */
  realtime?: VoiceProviderDocument;
  /** Speech-to-text provider (cascaded pipeline). */
  stt?: SttProviderDocument;
  /** Language-model provider (cascaded pipeline). */
  llm?: ProviderDocument;
  /** Text-to-speech provider (cascaded pipeline). */
  tts?: VoiceProviderDocument;
}

/** `agent.remote`: a brain reached over the remote-brain HTTP contract. */
export interface RemoteBrainDocument {
  /** Base URL of the brain (http or https). */
  url: string;
  /** Sent as `brain_config` in `POST /session`; not interpreted by the server. */
  brain_config: Record<string, unknown>;
  /** Time allowed for each brain request, body included, ms (default 5000). */
  timeout_ms: number;
  /** Environment variable holding the brain's bearer token. */
  token_env?: string;
}

/** `agent`: a local graph or a remote brain. */
export interface AgentDocument {
  /** A graph-spec file path or an inline graph spec; resolved and validated by the loader. */
  graph?: unknown;
  /** The remote brain, when the agent is not a local graph. */
  remote?: RemoteBrainDocument;
  /** Seed variables over the graph's defaults. */
  vars: Record<string, JsonValue>;
  /** Spoken when the call starts. */
  greeting?: string;
}

/** `telephony.sip.inbound.auth`: digest challenge of inbound INVITEs. */
export interface SipInboundAuthDocument {
  /** Username callers must present. */
  username: string;
  /** Environment variable holding the password callers must present. */
  password_env: string;
  /** Realm of the challenge (default "flowcat"). */
  realm: string;
  /** 401 (WWW-Authenticate, default) or 407 (Proxy-Authenticate). */
  challenge: 401 | 407;
  /** Algorithms offered, preferred first (default ["MD5"]). */
  algorithms: ("MD5" | "SHA-256")[];
}

/** `telephony.sip.inbound`: who may send the agent requests. */
export interface SipInboundDocument {
  /** Addresses or CIDR blocks of the trunk, SBC, PBX or proxy. */
  allow: string[];
  /** Refuse other sources (default: on when `register` is false). */
  filter?: boolean;
  /** A refused source gets 403 (`reject`, default) or nothing (`ignore`). */
  refused: "reject" | "ignore";
  /** Digest challenge of new INVITEs. */
  auth?: SipInboundAuthDocument;
}

/** `telephony.sip.keepalive`: NAT keep-alive towards `server`. */
export interface SipKeepaliveDocument {
  /** `crlf` (default), `options` or `off`. */
  mode: "crlf" | "options" | "off";
  /** Seconds between pings (default 30). */
  interval_seconds: number;
}

/** `telephony.sip.tls`: SIP over TLS. */
export interface SipTlsDocument {
  /** TLS listening port (default 5061). */
  port: number;
  /** PEM certificate chain; with `key_file`, the agent accepts TLS. */
  cert_file?: string;
  /** PEM private key. */
  key_file?: string;
  /** PEM roots trusted for a sips: server (default the system's). */
  ca_file?: string;
}

/** `telephony.sip.media`: how call media is carried. */
export interface SipMediaDocument {
  /** SRTP with SDES keys: `required`, `optional` or `off` (default). */
  srtp: "required" | "optional" | "off";
}

/** `telephony.sip.transfer`: what a transfer does beyond REFER. */
export interface SipTransferDocument {
  /** Dial the target and bridge the calls when the peer refuses REFER (default true). */
  bridge_fallback: boolean;
  /** How long the target may ring, seconds (default 30). */
  dial_timeout_seconds: number;
  /** WAV file a warm transfer's caller hears on hold (default silence). */
  hold_audio_file?: string;
}

/** `telephony.sip`: a SIP trunk. */
export interface SipTrunkDocument {
  /** Registrar or proxy SIP URI. */
  server: string;
  /** Register with `server` (default true); false: a trunk by IP, an SBC, a PBX or a proxy. */
  register: boolean;
  /** SIP auth username (required when registering). */
  login?: string;
  /** Environment variable holding the trunk password (required when registering). */
  password_env?: string;
  /** Registration expiry asked for, seconds (default 300). */
  register_expires: number;
  /** The trunk number, E.164 (checked by the schema; typed `unknown` as YAML may read a number). */
  caller_id: unknown;
  /** IPv4 address advertised in Via, Contact and SDP (NAT). */
  public_ip?: string;
  /** Local SIP signalling port (default 5060). */
  sip_port: number;
  /** Also accept SIP over TCP on `sip_port` (default false). */
  tcp: boolean;
  /** Close an unused SIP TCP/TLS connection after this many idle seconds (0: never; default 300). */
  stream_idle_seconds: number;
  /** First (even) RTP port probed (default 16000). */
  rtp_port_base: number;
  /** Number of even RTP ports probed (default 200). */
  rtp_port_tries: number;
  /** Where RTP is sent and accepted from: `latch` (default), `sdp` or `any`. */
  rtp_source: "latch" | "sdp" | "any";
  /** Hosts the trunk signals and sends media from (`host`, `host:port`, CIDR or `*`). */
  allow_hosts: string[];
  /** Source allowlist and digest challenge of inbound requests. */
  inbound: SipInboundDocument;
  /** NAT keep-alive. */
  keepalive: SipKeepaliveDocument;
  /** Media encryption. */
  media: SipMediaDocument;
  /** SIP over TLS. */
  tls?: SipTlsDocument;
  /** Transfers beyond REFER (bridge fallback, warm transfers). */
  transfer: SipTransferDocument;
}

/** `telephony`: carriers, webhook secrets and the SIP trunk. */
export interface TelephonyDocument {
  /** The server's public base URL, used in answer documents. */
  public_url?: string;
  /** Carriers whose webhooks and media WebSockets are accepted. */
  carriers: string[];
  /** Environment variable per carrier holding its webhook signing secret. */
  webhook_secrets_env: Record<string, string>;
  /** The SIP trunk, when configured. */
  sip?: SipTrunkDocument;
  /** Answering-machine detection on outbound calls. */
  answering_machine: AnsweringMachineDocument;
}

/** `telephony.answering_machine`: human or machine on the calls this server places. */
export interface AnsweringMachineDocument {
  /** Whether outbound calls run the detector (default false). */
  enabled: boolean;
  /** Whether the bot's audio waits for the beep after a machine decision (default true). */
  wait_for_beep: boolean;
  /** Whether the callee's first transcript counts too (default: cascaded yes, s2s no). */
  use_transcript?: boolean;
}

/** `recording`: per-call WAV and transcript files. */
export interface RecordingDocument {
  /** Whether each call leaves a recording and a transcript (default false). */
  enabled: boolean;
  /** Directory, relative to the config file (default `./recordings`). */
  dir: string;
}

/** `limits`: server-wide bounds. */
export interface LimitsDocument {
  /** Concurrent calls (default 100). */
  max_calls: number;
  /** A call is ended after this long, seconds (default 3600). */
  max_call_seconds: number;
  /** A call with no speech either way for this long is cancelled, seconds; 0: never (default 120). */
  idle_timeout_seconds: number;
  /** Largest HTTP request body, bytes (default 65536). */
  max_body_bytes: number;
  /** Time running calls get to finish on shutdown, seconds (default 10). */
  drain_seconds: number;
  /** Longest audio one carrier media message may carry, ms (default 1000). */
  max_message_audio_ms: number;
  /** How far a carrier's inbound audio may run ahead of real time, ms (default 1000). */
  media_burst_ms: number;
}

/** `turns`: when the caller's turn is over (cascaded pipeline). */
export interface TurnsDocument {
  /** Silence that ends a stretch of speech: transcription (and a draft reply) start (default 200). */
  pause_ms: number;
  /** Silence before a turn that reads finished is answered, ms (default 200). */
  complete_ms: number;
  /** Silence before a turn with no clear sign is answered, ms (default 800). */
  unsure_ms: number;
  /** Silence before a turn that reads unfinished is answered, ms (default 1500). */
  incomplete_ms: number;
  /** Draft a reply while waiting; dropped if the caller goes on (default true). */
  speculate: boolean;
  /** Speech over the bot that interrupts it, ms (default 200). */
  barge_in_ms: number;
  /** How long the first sign of voice over the bot holds its audio, ms (default 300; 0 never). */
  barge_in_hold_ms: number;
}

/** `server`: where the HTTP server listens. */
export interface ListenDocument {
  /** Listening address (default `127.0.0.1`). */
  host: string;
  /** Listening port (default 6210; 0 picks a free one). */
  port: number;
  /** Serve HTTPS with this PEM certificate chain and key (browsers on other hosts need it). */
  tls?: { cert_file: string; key_file: string };
  /** Proxy addresses whose `X-Forwarded-Proto` / `X-Forwarded-Host` are believed (default none). */
  trusted_proxies: string[];
  /** Environment variable holding the call-token secret every host behind a balancer shares. */
  cluster_secret_env?: string;
  /** The connection guard in front of the HTTP server (timeouts, caps). */
  guard: GuardDocument;
}

/** `server.guard`: header and idle timeouts, waiting-connection and WebSocket message caps. */
export interface GuardDocument {
  /** Guard the public listener (default true; false behind a proxy that enforces timeouts). */
  enabled: boolean;
  /** A request head must be complete within this, ms (default 10000). */
  header_timeout_ms: number;
  /** A keep-alive connection with no request for this long is closed, ms (default 30000). */
  idle_timeout_ms: number;
  /** A request body must be complete this long after its head, ms (default 30000). */
  body_timeout_ms: number;
  /** Largest request head, bytes (default 32768). */
  max_header_bytes: number;
  /** Connections waiting for their first request head, in all (default 512). */
  max_pending: number;
  /** Connections waiting for their first request head, per client address (default 16). */
  max_pending_per_client: number;
  /** Loopback port of the hop to the HTTP server (default: the listen port + 1). */
  hop_port?: number;
}

/** `api`: the control API (`POST /calls`). */
export interface ApiDocument {
  /** Environment variable holding the bearer token; `/calls` is disabled without it. */
  token_env?: string;
}

/** `playground`: the browser playground. */
export interface PlaygroundDocument {
  /** Whether the playground is served (default true). */
  enabled: boolean;
  /** Browsers on other machines that WebRTC media may be sent to (`host`, `host:port`, `*`). */
  media_hosts: string[];
  /** Extra names the page may be opened under (besides loopback and the listen address). */
  hosts: string[];
}

/** `observability`: exporters beyond logs and `/metrics` (all off by default). */
export interface ObservabilityDocument {
  /** Error reporting to a Sentry-compatible server. */
  errors: {
    /** Where reports go; `SENTRY_DSN` in the environment wins. Off when neither is set. */
    dsn?: string;
    /** The `environment` of each report (e.g. `production`). */
    environment?: string;
  };
  /** Call spans (on with `OTEL_DENO=true`). */
  tracing: {
    /** Put prompts and completions in LLM spans (default false). */
    record_content: boolean;
  };
}

/** `audio`: processing of the caller's audio. */
export interface AudioDocument {
  /** Echo cancellation: `auto` (telephone legs only), `on` (every leg), `off`; unset: default. */
  echo_cancel?: "auto" | "on" | "off";
}

/** The whole config document after schema validation. */
export interface ConfigDocument {
  /** Config format version; only 1 exists. */
  version?: 1;
  /** The brain. */
  agent: AgentDocument;
  /** Pipeline shape, `s2s` or `cascaded` (default `s2s`). */
  pipeline: string;
  /** The pipeline's providers. */
  providers: ProvidersDocument;
  /** Carriers, webhook secrets, SIP trunk. */
  telephony: TelephonyDocument;
  /** Per-call recordings and transcripts. */
  recording: RecordingDocument;
  /** Server-wide bounds. */
  limits: LimitsDocument;
  /** Turn-taking windows. */
  turns: TurnsDocument;
  /** Processing of the caller's audio. */
  audio: AudioDocument;
  /** Listening address. */
  server: ListenDocument;
  /** The control API. */
  api: ApiDocument;
  /** The browser playground. */
  playground: PlaygroundDocument;
  /** Error reporting and LLM-call tracing. */
  observability: ObservabilityDocument;
  /** Tools beside the brain's: MCP servers. */
  tools: ToolsDocument;
}
