// Over 400 lines: the config's types, a section each, and the one mapping to them.
/**
 * The agent server config as the server uses it: camelCase, defaults filled in, relative paths
 * resolved against the config file's directory. Made from the validated snake_case document by
 * {@link toServerConfig}. Field reference: docs/config.md.
 * @module
 */

import { isAbsolute, join, normalize } from "node:path";
import { FlowcatError } from "../core/errors.ts";
import type { GraphSpec } from "../core/agent/graph_spec.ts";
import type { BargeInWindows, TurnWindows } from "../core/turn_end.ts";
import type { CarrierName } from "../telephony/serializers/mod.ts";
import type { ConfigDocument } from "./config_document.ts";
import { type ToolsConfig, toolsConfig } from "./config_tools.ts";

/** Pipeline shape: one speech-to-speech model, or STT + LLM + TTS. */
export type PipelineKind = "s2s" | "cascaded";

/** One provider, named as in the registry (`providers/registry.ts`). */
export interface ProviderConfig {
  /** Registry name, e.g. `gemini`. Its key is read from `<NAME>_API_KEY`. */
  name: string;
  /** Model id; absent uses the provider's default. */
  model?: string;
  /** Voice (realtime and tts providers). */
  voice?: string;
  /** Language hint (stt providers). */
  language?: string;
  /** Endpoint override (proxies, compatible services, tests). */
  url?: string;
  /** Provider-specific options, passed through as written. */
  options: Record<string, unknown>;
}

/** The providers the pipeline uses: `realtime` for s2s; `stt`, `llm`, `tts` for cascaded. */
export interface ProvidersConfig {
  /** Speech-to-speech provider (s2s pipeline). */
  realtime?: ProviderConfig;
  /** Speech-to-text provider (cascaded pipeline). */
  stt?: ProviderConfig;
  /** Language-model provider (cascaded pipeline). */
  llm?: ProviderConfig;
  /** Text-to-speech provider (cascaded pipeline). */
  tts?: ProviderConfig;
}

/** A local graph agent. */
export interface GraphAgentConfig {
  /** Discriminant: a local graph agent. */
  kind: "graph";
  /** The graph file as resolved (relative to the working directory); absent when inline. */
  graphFile?: string;
  /** The validated graph. */
  spec: GraphSpec;
  /** Seed variables, over the graph's defaults. */
  vars: Record<string, unknown>;
  /** Spoken when the call starts, `{{var}}` interpolated. */
  greeting?: string;
}

/** A remote brain reached over the remote-brain HTTP contract. */
export interface RemoteAgentConfig {
  /** Discriminant: a remote brain. */
  kind: "remote";
  /** Base URL of the remote brain, e.g. `http://127.0.0.1:8080`. */
  url: string;
  /** Sent as `brain_config` in `POST /session`; opaque to the server. */
  brainConfig: Record<string, unknown>;
  /** Time allowed for each brain request, body included, ms. */
  timeoutMs: number;
  /** Environment variable holding a bearer token for the brain, if it wants one. */
  tokenEnv?: string;
  /** Spoken when the call starts, as written. */
  greeting?: string;
}

/** The agent: a local graph or a remote brain. */
export type AgentConfig = GraphAgentConfig | RemoteAgentConfig;

/** Digest challenge of inbound INVITEs. */
export interface SipInboundAuthConfig {
  /** Username callers must present. */
  username: string;
  /** Environment variable holding the password callers must present. */
  passwordEnv: string;
  /** Realm of the challenge. */
  realm: string;
  /** 401 WWW-Authenticate or 407 Proxy-Authenticate. */
  challenge: 401 | 407;
  /** Algorithms offered, preferred first. */
  algorithms: ("MD5" | "SHA-256")[];
}

/** Who may send the agent SIP requests. */
export interface SipInboundConfig {
  /** Addresses or CIDR blocks of the trunk, SBC, PBX or proxy. */
  allow: string[];
  /** Whether sources outside `allow` (and `server`'s address) are refused. */
  filter: boolean;
  /** A refused source gets 403 (`reject`) or nothing (`ignore`). */
  refused: "reject" | "ignore";
  /** Digest challenge of new INVITEs, when configured. */
  auth?: SipInboundAuthConfig;
}

