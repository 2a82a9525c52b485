// Over 400 lines: a probe target for every provider family (cascaded and realtime) and the probe.
/**
 * Provider probes: one cheap HTTP request per configured provider, so an operator learns that
 * whisper.cpp or Ollama is not running before the first caller meets silence, and that a cloud
 * key is rejected before the first call fails on it.
 *
 * A probe asks a read-only endpoint (`GET /models` of OpenAI-style APIs, `/health` of a remote
 * brain, the root page of whisper.cpp and Piper) with a short deadline. Keys come from the same
 * `<PROVIDER>_API_KEY` variables the calls use and go only into the request's auth header: a
 * result names the variable, never its value. Endpoints are written here rather than imported
 * from the provider modules, so probing loads no provider client.
 * @module
 */

import { networkCause } from "../providers/http.ts";
import { credentialEnv, type ProviderKind, providersOfKind } from "../providers/registry.ts";
import { type AzureProbe, azureProbe } from "../providers/azure/defaults.ts";
import { errorMessage } from "../core/errors.ts";
import { serviceProviders } from "../providers/service_registry.ts";
import type { AgentServerConfig, ProviderConfig } from "./config_types.ts";
import {
  bearer,
  FAMILY_AUTH,
  FAMILY_ENDPOINT,
  HOST_REACHABILITY_ONLY,
  LISTS_MODELS,
  REACHABLE_ONLY,
  SAME_KEY_AS,
  START_HINTS,
} from "./probe_families.ts";

export { START_HINTS } from "./probe_families.ts";

/** What a probe's target does in a call. */
export type ProbeService = ProviderKind | "brain" | "mcp";

/** One thing to probe. */
export interface ProbeTarget {
  /** The service it plays. */
  service: ProbeService;
  /** Provider name as configured (`remote` for a remote brain). */
  provider: string;
  /** The endpoint, for people: origin and path, without credentials or query. */
  url: string;
  /** Runs on the operator's side (local server, remote brain, loopback URL): probed at start. */
  local: boolean;
  /** Runs inside the server process: nothing to reach. */
  inProcess?: boolean;
  /** Declared but not implemented by Flowcat yet. */
  notWired?: boolean;
  /** Why the config cannot place the provider (an Azure region or resource missing). */
  misconfigured?: string;
  /** The request to send; absent when in process or not wired. */
  request?: { url: string; headers: (key: string | undefined) => Record<string, string> };
  /** The key variable, when the provider reads one. */
  keyEnv?: string;
  /** True when the provider cannot work without its key. */
  keyRequired: boolean;
  /**
   * Variables a request-signing cloud API needs (AWS): checked to be set; the API itself is
   * not called, since a probe would have to sign its request.
   */
  credentialEnv?: string[];
  /** `ok`: only 2xx passes; `reachable`: any answer but 401/403 and 5xx passes. */
  expect: "ok" | "reachable";
  /** Model the config asks for, checked against the server's list when it lists models. */
  model?: string;
  /** What to run when the endpoint does not answer. */
  start?: string;
}

/** A probe's outcome. */
export interface ProbeResult {
  /** What was probed. */
  target: ProbeTarget;
  /** Whether it passed. */
  ok: boolean;
  /** Why (a few words: `HTTP 200`, `connection refused`, `key rejected (HTTP 401)`). */
  reason: string;
  /** Round trip in ms, when a request was sent and answered or failed. */
  latencyMs?: number;
  /** HTTP status, when one came. */
  status?: number;
  /**
   * What kind of failure: `unreachable` (no answer), `model` (the model is not loaded),
   * `key` (missing or rejected), `answer` (an unexpected status), `config` (not wired).
   */
  problem?: "unreachable" | "model" | "key" | "answer" | "config";
}

/** `url` as shown to people: no user info, no query (either may hold a secret). */
export function shownUrl(url: string): string {
  try {
    const u = new URL(url);
    return `${u.protocol}//${u.host}${u.pathname === "/" ? "" : u.pathname}`;
  } catch {
    return "(invalid URL)";
  }
}

/** `ws:`/`wss:` as `http:`/`https:`; the origin of `url` for a reachability probe. */
function httpOrigin(url: string): string {
  const u = new URL(url);
  const scheme = u.protocol === "wss:" ? "https:" : u.protocol === "ws:" ? "http:" : u.protocol;
  return `${scheme}//${u.host}/`;
}

