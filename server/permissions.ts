/**
 * Least-privilege Deno flags for a config: what `--print-permissions` prints. Every grant is
 * derived from something the config names (providers, remote brain, SIP trunk, recording,
 * playground); nothing is `-A`. Choices Deno cannot express exactly (port ranges, peers known
 * only at call time) are explained in docs/config.md ("Permissions").
 *
 * @example
 * ```ts
 * declare const config: Parameters<typeof permissionFlags>[0];
 * const flags = permissionFlags(config, { configPath: "examples/agent.yaml" });
 * console.log(permissionCommand(config, { configPath: "examples/agent.yaml" }));
 * // deno run --allow-net=127.0.0.1,0.0.0.0,[::],[::1] ... server/main.ts --config examples/agent.yaml
 * ```
 * @module
 */

import { type ProviderKind, providersOfKind } from "../providers/registry.ts";
import type { EnvReader, ProviderInfo } from "../providers/provider_types.ts";
import { parseUri } from "../telephony/sip/uri.ts";
import { sipTlsReads } from "./sip_tls.ts";
import { sipBindGrants } from "./sip_bind_grants.ts";
import { requiredEnv } from "./config_env.ts";
import type { AgentServerConfig } from "./config_types.ts";
import { GUARD_HOP_HOST } from "./guard_net.ts";

/** The server's entry module, as run from the project root. */
export const SERVER_ENTRY = "server/main.ts";
/**
 * The wildcard address werift binds its WebRTC UDP sockets to (IPv4 only; any port, since ICE
 * ports are ephemeral). The browsers' own addresses are added where the server runs
 * (server/webrtc_peers.ts).
 */
export const WEBRTC_BIND_HOSTS: readonly string[] = Object.freeze(["0.0.0.0"]);
/** The address SIP and RTP sockets bind to (each port granted: server/sip_bind_grants.ts). */
export const SIP_BIND_HOST = "0.0.0.0";

/** Inputs beside the config: where it was loaded from and the effective listen address. */
export interface PermissionOptions {
  /** The config file as passed to `--config`. */
  configPath: string;
  /** Listen host after the CLI override; default `config.server.host`. */
  host?: string;
  /** Listen port after the CLI override; default `config.server.port`. */
  port?: number;
  /**
   * Worker threads sharing the port (`--workers`; default 1): each has its own hop port.
   * `"any"`: chosen at run time (flags baked into an executable), so the hop is granted
   * without a port.
   */
  workers?: number | "any";
  /** Entry module; default {@link SERVER_ENTRY}. */
  entry?: string;
  /** Extra grants the server implementation needs (e.g. a model file to read). */
  extraNet?: readonly string[];
  extraRead?: readonly string[];
  extraWrite?: readonly string[];
  extraEnv?: readonly string[];
  extraSys?: readonly string[];
  /**
   * Reads the variables that decide a provider's hosts (`AWS_REGION`); unset when absent, so
   * the config and the defaults decide.
   */
  env?: EnvReader;
}

/** `host` in `--allow-net` form: IPv6 addresses in brackets. */
export function netHost(host: string): string {
  return host.includes(":") && !host.startsWith("[") ? `[${host}]` : host;
}

/** `host:port` of a URL, with the scheme's default port. */
export function urlHostPort(url: string): string {
  const u = new URL(url);
  const secure = u.protocol === "https:" || u.protocol === "wss:";
  const port = u.port !== "" ? u.port : secure ? "443" : "80";
  return `${netHost(u.hostname)}:${port}`;
}

function providerHosts(config: AgentServerConfig, env: EnvReader): string[] {
  const out: string[] = [];
  for (const kind of ["realtime", "stt", "llm", "tts"] as ProviderKind[]) {
    const p = config.providers[kind];
    if (p === undefined) continue;
    // An endpoint override replaces the registry's hosts: the provider dials only that URL.
    const info = providersOfKind(kind)[p.name];
    if (p.url !== undefined) {
      // Credentials still come from where they come from (an OAuth token endpoint).
      out.push(urlHostPort(p.url), ...(info?.authHosts ?? []));
      continue;
    }
    out.push(...(info === undefined ? [] : hostsOf(info, p.options ?? {}, env)));
    // A local server (whisper.cpp, Ollama, Piper...) is dialled at its default http URL,
    // which the registry does not list as a host.
    const base = (info as { baseUrl?: string } | undefined)?.baseUrl;
    if (info?.hosts.length === 0 && base !== undefined) out.push(urlHostPort(base));
  }
  return out;
}