/** A SIP trunk (the fields of `SipConfig`, with the password named by an environment variable). */
export interface SipTrunkConfig {
  /** Registrar or proxy SIP URI. */
  server: string;
  /** Whether the agent registers with `server`. */
  register: boolean;
  /** SIP auth username (also our Contact user; `flowcat` when not registering and unset). */
  login: string;
  /** Environment variable holding the trunk password; absent only when not registering. */
  passwordEnv?: string;
  /** Registration expiry asked for, seconds. */
  registerExpires: number;
  /** E.164 number used as the From user on outbound calls. */
  callerId: string;
  /** IPv4 address advertised in Via, Contact and SDP (NAT); absent uses the bound address. */
  publicIp?: string;
  /** Local SIP signalling port (UDP, and TCP when `tcp`). */
  sipPort: number;
  /** Also accept SIP over TCP on `sipPort` (on anyway when `server` says `;transport=tcp`). */
  tcp: boolean;
  /** Close an unused SIP TCP/TLS connection after this many idle seconds (0: never). */
  streamIdleSeconds: number;
  /** First (even) RTP port probed. */
  rtpPortBase: number;
  /** Number of even RTP ports probed (caps concurrent SIP calls). */
  rtpPortTries: number;
  /** Hosts the trunk signals and sends media from (`--allow-net`); `*` for any. */
  allowHosts: string[];
  /** Where RTP is sent and accepted from: `latch` (symmetric RTP), `sdp`, `any`. */
  rtpSource: "latch" | "sdp" | "any";
  /** Source allowlist and digest challenge of inbound requests. */
  inbound: SipInboundConfig;
  /** NAT keep-alive towards `server` (`off`: none). */
  keepalive: { mode: "crlf" | "options" | "off"; intervalSeconds: number };
  /** SRTP with SDES keys: `required`, `optional` or `off`. */
  srtp: "required" | "optional" | "off";
  /** SIP over TLS: listening port and PEM files (resolved paths). */
  tls?: SipTlsFiles;
  /** Transfers beyond REFER: the bridge fallback, how long the target may ring (seconds). */
  transfer: { bridgeFallback: boolean; dialTimeoutSeconds: number; holdAudioFile?: string };
}

/** `telephony.sip.tls` with its paths resolved. */
export interface SipTlsFiles {
  /** TLS listening port (used with a certificate and key). */
  port: number;
  /** Certificate chain file; with `keyFile`, the agent accepts TLS. */
  certFile?: string;
  /** Private key file. */
  keyFile?: string;
  /** Roots trusted for a sips: server; absent: the system's. */
  caFile?: string;
}

/** The Contact user of a trunk that does not register and names no login. */
export const DEFAULT_SIP_LOGIN = "flowcat";

/** Carriers, webhook verification and the SIP trunk. */
export interface TelephonyConfig {
  /** Public base URL used in answer documents (no trailing slash). */
  publicUrl?: string;
  /** Carriers whose webhooks and media WebSockets are accepted, in config order. */
  carriers: CarrierName[];
  /** Environment variable per carrier holding its webhook signing secret. */
  webhookSecretsEnv: Partial<Record<CarrierName, string>>;
  /** The SIP trunk, when configured. */
  sip?: SipTrunkConfig;
  /**
   * Answering-machine detection on outbound calls; when on, `waitForBeep` holds the bot's audio
   * after a machine decision until the beep.
   */
  answeringMachine: { enabled: boolean; waitForBeep: boolean; useTranscript?: boolean };
}

/** Call recordings and transcripts. */
export interface RecordingConfig {
  /** When true, each call leaves a WAV recording and a transcript JSON in `dir`. */
  enabled: boolean;
  /** Directory, resolved against the config file's directory. */
  dir: string;
}

/** `turns`: the end of the caller's turn, and barge-in (cascaded pipeline). */
export interface TurnsConfig extends TurnWindows {
  /** When the caller's voice over the bot interrupts it. */
  bargeIn: BargeInWindows;
}

/** `audio`: processing of the caller's audio. */
export interface AudioConfig {
  /**
   * Echo cancellation: `auto` (telephone legs, not the browser), `on` (every leg), `off`;
   * absent: the default by transport (server/echo_cancel_policy.ts).
   */
  echoCancel?: "auto" | "on" | "off";
}

