/**
 * Every call leaves a `call started` and a `call ended` line: carrier calls through the real
 * answer webhook and media WebSocket of an in-process server, ended each way the server knows
 * (caller hung up, agent ended, transferred, model error, limit, drain), and the same lines as
 * JSON from `server/main.ts` run under its printed permissions with FLOWCAT_LOG_FORMAT=json.
 */
import assert from "node:assert/strict";
import { type LogRecord, memoryLogger } from "../core/log.ts";
import { type AgentServer, createAgentServer } from "../server/app.ts";
import { droppedMedia } from "../server/call_log.ts";
import { parseConfigText } from "../server/config.ts";
import type { MediaTransport, RealtimeEvent, RealtimeLlm } from "../core/seams.ts";
import { RealtimeEventQueue } from "../providers/realtime/_shared.ts";
import { twilioSignature } from "../telephony/security.ts";
import { socketFromWebSocket } from "../telephony/ws_transport.ts";
import { permissionFlags } from "../server/permissions.ts";
import { sleep, until } from "./_core_helpers.ts";
import { dialTwilio, speakTurn } from "./_twilio_client.ts";

const DIR = ".tmp/call_log_test";
const SECRET = "twilio-secret";

function config(extra: Record<string, unknown> = {}) {
  return {
    agent: {
      graph: {
        version: 1,
        start: "hello",
        nodes: [
          {
            id: "hello",
            prompt: "Say hi.",
            transitions: [{ name: "transfer", description: "Hand over.", target: "handoff" }],
          },
          { id: "handoff", prompt: "Bye.", terminal: true, disposition: "transferred" },
        ],
      },
    },
    pipeline: "s2s",
    providers: { realtime: { name: "echo", options: { tts: "none", greeting: "hi" } } },
    telephony: { public_url: "https://agent.example.com", carriers: ["twilio"] },
    recording: { enabled: true, dir: DIR },
    ...extra,
  };
}

interface Running {
  app: AgentServer;
  base: string;
  log: ReturnType<typeof memoryLogger>;
  close(): Promise<void>;
}

async function start(
  extra: Record<string, unknown> = {},
  env: Record<string, string> = {},
): Promise<Running> {
  const r = await parseConfigText(JSON.stringify(config(extra)), "json", ".");
  if (!r.ok) throw new Error(JSON.stringify(r.problems));
  const log = memoryLogger();
  const vars: Record<string, string> = { TWILIO_AUTH_TOKEN: SECRET, ...env };
  const app = await createAgentServer({ config: r.config, env: (n) => vars[n], logger: log });
  const server = Deno.serve({ hostname: "127.0.0.1", port: 0, onListen: () => {} }, app.handler);
  return {
    app,
    log,
    base: `http://127.0.0.1:${server.addr.port}`,
    close: async () => {
      await app.calls.drain(500);
      await server.shutdown();
      await app.close();
    },
  };
}

/** Dial in as Twilio through the signed answer webhook and its media socket. */
function dial(base: string) {
  return dialTwilio(base, { secret: SECRET, publicUrl: "https://agent.example.com" });
}

function line(log: { records: LogRecord[] }, message: string, runId: number) {
  const found = log.records.filter((r) => r.message === message && r.fields?.runId === runId);
  assert.equal(found.length, 1, `one "${message}" line for run ${runId}: ${JSON.stringify(log)}`);
  return found[0];
}

async function ended(s: Running, runId: number) {
  await until(
    () => s.log.records.some((r) => r.message === "call ended" && r.fields?.runId === runId),
    8000,
    `call ${runId} ended`,
  );
  return line(s.log, "call ended", runId);
}