function isLoopbackUrl(url: string): boolean {
  try {
    const h = new URL(url).hostname.replace(/^\[|\]$/g, "");
    return h === "localhost" || h === "::1" || /^127\./.test(h);
  } catch {
    return false;
  }
}

function join(base: string, path: string): string {
  return `${base.replace(/\/+$/, "")}${path}`;
}

function serviceTarget(kind: "stt" | "llm" | "tts", p: ProviderConfig): ProbeTarget {
  const info = serviceProviders(kind)[p.name];
  const keyEnv = credentialEnv(kind, p.name, p.options);
  const base: ProbeTarget = {
    service: kind,
    provider: p.name,
    url: "",
    local: info?.needsKey === false,
    keyEnv,
    keyRequired: info?.needsKey === true,
    expect: "ok",
  };
  if (info === undefined) return { ...base, notWired: true };
  if (!info.wired) return { ...base, notWired: true };
  const start = START_HINTS[`${kind}/${p.name}`];
  if (start !== undefined) base.start = start;
  if (info.family === "espeak") return { ...base, url: "(in process)", inProcess: true };
  // gRPC over plaintext HTTP/2 is not something fetch speaks: Riva is not probed.
  if (info.family === "riva") return { ...base, url: shownUrl(p.url ?? info.baseUrl!) };
  if (info.keyIsFile) {
    // The credential is a key file exchanged for OAuth tokens, not a header: only whether the
    // API's host answers at all is told (Google's front end answers 404 at the root).
    const url = httpOrigin(p.url ?? info.baseUrl!);
    return {
      ...base,
      url: shownUrl(url),
      expect: "reachable",
      request: { url, headers: () => ({}) },
    };
  }
  if (info.env !== undefined) {
    const { keyEnv: _, ...rest } = base;
    return {
      ...rest,
      url: p.url === undefined ? "(SigV4-signed API)" : shownUrl(p.url),
      credentialEnv: info.env.filter((v) => v.required).map((v) => v.name),
    };
  }
  if (info.family === "azure" || info.family === "azure-openai") {
    const service = info.family === "azure-openai"
      ? "openai"
      : kind === "stt"
      ? "speech-stt"
      : "speech-tts";
    return azureTarget(base, () => azureProbe(p.name, service, p));
  }
  // A vendor's speech-to-text family is keyed and probed like its text-to-speech one.
  const family = SAME_KEY_AS[info.family] ?? info.family;
  const auth = FAMILY_AUTH[family] ?? bearer;
  const root = p.url ?? info.baseUrl;
  let url: string;
  if (FAMILY_ENDPOINT[family] !== undefined) {
    url = p.url === undefined ? FAMILY_ENDPOINT[family] : httpOrigin(p.url);
    if (p.url !== undefined || REACHABLE_ONLY.has(family)) base.expect = "reachable";
  } else if (HOST_REACHABILITY_ONLY.has(info.family) && (p.url ?? info.hosts[0])) {
    // No keyed HTTP endpoint on the streaming host: only whether it answers is told.
    url = httpOrigin(p.url ?? `https://${info.hosts[0].replace(/:443$/, "")}`);
    base.expect = "reachable";
    return { ...base, url: shownUrl(url), request: { url, headers: () => ({}) } };
  } else if (root === undefined) {
    return { ...base, notWired: true };
  } else if (info.family === "anthropic") {
    url = join(root, "/v1/models");
  } else if (info.family === "gemini") {
    url = join(root, "/v1beta/models");
  } else if (info.family === "piper" || info.options?.dialect === "whisper.cpp") {
    // Neither has a listing endpoint: any answer means the server is up.
    url = join(root, "/");
    base.expect = "reachable";
  } else {
    url = join(root, "/models");
  }
  base.local ||= isLoopbackUrl(url);
  const model = p.model ?? info.defaultModel;
  if (model !== undefined && LISTS_MODELS[`${kind}/${p.name}`] !== undefined) base.model = model;
  return { ...base, url: shownUrl(url), request: { url, headers: auth } };
}