/** Server-wide bounds. */
export interface LimitsConfig {
  /** Concurrent calls; new calls over it are refused. */
  maxCalls: number;
  /** A call is ended after this long, seconds. */
  maxCallSeconds: number;
  /** A call with no speech either way for this long is cancelled, seconds; 0: never. */
  idleTimeoutSeconds: number;
  /** Largest HTTP request body, bytes; larger bodies get 413. */
  maxBodyBytes: number;
  /** On shutdown, running calls get this long to finish before they are cancelled, seconds. */
  drainSeconds: number;
  /** Longest audio one carrier media message may carry, ms; longer ones are dropped. */
  maxMessageAudioMs: number;
  /** How far inbound carrier audio may run ahead of real time, ms; the excess is dropped. */
  mediaBurstMs: number;
}

/** Where the HTTP server listens (the CLI's --host/--port override it). */
export interface ListenConfig {
  /** Listening address, e.g. `127.0.0.1` or `0.0.0.0`. */
  host: string;
  /** Listening port (0 picks a free one). */
  port: number;
  /**
   * HTTPS: PEM certificate chain and private key files (resolved paths). A browser on another
   * host gives the playground its microphone only on a secure (https) page.
   */
  tls?: TlsFiles;
  /**
   * Proxy addresses (as this server sees its peers) whose `X-Forwarded-Proto` and
   * `X-Forwarded-Host` give the public origin webhook signatures are checked against.
   */
  trustedProxies: string[];
  /**
   * Environment variable holding the secret call tokens are signed with, shared by every host
   * behind one balancer: a media socket is accepted by whichever host it lands on.
   */
  clusterSecretEnv?: string;
  /** The connection guard in front of the HTTP server. */
  guard: GuardConfig;
}

/** `server.guard`: what the connection guard enforces (server/conn_guard.ts). */
export interface GuardConfig {
  /** Whether the public listener is guarded (off behind a proxy that enforces timeouts). */
  enabled: boolean;
  /** A request head must be complete within this, ms. */
  headerTimeoutMs: number;
  /** A keep-alive connection with no request for this long is closed, ms. */
  idleTimeoutMs: number;
  /** A request body must be complete this long after its head, ms. */
  bodyTimeoutMs: number;
  /** Largest request head, bytes. */
  maxHeaderBytes: number;
  /** Connections waiting for their first request head, in all. */
  maxPending: number;
  /** Connections waiting for their first request head, per client address. */
  maxPendingPerClient: number;
  /** Loopback port of the hop to the HTTP server (absent: the listen port + 1). */
  hopPort?: number;
}

/** PEM files of an HTTPS listener. */
export interface TlsFiles {
  /** Certificate chain file. */
  certFile: string;
  /** Private key file. */
  keyFile: string;
}

/** The control API (`POST /calls`). */
export interface ApiConfig {
  /** Environment variable holding the bearer token; `/calls` is disabled without it. */
  tokenEnv?: string;
}

/** The browser playground (`GET /`, `POST /webrtc/offer`). */
export interface PlaygroundConfig {
  /** Whether the playground is served. */
  enabled: boolean;
  /** Extra hosts WebRTC media may be sent to (browsers on other machines); `*` for any. */
  mediaHosts: string[];
  /**
   * Extra host names the page may be opened under, besides loopback names and the listen
   * address (a wildcard listen adds this host's interface addresses).
   */
  hosts: string[];
}

/** Exporters beyond logs and `/metrics`. */
export interface ObservabilityConfig {
  /** Error reporting; off without a DSN (here or in `SENTRY_DSN`). */
  errors: { dsn?: string; environment?: string };
  /** Call spans: whether LLM spans carry prompts and completions. */
  tracing: { recordContent: boolean };
}

/** The validated agent server config. */
export interface AgentServerConfig {
  /** The config file as given, when loaded from a file. */
  configFile?: string;
  /** Directory relative paths in the file were resolved against. */
  baseDir: string;
  /** The brain: a local graph or a remote brain. */
  agent: AgentConfig;
  /** Pipeline shape. */
  pipeline: PipelineKind;
  /** The pipeline's providers. */
  providers: ProvidersConfig;
  /** Carriers, webhook secrets and the SIP trunk. */
  telephony: TelephonyConfig;
  /** Per-call recordings and transcripts. */
  recording: RecordingConfig;
  /** Server-wide bounds. */
  limits: LimitsConfig;
  /** When the caller's turn is over, and when their voice interrupts the bot (cascaded). */
  turns: TurnsConfig;
  /** Processing of the caller's audio (echo cancellation). */
  audio: AudioConfig;
  /** Where the HTTP server listens. */
  server: ListenConfig;
  /** The control API. */
  api: ApiConfig;
  /** The browser playground. */
  playground: PlaygroundConfig;
  /** Error reporting and LLM-call tracing. */
  observability: ObservabilityConfig;
  /** Tools beside the brain's: MCP servers. */
  tools: ToolsConfig;
}

