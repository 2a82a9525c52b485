/**
 * The parent's handle on a capacity server child (bench/capacity_server.ts): writes its config,
 * spawns `deno` by name with scoped flags, reads its port from stdout, and talks to its stdin
 * control channel (stats, CPU time and RSS samples). CPU time comes from `process.cpuUsage()`
 * (getrusage) rather than `/proc/<pid>/stat`, which Deno only opens under `--allow-all`.
 * @module
 */

import { fileURLToPath } from "node:url";
import process from "node:process";
import type { LatencySummary } from "./capacity_stats.ts";

/** The Twilio auth token the child verifies answer-webhook signatures with (bench only). */
export const BENCH_TWILIO_TOKEN = "capacity-bench-twilio-token";
/** The public origin the child's answer documents name (never dialled: the bench rewrites it). */
export const BENCH_PUBLIC_URL = "https://capacity.flowcat.invalid";

/**
 * The echo model's `rates` in the bench: `leg` (default) runs the call at Twilio's 8 kHz with no
 * resampler; `16000/24000` takes 16 kHz and speaks 24 kHz as a hosted model does (the 8 -> 16
 * kHz, 16 -> 24 kHz and 24 -> 8 kHz chain).
 */
export type BenchEchoRates = "leg" | "16000/24000";

/** The `--echo-rates` flag's value (default `leg`); an error names the two it takes. */
export function benchEchoRates(flag: string | undefined): BenchEchoRates {
  if (flag === undefined || flag === "leg" || flag === "16000/24000") return flag ?? "leg";
  throw new Error(`--echo-rates must be leg or 16000/24000 (got ${flag})`);
}

/** `--echo-cancel`: the echo canceller on every call, or off (default: off, stated in the config). */
export type BenchEchoCancel = "on" | "off";

/** The `--echo-cancel` flag's value (default `off`); an error names the two it takes. */
export function benchEchoCancel(flag: string | undefined): BenchEchoCancel {
  if (flag === undefined || flag === "on" || flag === "off") return flag ?? "off";
  throw new Error(`--echo-cancel must be on or off (got ${flag})`);
}

/**
 * The agent config the child serves: the echo model in frame mode at `echoRates`, Twilio, no
 * recording, the echo canceller as `echoCancel` says (explicit, so the figures do not move with
 * the default by transport).
 */
export function benchAgentConfig(
  maxCalls: number,
  echoRates: BenchEchoRates = "leg",
  echoCancel: BenchEchoCancel = "off",
): Record<string, unknown> {
  return {
    version: 1,
    agent: {
      // One conversation node, as examples/echo_graph.yaml; the echo model never takes a turn.
      graph: {
        version: 1,
        start: "chat",
        nodes: [
          {
            id: "chat",
            prompt: "Echo the caller.",
            transitions: [{ name: "goodbye", description: "Caller is done.", target: "bye" }],
          },
          { id: "bye", terminal: true, say: "Goodbye." },
        ],
      },
    },
    pipeline: "s2s",
    providers: {
      realtime: { name: "echo", options: { mode: "frame", tts: "none", rates: echoRates } },
    },
    telephony: { public_url: BENCH_PUBLIC_URL, carriers: ["twilio"] },
    recording: { enabled: false },
    audio: { echo_cancel: echoCancel },
    limits: { max_calls: maxCalls, max_call_seconds: 3600, drain_seconds: 1 },
    playground: { enabled: false },
  };
}

/** What the child reports on `stats`. */
export interface ChildStats {
  heapUsed: number;
  rss: number;
  external: number;
  liveTimers: number;
  activeCalls: number;
  gc: boolean;
}

/** CPU time (seconds, user + system) and resident set size (bytes) of a process. */
export interface ProcSample {
  cpuSeconds: number;
  rssBytes: number;
}