/** Realtime providers checked on their own API (the key's account or model list), not OpenAI's. */
const REALTIME_PROBES: Readonly<
  Record<string, { url: string; headers: (key: string | undefined) => Record<string, string> }>
> = Object.freeze({
  xai: { url: "https://api.x.ai/v1/models", headers: bearer },
  ultravox: {
    url: "https://api.ultravox.ai/api/accounts/me",
    headers: (key: string | undefined): Record<string, string> => key ? { "x-api-key": key } : {},
  },
});

function azureTarget(base: ProbeTarget, make: () => AzureProbe): ProbeTarget {
  let probe: AzureProbe;
  try {
    probe = make();
  } catch (err) {
    return { ...base, url: "(not placed)", misconfigured: errorMessage(err) };
  }
  const { url, headers, expect } = probe;
  return { ...base, url: shownUrl(url), expect, request: { url, headers } };
}

function realtimeTarget(p: ProviderConfig): ProbeTarget {
  const info = providersOfKind("realtime")[p.name];
  const base: ProbeTarget = {
    service: "realtime",
    provider: p.name,
    url: "",
    local: info?.needsKey === false,
    keyRequired: info?.needsKey === true,
    expect: "ok",
  };
  if (info === undefined) return { ...base, notWired: true };
  if (!info.needsKey) return { ...base, url: "(in process)", inProcess: true };
  if (info.env !== undefined) {
    // Cloud credentials (AWS): set or not is told; a session is needed to try them.
    return {
      ...base,
      url: p.url === undefined ? "(SigV4-signed API)" : shownUrl(p.url),
      credentialEnv: info.env.filter((v) => v.required).map((v) => v.name),
    };
  }
  base.keyEnv = credentialEnv("realtime", p.name, p.options);
  if (p.name === "azure") return azureTarget(base, () => azureProbe(p.name, "openai", p));
  const own = REALTIME_PROBES[p.name];
  if (own !== undefined && p.url === undefined) {
    return { ...base, url: own.url, request: { url: own.url, headers: own.headers } };
  }
  const gemini = p.name === "gemini";
  let url = gemini
    ? "https://generativelanguage.googleapis.com/v1beta/models"
    : "https://api.openai.com/v1/models";
  if (p.url !== undefined) {
    // A proxy or a compatible server: only its reachability can be told without a session.
    url = httpOrigin(p.url);
    base.expect = "reachable";
    base.local = isLoopbackUrl(url);
  }
  const header = p.name === "openai-compatible" ? p.options.auth_header : undefined;
  const auth = gemini ? FAMILY_AUTH.gemini : typeof header === "string"
    // The endpoint's own key header, as the client sends it.
    ? (key: string | undefined): Record<string, string> => (key ? { [header]: key } : {})
    : bearer;
  return { ...base, url: shownUrl(url), request: { url, headers: auth } };
}

/**
 * Every provider `config` uses, in pipeline order, and the remote brain.
 *
 * @example
 * ```ts
 * declare const config: Parameters<typeof probeTargets>[0];
 * probeTargets(config).filter((t) => t.local).map((t) => t.url);
 * // ["http://127.0.0.1:8080", "http://127.0.0.1:11434/v1/models"]
 * ```
 */
export function probeTargets(config: AgentServerConfig): ProbeTarget[] {
  const out: ProbeTarget[] = [];
  const p = config.providers;
  if (p.realtime !== undefined) out.push(realtimeTarget(p.realtime));
  for (const kind of ["stt", "llm", "tts"] as const) {
    const c = p[kind];
    if (c !== undefined) out.push(serviceTarget(kind, c));
  }
  if (config.agent.kind === "remote") {
    const url = join(config.agent.url, "/health");
    const headers = (token: string | undefined): Record<string, string> =>
      token ? { authorization: `Bearer ${token}` } : {};
    out.push({
      service: "brain",
      provider: "remote",
      url: shownUrl(url),
      local: true,
      request: { url, headers },
      ...(config.agent.tokenEnv !== undefined ? { keyEnv: config.agent.tokenEnv } : {}),
      keyRequired: config.agent.tokenEnv !== undefined,
      expect: "ok",
      start: START_HINTS["brain/remote"],
    });
  }
  return out;
}