/** `path` resolved against `baseDir` (no `Deno.cwd()`, which would need read permission). */
export function resolveFrom(baseDir: string, path: string): string {
  return isAbsolute(path) ? normalize(path) : normalize(join(baseDir, path));
}

/** A provider entry of the document, of any kind: the fields a {@link ProviderConfig} keeps. */
type ProviderDoc = ProviderConfig;

function provider(doc: ProviderDoc | undefined): ProviderConfig | undefined {
  if (doc === undefined) return undefined;
  const out: ProviderConfig = { name: doc.name, options: doc.options };
  if (doc.model !== undefined) out.model = doc.model;
  if (doc.voice !== undefined) out.voice = doc.voice;
  if (doc.language !== undefined) out.language = doc.language;
  if (doc.url !== undefined) out.url = doc.url;
  return out;
}

function agent(doc: ConfigDocument, graph: { spec: GraphSpec; file?: string } | undefined) {
  const a = doc.agent;
  if (a.remote !== undefined) {
    const out: RemoteAgentConfig = {
      kind: "remote",
      url: a.remote.url,
      brainConfig: a.remote.brain_config,
      timeoutMs: a.remote.timeout_ms,
    };
    if (a.remote.token_env !== undefined) out.tokenEnv = a.remote.token_env;
    if (a.greeting !== undefined) out.greeting = a.greeting;
    return out;
  }
  if (graph === undefined) {
    throw new FlowcatError("config", "a graph agent needs its validated graph");
  }
  const out: GraphAgentConfig = { kind: "graph", spec: graph.spec, vars: { ...a.vars } };
  if (graph.file !== undefined) out.graphFile = graph.file;
  if (a.greeting !== undefined) out.greeting = a.greeting;
  return out;
}