Deno.test("call log: a carrier call's start and end lines carry who, how long, why, turns and files", async () => {
  await Deno.remove(DIR, { recursive: true }).catch(() => {});
  const s = await start();
  try {
    const { call, runId } = await dial(s.base);
    await until(() => call.media().length > 5, 5000, "greeting");
    const started = line(s.log, "call started", runId);
    assert.equal(started.level, "info");
    assert.deepEqual(started.fields, {
      runId,
      callId: "CA1",
      transport: "twilio",
      direction: "inbound",
      pipeline: "s2s",
      models: "echo",
    });
    const greeted = call.media().length;
    await speakTurn(call);
    await until(() => call.media().length > greeted + 10, 5000, "the echo");
    await call.hangup();
    const end = await ended(s, runId);
    await call.close();
    assert.equal(end.level, "info");
    const f = end.fields!;
    assert.equal(f.transport, "twilio");
    assert.equal(f.callId, "CA1");
    assert.equal(f.reason, "caller_hung_up");
    assert.equal(f.detail, "end: caller hung up");
    assert.equal(f.turns, 1);
    assert.equal(typeof f.meanTurnLatencySeconds, "number");
    assert.ok((f.meanTurnLatencySeconds as number) < 2, String(f.meanTurnLatencySeconds));
    assert.ok((f.durationSeconds as number) > 0.5, String(f.durationSeconds));
    assert.equal(f.recording, `${DIR}/run-${runId}-recording.wav`);
    assert.equal(f.transcript, `${DIR}/run-${runId}-transcript.json`);
    assert.ok((await Deno.stat(f.recording as string)).size > 44, "the logged path is the file");
    assert.equal(f.failures, undefined, "nothing failed");
    assert.deepEqual(
      s.log.records.filter((r) => r.level === "warn" || r.level === "error"),
      [],
      "nothing else to say",
    );
  } finally {
    await s.close();
  }
});

Deno.test("call log: agent ended, transferred, limit and drain each end with their reason", async () => {
  const s = await start();
  const slow = await start({ limits: { max_call_seconds: 1 } });
  try {
    // `#` calls end_call (the agent hangs up); `1` takes the transition to a terminal node
    // whose disposition is "transferred".
    const a = await dial(s.base);
    await until(() => a.call.media().length > 0, 5000, "greeting");
    await a.call.dtmf("#");
    const b = await dial(s.base);
    await until(() => b.call.media().length > 0, 5000, "greeting");
    await b.call.dtmf("1");
    const c = await dial(slow.base);
    const d = await dial(s.base);
    await until(() => s.app.calls.active >= 1 && d.call.media().length > 0, 5000, "d running");
    const ea = await ended(s, a.runId);
    const eb = await ended(s, b.runId);
    assert.equal(ea.fields!.reason, "agent_ended", JSON.stringify(ea));
    assert.equal(ea.fields!.detail, "end: brain: end");
    assert.equal(eb.fields!.reason, "transferred", JSON.stringify(eb));
    assert.equal(eb.fields!.disposition, "transferred");
    const ec = await ended(slow, c.runId);
    assert.equal(ec.fields!.reason, "limit");
    assert.equal(ec.fields!.detail, "cancel: call too long");
    assert.ok((ec.fields!.durationSeconds as number) >= 0.9);
    await s.app.calls.drain(50);
    const ed = await ended(s, d.runId);
    assert.equal(ed.fields!.reason, "drain");
    for (const x of [a, b, c, d]) await x.call.close();
    const text = s.app.metrics.registry.expose();
    for (const reason of ["agent_ended", "transferred", "drain"]) {
      assert.ok(
        text.includes(`flowcat_calls_ended_total{transport="twilio",reason="${reason}"} 1`),
        `${reason} counted:\n${text}`,
      );
    }
    assert.ok(text.includes("flowcat_active_calls 0"), text);
  } finally {
    await s.close();
    await slow.close();
  }
});

Deno.test("call log: a call nobody speaks on past limits.idle_timeout_seconds ends with timeout", async () => {
  const s = await start({ limits: { idle_timeout_seconds: 1 } });
  try {
    const { call, runId } = await dial(s.base);
    await until(() => call.media().length > 0, 5000, "greeting");
    // The greeting plays, then neither side says anything: the socket stays open, silent.
    const greetedAt = performance.now();
    const end = await ended(s, runId);
    const waited = (performance.now() - greetedAt) / 1000;
    assert.equal(end.fields!.reason, "timeout", JSON.stringify(end));
    assert.equal(end.fields!.detail, "cancel: idle timeout");
    assert.ok(waited >= 0.8, `ended ${waited} s after the greeting began: not idle for 1 s`);
    assert.ok(waited < 6, `ended ${waited} s after the greeting: the configured 1 s was not used`);
    await call.close();
    const text = s.app.metrics.registry.expose();
    assert.ok(
      text.includes('flowcat_calls_ended_total{transport="twilio",reason="timeout"} 1'),
      text,
    );
  } finally {
    await s.close();
  }
});