/** A provider's hosts for its options (a region); its default hosts when they cannot be told. */
export function hostsOf(
  info: ProviderInfo,
  options: Readonly<Record<string, unknown>>,
  env: EnvReader,
): readonly string[] {
  if (info.hostsFor === undefined) return info.hosts;
  try {
    return info.hostsFor(options, env);
  } catch {
    // A bad option (a region that is no region) stops the server at start with its own error.
    return info.hosts;
  }
}

function sipHosts(config: AgentServerConfig): string[] {
  const sip = config.telephony.sip;
  if (sip === undefined) return [];
  const out = sipBindGrants(sip, SIP_BIND_HOST);
  const uri = parseUri(sip.server);
  if (uri.ok) {
    const tls = uri.value.scheme === "sips" ||
      uri.value.params.get("transport")?.toLowerCase() === "tls";
    const port = uri.value.port ?? (tls ? 5061 : 5060);
    out.push(`${netHost(uri.value.host)}:${port}`);
  }
  out.push(...sip.allowHosts);
  // Replies to an allowed peer (an SBC, a PBX, a trunk's signalling block) go to it: IPv4
  // addresses and blocks, which --allow-net takes as written.
  out.push(...sip.inbound.allow);
  return out;
}

/**
 * The credential files the configured providers read at start (a service-account key named by
 * `GOOGLE_APPLICATION_CREDENTIALS`), as `env` has them; unset ones are left out (the server then
 * stops with a line naming the variable).
 */
export function credentialFileReads(
  config: AgentServerConfig,
  env: (name: string) => string | undefined,
): string[] {
  const out: string[] = [];
  for (const kind of ["realtime", "stt", "llm", "tts"] as ProviderKind[]) {
    const p = config.providers[kind];
    const info = p === undefined ? undefined : providersOfKind(kind)[p.name];
    if (!info?.keyIsFile || info.keyEnv === undefined) continue;
    const path = env(info.keyEnv);
    if (path) out.push(path);
  }
  return out;
}

/** The `--allow-net` list (empty list: no network; `["*"]`: any host). */
export function netGrants(config: AgentServerConfig, opts: PermissionOptions): string[] {
  const host = netHost(opts.host ?? config.server.host);
  const port = opts.port ?? config.server.port;
  const all = [port === 0 ? host : `${host}:${port}`];
  // The connection guard hands each connection to Deno.serve on a loopback port (one per
  // worker; any port when the listen port is picked at run time).
  if (config.server.guard.enabled) {
    const hop = config.server.guard.hopPort ?? (port === 0 ? 0 : port + 1);
    const workers = opts.workers ?? 1;
    if (hop === 0 || workers === "any") all.push(GUARD_HOP_HOST);
    else for (let i = 0; i < workers; i++) all.push(`${GUARD_HOP_HOST}:${hop + i}`);
  }
  all.push(...providerHosts(config, opts.env ?? (() => undefined)));
  if (config.agent.kind === "remote") all.push(urlHostPort(config.agent.url));
  all.push(...sipHosts(config));
  for (const m of config.tools.mcp) if (m.transport === "http") all.push(urlHostPort(m.url));
  if (config.playground.enabled) {
    all.push(...WEBRTC_BIND_HOSTS, ...config.playground.mediaHosts);
  }
  all.push(...(opts.extraNet ?? []));
  if (all.includes("*")) return ["*"];
  const unique = [...new Set(all)];
  // `h` already grants every port of h, so `h:p` would only add noise.
  return unique.filter((e) => {
    const colon = e.lastIndexOf(":");
    return colon <= 0 || e.endsWith("]") || !unique.includes(e.slice(0, colon));
  });
}