/** The typed config from a validated document (and its validated graph, for graph agents). */
export function toServerConfig(
  doc: ConfigDocument,
  baseDir: string,
  graph: { spec: GraphSpec; file?: string } | undefined,
  configFile?: string,
): AgentServerConfig {
  const t = doc.telephony;
  const telephony: TelephonyConfig = {
    carriers: t.carriers as CarrierName[],
    webhookSecretsEnv: { ...t.webhook_secrets_env } as Partial<Record<CarrierName, string>>,
    answeringMachine: {
      enabled: t.answering_machine.enabled,
      waitForBeep: t.answering_machine.wait_for_beep,
      ...(t.answering_machine.use_transcript !== undefined
        ? { useTranscript: t.answering_machine.use_transcript }
        : {}),
    },
  };
  if (t.public_url !== undefined) telephony.publicUrl = t.public_url.replace(/\/+$/, "");
  if (t.sip !== undefined) {
    const s = t.sip;
    const inbound: SipInboundConfig = {
      allow: [...s.inbound.allow],
      filter: s.inbound.filter ?? !s.register,
      refused: s.inbound.refused,
    };
    const a = s.inbound.auth;
    if (a !== undefined) {
      inbound.auth = {
        username: a.username,
        passwordEnv: a.password_env,
        realm: a.realm,
        challenge: a.challenge,
        algorithms: [...a.algorithms],
      };
    }
    telephony.sip = {
      server: s.server,
      register: s.register,
      login: s.login ?? DEFAULT_SIP_LOGIN,
      registerExpires: s.register_expires,
      callerId: s.caller_id as string,
      sipPort: s.sip_port,
      tcp: s.tcp,
      streamIdleSeconds: s.stream_idle_seconds,
      rtpPortBase: s.rtp_port_base,
      rtpPortTries: s.rtp_port_tries,
      allowHosts: [...s.allow_hosts],
      rtpSource: s.rtp_source,
      inbound,
      keepalive: { mode: s.keepalive.mode, intervalSeconds: s.keepalive.interval_seconds },
      srtp: s.media.srtp,
      transfer: {
        bridgeFallback: s.transfer.bridge_fallback,
        dialTimeoutSeconds: s.transfer.dial_timeout_seconds,
        ...(s.transfer.hold_audio_file !== undefined
          ? { holdAudioFile: resolveFrom(baseDir, s.transfer.hold_audio_file) }
          : {}),
      },
    };
    if (s.password_env !== undefined) telephony.sip.passwordEnv = s.password_env;
    if (s.public_ip !== undefined) telephony.sip.publicIp = s.public_ip;
    if (s.tls !== undefined) {
      const tls: SipTlsFiles = { port: s.tls.port };
      if (s.tls.cert_file !== undefined) tls.certFile = resolveFrom(baseDir, s.tls.cert_file);
      if (s.tls.key_file !== undefined) tls.keyFile = resolveFrom(baseDir, s.tls.key_file);
      if (s.tls.ca_file !== undefined) tls.caFile = resolveFrom(baseDir, s.tls.ca_file);
      telephony.sip.tls = tls;
    }
  }
  const providers: ProvidersConfig = {};
  for (const kind of ["realtime", "stt", "llm", "tts"] as const) {
    const p = provider(doc.providers[kind] as ProviderDoc | undefined);
    if (p !== undefined) providers[kind] = p;
  }
  const api: ApiConfig = {};
  if (doc.api.token_env !== undefined) api.tokenEnv = doc.api.token_env;
  const out: AgentServerConfig = {
    baseDir,
    agent: agent(doc, graph),
    pipeline: doc.pipeline as PipelineKind,
    providers,
    telephony,
    recording: {
      enabled: doc.recording.enabled,
      dir: resolveFrom(baseDir, doc.recording.dir),
    },
    limits: {
      maxCalls: doc.limits.max_calls,
      maxCallSeconds: doc.limits.max_call_seconds,
      idleTimeoutSeconds: doc.limits.idle_timeout_seconds,
      maxBodyBytes: doc.limits.max_body_bytes,
      drainSeconds: doc.limits.drain_seconds,
      maxMessageAudioMs: doc.limits.max_message_audio_ms,
      mediaBurstMs: doc.limits.media_burst_ms,
    },
    turns: {
      pauseMs: doc.turns.pause_ms,
      completeMs: doc.turns.complete_ms,
      unsureMs: doc.turns.unsure_ms,
      incompleteMs: doc.turns.incomplete_ms,
      speculate: doc.turns.speculate,
      bargeIn: { startMs: doc.turns.barge_in_ms, holdMs: doc.turns.barge_in_hold_ms },
    },
    audio: doc.audio.echo_cancel !== undefined ? { echoCancel: doc.audio.echo_cancel } : {},
    server: {
      host: doc.server.host,
      port: doc.server.port,
      guard: {
        enabled: doc.server.guard.enabled,
        headerTimeoutMs: doc.server.guard.header_timeout_ms,
        idleTimeoutMs: doc.server.guard.idle_timeout_ms,
        bodyTimeoutMs: doc.server.guard.body_timeout_ms,
        maxHeaderBytes: doc.server.guard.max_header_bytes,
        maxPending: doc.server.guard.max_pending,
        maxPendingPerClient: doc.server.guard.max_pending_per_client,
        ...(doc.server.guard.hop_port !== undefined ? { hopPort: doc.server.guard.hop_port } : {}),
      },
      ...(doc.server.tls === undefined ? {} : {
        tls: {
          certFile: resolveFrom(baseDir, doc.server.tls.cert_file),
          keyFile: resolveFrom(baseDir, doc.server.tls.key_file),
        },
      }),
      trustedProxies: [...doc.server.trusted_proxies],
      ...(doc.server.cluster_secret_env === undefined
        ? {}
        : { clusterSecretEnv: doc.server.cluster_secret_env }),
    },
    api,
    playground: {
      enabled: doc.playground.enabled,
      mediaHosts: [...doc.playground.media_hosts],
      hosts: [...doc.playground.hosts],
    },
    observability: {
      errors: { ...doc.observability.errors },
      tracing: { recordContent: doc.observability.tracing.record_content },
    },
    tools: toolsConfig(doc.tools),
  };
  if (configFile !== undefined) out.configFile = configFile;
  return out;
}