Deno.test("call log: a realtime model refused at connect is one failure line and a model_error end", async () => {
  // A Gemini Live endpoint that answers the WebSocket upgrade with 429.
  const refuser = Deno.serve(
    { hostname: "127.0.0.1", port: 0, onListen: () => {} },
    () => new Response("quota exceeded", { status: 429 }),
  );
  const s = await start({
    providers: {
      realtime: { name: "gemini", url: `ws://127.0.0.1:${refuser.addr.port}/live` },
    },
  }, { GEMINI_API_KEY: "test-key-not-secret" });
  try {
    const { call, runId } = await dial(s.base);
    const end = await ended(s, runId);
    await call.close();
    assert.equal(end.fields!.reason, "model_error", JSON.stringify(end));
    assert.deepEqual(end.fields!.failures, { "realtime/gemini/rate_limit": 1 });
    const said = s.log.records.filter((r) => r.level === "warn" || r.level === "error");
    assert.deepEqual(said, [{
      level: "error",
      message: "provider failed",
      fields: {
        runId,
        service: "realtime",
        provider: "gemini",
        kind: "rate_limit",
        status: 429,
        error: "realtime model failed to connect: gemini: could not connect: HTTP 429",
        caller: "the call ended",
      },
    }], "said once, with the status, and nothing else");
    assert.ok(!JSON.stringify(s.log.records).includes("test-key-not-secret"), "no key logged");
  } finally {
    await s.close();
    await refuser.shutdown();
  }
});

/** A realtime model that greets, then closes its session with `code` and `reason`. */
class ClosingModel implements RealtimeLlm {
  readonly #q = new RealtimeEventQueue();
  connect(): Promise<void> {
    this.#q.push({
      type: "audio_out",
      audio: { pcm: new Int16Array(2400), sampleRate: 24000, numChannels: 1 },
    });
    setTimeout(() => this.#q.close("socket closed (1011: internal error)"), 300);
    return Promise.resolve();
  }
  sendAudio(): void {}
  updateSystem(): Promise<void> {
    return Promise.resolve();
  }
  sendToolResult(): Promise<void> {
    return Promise.resolve();
  }
  nextEvent(): Promise<RealtimeEvent | undefined> {
    return this.#q.next();
  }
  listen(deliver: (ev: RealtimeEvent | undefined) => void): void {
    this.#q.listen(deliver);
  }
  close(): Promise<void> {
    this.#q.close();
    return Promise.resolve();
  }
}

Deno.test("call log: a model that closes mid-call is one failure line with its close code", async () => {
  const r = await parseConfigText(
    JSON.stringify(config({ recording: { enabled: false } })),
    "json",
    ".",
  );
  if (!r.ok) throw new Error(JSON.stringify(r.problems));
  const log = memoryLogger();
  const app = await createAgentServer({
    config: r.config,
    env: (n) => (n === "TWILIO_AUTH_TOKEN" ? SECRET : undefined),
    logger: log,
    realtimeFactory: () => new ClosingModel(),
  });
  const server = Deno.serve({ hostname: "127.0.0.1", port: 0, onListen: () => {} }, app.handler);
  const s: Running = {
    app,
    log,
    base: `http://127.0.0.1:${server.addr.port}`,
    close: async () => {
      await server.shutdown();
      await app.close();
    },
  };
  try {
    const { call, runId } = await dial(s.base);
    const end = await ended(s, runId);
    await call.close();
    assert.equal(end.fields!.reason, "model_error");
    assert.equal(end.fields!.detail, "end: model closed: socket closed (1011: internal error)");
    const said = log.records.filter((x) => x.level === "warn" || x.level === "error");
    assert.deepEqual(said.map((x) => [x.message, x.fields]), [[
      "provider failed",
      {
        runId,
        service: "realtime",
        provider: "echo",
        kind: "ws_close",
        closeCode: 1011,
        error: "model closed: socket closed (1011: internal error)",
        caller: "the call ended",
      },
    ]]);
    assert.ok(
      app.metrics.registry.expose().includes(
        'flowcat_provider_errors_total{service="realtime",provider="echo",kind="ws_close"} 1',
      ),
    );
  } finally {
    await s.close();
  }
});