/** Options of {@link probe}. */
export interface ProbeOptions {
  /** Reads the key variables. */
  env: (name: string) => string | undefined;
  /** Deadline per probe, ms (default 2000). */
  timeoutMs?: number;
  /** The fetch to use (tests; default the global one). */
  fetch?: typeof fetch;
}

/** Whether `model` is among the ids a `GET /models` answer lists (`llama3.2` = `llama3.2:latest`). */
export function listsModel(body: unknown, model: string): boolean | undefined {
  const data = (body as { data?: unknown })?.data;
  if (!Array.isArray(data)) return undefined;
  const ids = data.map((d) => (d as { id?: unknown })?.id).filter((i) => typeof i === "string");
  return ids.some((id) => id === model || id === `${model}:latest`);
}

/** Probe one target. Never throws; never puts a key in the result. */
export async function probe(t: ProbeTarget, opts: ProbeOptions): Promise<ProbeResult> {
  if (t.notWired) {
    return { target: t, ok: false, reason: "not wired in Flowcat yet", problem: "config" };
  }
  if (t.credentialEnv !== undefined) {
    const missing = t.credentialEnv.filter((n) => {
      try {
        return !opts.env(n);
      } catch {
        return true;
      }
    });
    if (missing.length > 0) {
      return { target: t, ok: false, reason: `${missing.join(", ")} not set`, problem: "key" };
    }
    return { target: t, ok: true, reason: "credentials set (signed API, not called)" };
  }
  if (t.misconfigured !== undefined) {
    return { target: t, ok: false, reason: t.misconfigured, problem: "config" };
  }
  if (t.inProcess || t.request === undefined) {
    return { target: t, ok: true, reason: t.inProcess ? "in process" : "not probed (gRPC)" };
  }
  let key: string | undefined;
  if (t.keyEnv !== undefined) {
    try {
      key = opts.env(t.keyEnv) || undefined;
    } catch {
      key = undefined;
    }
  }
  if (t.keyRequired && key === undefined) {
    return { target: t, ok: false, reason: `${t.keyEnv} is not set`, problem: "key" };
  }
  const timeoutMs = opts.timeoutMs ?? 2000;
  const began = performance.now();
  const ms = () => Math.round(performance.now() - began);
  let res: Response;
  try {
    res = await (opts.fetch ?? fetch)(t.request.url, {
      headers: t.request.headers(key),
      signal: AbortSignal.timeout(timeoutMs),
    });
  } catch (err) {
    const timedOut = err instanceof DOMException && err.name === "TimeoutError";
    const cause = timedOut ? `no answer within ${timeoutMs} ms` : networkCause(err);
    return { target: t, ok: false, reason: cause, latencyMs: ms(), problem: "unreachable" };
  }
  const latencyMs = ms();
  const status = res.status;
  const fail = (reason: string, problem: ProbeResult["problem"] = "answer"): ProbeResult => ({
    target: t,
    ok: false,
    reason,
    latencyMs,
    status,
    problem,
  });
  if (status === 401 || status === 403) {
    await res.body?.cancel();
    return fail(
      key === undefined
        ? `HTTP ${status}: it wants a key (set ${t.keyEnv ?? "one"})`
        : `key rejected (HTTP ${status}; check ${t.keyEnv})`,
      "key",
    );
  }
  if (status >= 500 || (t.expect === "ok" && (status < 200 || status > 299))) {
    await res.body?.cancel();
    return fail(`HTTP ${status}`);
  }
  if (t.model !== undefined && status >= 200 && status <= 299) {
    const listed = listsModel(await res.json().catch(() => undefined), t.model);
    if (listed === false) {
      const load = LISTS_MODELS[`${t.service}/${t.provider}`]!(t.model);
      return fail(`model ${t.model} is not loaded (${load})`, "model");
    }
    return {
      target: t,
      ok: true,
      reason: `HTTP ${status}, model ${t.model} loaded`,
      latencyMs,
      status,
    };
  }
  await res.body?.cancel();
  return { target: t, ok: true, reason: `HTTP ${status}`, latencyMs, status };
}

/** Probe every target at once. */
export function probeAll(
  targets: readonly ProbeTarget[],
  opts: ProbeOptions,
): Promise<ProbeResult[]> {
  return Promise.all(targets.map((t) => probe(t, opts)));
}