/** Options of {@link spawnServer}. */
export interface SpawnOptions {
  configPath: string;
  /** 0 for an ephemeral port. */
  port?: number;
  reusePort?: boolean;
  /** Worker threads sharing the port inside the child (default 1: the main thread serves). */
  threads?: number;
  /** Directory for a `--cpu-prof` profile, written when the child exits. */
  cpuProfDir?: string;
  /** Serve media sockets with the bare echo of bench/capacity_floor.ts (one thread only). */
  floor?: boolean;
  /** Install the server-side latency split (bench/capacity_trace.ts). */
  trace?: boolean;
  /** Frames per call the split skips (default 50). */
  traceWarmupFrames?: number;
  /** A directory the child may write to (heap snapshots); none by default. */
  writeDir?: string;
  /**
   * Run the server of another checkout of the project (its `bench/capacity_server.ts`, its
   * deno.json; `configPath` is read there): the A/B baseline of `--baseline`.
   */
  cwd?: string;
  /**
   * Trace calls: the child runs with `OTEL_DENO=true` and exports over OTLP (http/protobuf) to
   * this endpoint, as an operator's server would to a collector.
   */
  otelEndpoint?: string;
}

/** The server-side latency split since the last call (ms). */
export interface ChildTrace {
  /** Carrier message in -> the reply audio it caused sent (the server's whole share). */
  server_ms: LatencySummary;
  /** Carrier message in -> the reply at the output transport. */
  pipeline_ms: LatencySummary;
  /** Output transport -> carrier send (the playout clock's wait). */
  pacing_ms: LatencySummary;
  /** Replies that could not be matched to their message (0 when the matching holds). */
  unmatched: number;
}

/** A running server child. */
export interface ServerChild {
  pid: number;
  port: number;
  /** Forced GC, then heap / RSS / live timers / active calls. */
  stats(): Promise<ChildStats>;
  /** Server-side latency split since the last call (empty without `trace`). */
  trace(): Promise<ChildTrace>;
  /** Stop counting timers (before load: the wrap costs a closure per timer). */
  untrack(): Promise<void>;
  /** The child's CPU time and RSS (no GC). */
  sample(): Promise<ProcSample>;
  /** Forced GC, then a V8 heap snapshot at `path` (inside the `writeDir` it was given). */
  heap(path: string): Promise<void>;
  /** The last lines the child wrote on stderr. */
  stderrTail(): string;
  /** Ask it to exit (profile written), kill it after a grace period. */
  stop(): Promise<void>;
}

/** CPU seconds (user + system) and RSS of this process. */
export function selfSample(): ProcSample {
  const cpu = process.cpuUsage();
  return { cpuSeconds: (cpu.user + cpu.system) / 1e6, rssBytes: Deno.memoryUsage().rss };
}

/** Write the child's config (JSON) under `dir`; returns its path. */
export async function writeBenchConfig(
  dir: string,
  maxCalls: number,
  echoRates: BenchEchoRates = "leg",
  echoCancel: BenchEchoCancel = "off",
): Promise<string> {
  await Deno.mkdir(dir, { recursive: true });
  const path = `${dir}/agent.json`;
  const config = benchAgentConfig(maxCalls, echoRates, echoCancel);
  await Deno.writeTextFile(path, JSON.stringify(config, null, 2) + "\n");
  return path;
}

/**
 * True when this code runs from the offline bench pack (tools/bench_pack.ts: `deno bundle`
 * output, `.js`), where the server child is `capacity_server.js` beside it and there is no
 * project config, lock file or npm to consult.
 */
const BUNDLED = import.meta.url.endsWith(".js");

/** The server child's script: the source from the project root, or the pack's bundle. */
function serverScript(): string {
  return BUNDLED
    ? fileURLToPath(new URL("./capacity_server.js", import.meta.url))
    : "bench/capacity_server.ts";
}