function list(flag: string, values: readonly string[]): string[] {
  const unique = [...new Set(values)];
  return unique.length === 0 ? [] : [`${flag}=${unique.join(",")}`];
}

/**
 * The least-privilege flags for running the server with `config`: `--allow-net`,
 * `--allow-read`, `--allow-write` (recording only), `--allow-env` with `--ignore-env` (other
 * variables read as unset instead of failing), `--allow-run` (the programs of stdio MCP servers
 * only) and `--allow-sys` (WebRTC, SIP without public_ip).
 */
export function permissionFlags(config: AgentServerConfig, opts: PermissionOptions): string[] {
  const net = netGrants(config, opts);
  const flags = net.length === 1 && net[0] === "*" ? ["--allow-net"] : list("--allow-net", net);
  const read = [opts.configPath];
  if (config.agent.kind === "graph" && config.agent.graphFile !== undefined) {
    read.push(config.agent.graphFile);
  }
  read.push(...sipTlsReads(config.telephony.sip?.tls));
  const hold = config.telephony.sip?.transfer.holdAudioFile;
  if (hold !== undefined) read.push(hold);
  flags.push(...list("--allow-read", [...read, ...(opts.extraRead ?? [])]));
  const write = config.recording.enabled ? [config.recording.dir] : [];
  flags.push(...list("--allow-write", [...write, ...(opts.extraWrite ?? [])]));
  const env = requiredEnv(config).map((e) => e.name);
  flags.push(...list("--allow-env", [...env, ...(opts.extraEnv ?? [])]));
  // MCP servers over stdio: exactly their programs.
  const run = config.tools.mcp.flatMap((m) => (m.transport === "stdio" ? [m.command] : []));
  flags.push(...list("--allow-run", run));
  // Without this, npm:yaml (LOG_TOKENS) and werift's `debug` (every DEBUG_* name) would need
  // the whole environment; with it they see only the names granted above.
  flags.push("--ignore-env");
  const sys: string[] = [];
  const sip = config.telephony.sip;
  if (config.playground.enabled || (sip !== undefined && sip.publicIp === undefined)) {
    sys.push("networkInterfaces");
  }
  flags.push(...list("--allow-sys", [...sys, ...(opts.extraSys ?? [])]));
  return flags;
}

/** `word` quoted for a POSIX shell when it holds anything beyond plain flag characters. */
export function shellQuote(word: string): string {
  return /^[A-Za-z0-9_\-=.,:/@%+]+$/.test(word) ? word : `'${word.replaceAll("'", `'\\''`)}'`;
}

/**
 * The whole command line: `deno run <flags> server/main.ts --config <path>`, plus `--host` /
 * `--port` when they differ from the config's.
 */
export function permissionCommand(config: AgentServerConfig, opts: PermissionOptions): string {
  const words = [
    ...denoCommand(),
    "run",
    ...permissionFlags(config, opts),
    opts.entry ?? SERVER_ENTRY,
  ];
  words.push("--config", opts.configPath);
  if (opts.host !== undefined && opts.host !== config.server.host) words.push("--host", opts.host);
  if (opts.port !== undefined && opts.port !== config.server.port) {
    words.push("--port", String(opts.port));
  }
  if (typeof opts.workers === "number" && opts.workers > 1) {
    words.push("--workers", String(opts.workers));
  }
  return words.map(shellQuote).join(" ");
}

/**
 * How to run this Deno again, as the user started it: `npx -y deno@<version>` when it came from
 * npm through npx (no `deno` on the PATH then), else `deno`.
 */
export function denoCommand(execPath: string | undefined = safeExecPath()): string[] {
  if (execPath !== undefined && /[\\/](_npx|node_modules)[\\/]/.test(execPath)) {
    return ["npx", "-y", `deno@${Deno.version.deno}`];
  }
  return ["deno"];
}

function safeExecPath(): string | undefined {
  try {
    return Deno.execPath();
  } catch {
    return undefined; // needs --allow-read; then the plain name is printed
  }
}