Deno.test("call log: FLOWCAT_LOG_FORMAT=json makes every line of the real server one JSON object", async () => {
  await Deno.mkdir(DIR, { recursive: true });
  const path = `${DIR}/json_agent.yaml`;
  const cfg = config({ recording: { enabled: false } });
  await Deno.writeTextFile(path, JSON.stringify(cfg));
  const parsed = await parseConfigText(JSON.stringify(cfg), "json", DIR);
  assert.ok(parsed.ok);
  const flags = permissionFlags(parsed.config, { configPath: path, port: 0 });
  assert.ok(
    flags.some((f) => f.startsWith("--allow-env=") && f.includes("FLOWCAT_LOG_FORMAT")),
    `the printed permissions grant FLOWCAT_LOG_FORMAT: ${flags.join(" ")}`,
  );
  const child = new Deno.Command("deno", {
    args: ["run", ...flags, "server/main.ts", "--config", path, "--port", "0"],
    env: { FLOWCAT_LOG_FORMAT: "json", TWILIO_AUTH_TOKEN: SECRET, NO_COLOR: "1" },
    stdout: "piped",
    stderr: "piped",
  }).spawn();
  const dec = new TextDecoder();
  const out = child.stdout.getReader();
  let text = "";
  let port = 0;
  while (port === 0) {
    const { value, done } = await out.read();
    if (done) break;
    text += dec.decode(value);
    port = Number(/on http:\/\/127\.0\.0\.1:(\d+)\//.exec(text)?.[1] ?? 0);
  }
  assert.ok(port > 0, text);
  let err = "";
  const errDone = (async () => {
    for await (const chunk of child.stderr) err += dec.decode(chunk);
  })();
  try {
    const { call, runId } = await dial(`http://127.0.0.1:${port}`);
    await until(() => call.media().length > 0, 8000, "greeting");
    await call.hangup();
    await call.close();
    await until(() => err.includes('"msg":"call ended"'), 8000, "the end line");
    const lines = err.trim().split("\n");
    const records = lines.map((l) => JSON.parse(l));
    const end = records.find((r) => r.msg === "call ended");
    const begin = records.find((r) => r.msg === "call started");
    assert.equal(begin.runId, runId);
    assert.equal(begin.level, "info");
    assert.equal(begin.scope, "flowcat");
    assert.ok(!Number.isNaN(Date.parse(begin.time)), begin.time);
    assert.equal(end.reason, "caller_hung_up");
    assert.equal(end.transport, "twilio");
    assert.equal(typeof end.durationSeconds, "number");
    assert.equal(end.turns, 0);
  } finally {
    child.kill("SIGTERM");
    await child.status;
    for (;;) if ((await out.read()).done) break;
    await errDone;
    await sleep(0);
  }
});

Deno.test("call log: audio ahead of the stream's start is dropped, counted and logged at the end", async () => {
  const s = await start({ recording: { enabled: false } });
  try {
    const params = { CallSid: "CA-early" };
    const path = "/telephony/answer/twilio";
    const sig = await twilioSignature(SECRET, `https://agent.example.com${path}`, params);
    const res = await fetch(`${s.base}${path}`, {
      method: "POST",
      headers: { "content-type": "application/x-www-form-urlencoded", "x-twilio-signature": sig },
      body: new URLSearchParams(params).toString(),
    });
    const url = new URL(/url="([^"]+)"/.exec(await res.text())![1].replaceAll("&amp;", "&"));
    const runId = Number(url.pathname.split("/").at(-1));
    const sock = socketFromWebSocket(
      new WebSocket(`${s.base.replace("http", "ws")}${url.pathname}${url.search}`),
    );
    await sock.opened;
    const media = { event: "media", streamSid: "MZ", media: { payload: "/////w==" } };
    for (let i = 0; i < 3; i++) await sock.sendText(JSON.stringify(media));
    await sock.sendText(JSON.stringify({
      event: "start",
      streamSid: "MZ",
      start: { streamSid: "MZ", callSid: "CA-early" },
    }));
    await until(() => s.app.calls.active === 1, 5000, "call running");
    await sock.sendText(JSON.stringify({ event: "stop", streamSid: "MZ", stop: {} }));
    const end = await ended(s, runId);
    assert.deepEqual(end.fields!.dropped, { before_start: 3 });
    assert.ok(
      s.app.metrics.registry.expose().includes(
        'flowcat_frames_dropped_total{reason="before_start"} 3',
      ),
    );
    await sock.close?.();
  } finally {
    await s.close();
  }
});

Deno.test("call log: a leg's drops and the output's barge-in drops add up; nothing says nothing", () => {
  const leg = (dropped?: Record<string, number>) =>
    ({
      recv: () => Promise.resolve(undefined),
      ...(dropped ? { droppedMedia: () => dropped } : {}),
    }) as unknown as MediaTransport;
  assert.deepEqual(droppedMedia(leg({ overflow: 7, late: 0 })), { overflow: 7 });
  assert.deepEqual(droppedMedia(leg({ barge_in: 2, late: 1 }), 5), { barge_in: 7, late: 1 });
  assert.deepEqual(droppedMedia(leg(), 3), { barge_in: 3 });
  assert.equal(droppedMedia(leg({ overflow: 0, before_start: 0 })), undefined);
  assert.equal(droppedMedia(leg()), undefined);
});