/** Spawn a server child and wait until it listens. */
export async function spawnServer(opts: SpawnOptions): Promise<ServerChild> {
  const args = [
    "run",
    // No deno.json in the pack: its `unstable: ["net"]` (SO_REUSEPORT) becomes a flag.
    ...(BUNDLED ? ["--no-config", "--no-lock", "--no-remote", "--no-npm", "--unstable-net"] : []),
    "--v8-flags=--expose-gc",
    "--allow-net=127.0.0.1",
    "--allow-read=.",
    ...(opts.writeDir ? [`--allow-write=${opts.writeDir}`] : []),
    opts.otelEndpoint ? "--allow-env=TWILIO_AUTH_TOKEN,OTEL_DENO" : "--allow-env=TWILIO_AUTH_TOKEN",
    "--ignore-env", // npm `debug` (via werift) lists the environment at import
    ...(opts.cpuProfDir ? ["--cpu-prof", `--cpu-prof-dir=${opts.cpuProfDir}`] : []),
    serverScript(),
    "--config",
    opts.configPath,
    "--port",
    String(opts.port ?? 0),
    ...(opts.reusePort ? ["--reuse-port"] : []),
    ...(opts.threads && opts.threads > 1 ? ["--threads", String(opts.threads)] : []),
    ...(opts.trace ? ["--trace", `--trace-warmup=${opts.traceWarmupFrames ?? 50}`] : []),
    ...(opts.floor ? ["--floor"] : []),
  ];
  const child = new Deno.Command("deno", {
    args,
    ...(opts.cwd !== undefined ? { cwd: opts.cwd } : {}),
    env: {
      TWILIO_AUTH_TOKEN: BENCH_TWILIO_TOKEN,
      NO_COLOR: "1",
      ...(opts.otelEndpoint
        ? {
          OTEL_DENO: "true",
          OTEL_EXPORTER_OTLP_ENDPOINT: opts.otelEndpoint,
          OTEL_EXPORTER_OTLP_PROTOCOL: "http/protobuf",
          OTEL_SERVICE_NAME: "flowcat-capacity",
        }
        : {}),
    },
    stdin: "piped",
    stdout: "piped",
    stderr: "piped",
  }).spawn();
  const stdin = child.stdin.getWriter();
  const enc = new TextEncoder();
  const replies: string[] = [];
  let waiters: (() => void)[] = [];
  const wake = () => {
    const ws = waiters;
    waiters = [];
    for (const w of ws) w();
  };
  let stderr = "";
  let exited = false;
  const lineReader = (async () => {
    let buf = "";
    for await (const chunk of child.stdout.pipeThrough(new TextDecoderStream())) {
      buf += chunk;
      for (let i = buf.indexOf("\n"); i >= 0; i = buf.indexOf("\n")) {
        replies.push(buf.slice(0, i));
        buf = buf.slice(i + 1);
      }
      wake();
    }
    exited = true;
    wake();
  })();
  const errReader = (async () => {
    for await (const chunk of child.stderr.pipeThrough(new TextDecoderStream())) {
      stderr = (stderr + chunk).slice(-4000);
    }
  })();
  const nextLine = async (match: (l: string) => boolean, what: string): Promise<string> => {
    for (;;) {
      const i = replies.findIndex(match);
      if (i >= 0) return replies.splice(i, 1)[0];
      if (exited) throw new Error(`capacity server exited before ${what}: ${stderr.slice(-800)}`);
      await new Promise<void>((r) => waiters.push(r));
    }
  };
  const send = (cmd: string) => stdin.write(enc.encode(cmd + "\n"));
  const first = await nextLine((l) => / on http:\/\/127\.0\.0\.1:\d+\//.test(l), "listening");
  const port = Number(/:(\d+)\//.exec(first)![1]);
  let stopped = false;
  return {
    pid: child.pid,
    port,
    async stats() {
      await send("stats");
      return JSON.parse(await nextLine((l) => l.startsWith('{"stats"'), "stats")).stats;
    },
    async trace() {
      await send("trace");
      return JSON.parse(await nextLine((l) => l.startsWith('{"trace"'), "trace")).trace;
    },
    async untrack() {
      await send("untrack");
      await nextLine((l) => l.startsWith('{"untracked"'), "untrack");
    },
    async sample() {
      await send("sample");
      return JSON.parse(await nextLine((l) => l.startsWith('{"sample"'), "sample")).sample;
    },
    async heap(path: string) {
      await send(`heap ${path}`);
      const reply = JSON.parse(await nextLine((l) => l.startsWith('{"heap'), "heap snapshot"));
      if (reply.heap === undefined) throw new Error(`heap snapshot failed: ${reply.heapError}`);
    },
    stderrTail: () => stderr,
    async stop() {
      if (stopped) return;
      stopped = true;
      await send("exit").catch(() => {});
      await stdin.close().catch(() => {});
      const timer = setTimeout(() => {
        try {
          child.kill("SIGKILL");
        } catch { /* already gone */ }
      }, 10_000);
      await child.status;
      clearTimeout(timer);
      await lineReader;
      await errReader;
    },
  };
}
