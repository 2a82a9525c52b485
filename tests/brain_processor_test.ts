import assert from "node:assert/strict";
import { type Frame, type FunctionCall, makeFrame, Pipeline, PipelineTask } from "../mod.ts";
import { BrainProcessor } from "../core/processors/brain.ts";
import { CallTranscript } from "../core/processors/finalize.ts";
import { buildS2sTask } from "../core/builders.ts";
import type { MediaTransport } from "../core/seams.ts";
import { EchoRealtime } from "../providers/echo/realtime.ts";
import { MemorySessionSource } from "../server/session_store.ts";
import { GraphBrain, parseGraphSpec, RemoteBrain } from "../core/agent/mod.ts";
import { serveBrain } from "../server/brain_server.ts";
import { silentLogger } from "../core/log.ts";
import { drive, Recorder, until } from "./_core_helpers.ts";

const parsed = parseGraphSpec(await Deno.readTextFile("examples/graph.yaml"));
if (!parsed.ok) throw new Error("example graph invalid");
const spec = parsed.spec;

/** Plays the model: records what comes back upstream. */
class Model extends Recorder {}

let n = 0;
const call = (name: string, args: Record<string, unknown> = {}): FunctionCall => ({
  toolCallId: `call-${++n}`,
  functionName: name,
  arguments: args,
});

function setup(brain: ConstructorParameters<typeof BrainProcessor>[0], opts = {}) {
  const model = new Model("model");
  const bp = new BrainProcessor(brain, opts);
  const after = new Recorder("after");
  const task = new PipelineTask(new Pipeline([model, bp, after]), {
    idleTimeoutMs: null,
    logger: silentLogger,
  });
  return { model, bp, after, task };
}

Deno.test("brain processor: transition -> UpdateSettings then FunctionCallResult upstream, say downstream", async () => {
  const { model, after, task } = setup(new GraphBrain(spec));
  await drive(task, async () => {
    await task.queueFrame(makeFrame("FunctionCallsStarted", { calls: [call("wants_booking")] }));
    await until(() => model.kinds("upstream").length >= 2);
    await task.stopWhenDone();
  });
  assert.deepEqual(model.kinds("upstream"), ["UpdateSettings", "FunctionCallResult"]);
  const up = model.frames.filter((f) => f.dir === "upstream");
  const us = up[0].frame as Extract<Frame, { kind: "UpdateSettings" }>;
  assert.equal(us.target, "llm");
  assert.equal(us.settings.nodeId, "collect_details");
  assert.match(String(us.settings.systemPrompt), /number of guests/);
  const tools = (us.settings.tools as { name: string }[]).map((t) => t.name);
  assert.deepEqual(tools, ["details_collected", "check_availability", "end_call"]);
  const fr = up[1].frame as Extract<Frame, { kind: "FunctionCallResult" }>;
  assert.equal(fr.result.toolCallId, `call-${n}`);
  assert.deepEqual(after.kinds("downstream"), ["FunctionCallsStarted", "TtsSpeak"]);
});

Deno.test("brain processor: a multi-step conversation ends the task with the disposition", async () => {
  const { model, bp, task } = setup(new GraphBrain(spec, { vars: { caller_name: "Ada" } }));
  task.onStarted(async () => {
    for (
      const c of [
        call("wants_booking"),
        call("details_collected", { party_size: 2, date: "Friday", time: "8pm" }),
        call("confirmed"),
      ]
    ) {
      await task.queueFrame(
        makeFrame("FunctionCallInProgress", { call: c, cancelOnInterruption: false }),
      );
    }
  });
  const reason = await task.run();
  assert.deepEqual(reason, { kind: "end", reason: "brain: booked" });
  assert.equal(bp.disposition, "booked");
  assert.deepEqual(bp.moves.map((m) => m.action), ["transition", "transition", "end"]);
  assert.equal(model.kinds("upstream").filter((k) => k === "FunctionCallResult").length, 3);
});

Deno.test("brain processor: workflow tools are answered by the embedder's handler", async () => {
  const seen: unknown[] = [];
  const { model, task } = setup(GraphBrain.at(spec, "collect_details"), {
    workflowTool: (node: string, tool: string, args: Record<string, unknown>) => {
      seen.push([node, tool, args]);
      return Promise.resolve("available");
    },
  });
  await drive(task, async () => {
    await task.queueFrame(
      makeFrame("FunctionCallsStarted", { calls: [call("check_availability", { party_size: 4 })] }),
    );
    await until(() => model.kinds("upstream").length >= 1);
    await task.stopWhenDone();
  });
  assert.deepEqual(seen, [["collect_details", "check_availability", { party_size: 4 }]]);
  const fr = model.frames.find((f) => f.dir === "upstream")!.frame as Extract<
    Frame,
    { kind: "FunctionCallResult" }
  >;
  assert.equal(fr.result.result, "available");
});

Deno.test("brain processor: a slow remote brain never blocks the frame path", async () => {
  let release!: () => void;
  const gate = new Promise<void>((r) => (release = r));
  const server = serveBrain({ spec, port: 0, hostname: "127.0.0.1" });
  const base = `http://127.0.0.1:${server.addr.port}`;
  const slowFetch: typeof fetch = async (input, init) => {
    if (String(input).endsWith("/tool-call")) await gate;
    return fetch(input, init);
  };
  const brain = await RemoteBrain.connect(base, {}, "test", { fetch: slowFetch, timeoutMs: 5000 });
  const { model, after, task } = setup(brain);
  await drive(task, async () => {
    await task.queueFrame(makeFrame("FunctionCallsStarted", { calls: [call("wants_booking")] }));
    for (let i = 0; i < 20; i++) await task.queueFrame(makeFrame("Text", { text: String(i) }));
    await until(
      () => after.kinds().filter((k) => k === "Text").length === 20,
      2000,
      "audio/text keeps flowing",
    );
    assert.equal(model.kinds("upstream").length, 0, "the brain has not answered yet");
    release();
    await until(() => model.kinds("upstream").includes("FunctionCallResult"), 3000);
    await task.stopWhenDone();
  }).finally(async () => {
    release();
    await server.shutdown();
  });
  assert.deepEqual(model.kinds("upstream"), ["UpdateSettings", "FunctionCallResult"]);
});

Deno.test("brain processor: a brain that throws keeps the call on its node and tells the model", async () => {
  const broken = new GraphBrain(spec);
  broken.onToolCall = () => {
    throw new Error("db down");
  };
  const errors: string[] = [];
  const { model, task } = setup(broken);
  task.onError((m) => void errors.push(m));
  const reason = await drive(task, async () => {
    await task.queueFrame(makeFrame("FunctionCallsStarted", { calls: [call("wants_booking")] }));
    await until(() => model.kinds("upstream").includes("FunctionCallResult"));
    await task.stopWhenDone();
  });
  assert.equal(reason.kind, "end", "the call goes on");
  assert.match(errors[0], /brain failed on wants_booking: db down/);
  const fr = model.frames.find((f) => f.kind === "FunctionCallResult" && f.dir === "upstream")!
    .frame as Extract<Frame, { kind: "FunctionCallResult" }>;
  assert.deepEqual(fr.result.result, { error: "the tool failed; stay on this step" });
});

Deno.test("brain processor: keeps the call transcript (both sides, node moves, tool results), no loop of its own", async () => {
  const transcript = new CallTranscript();
  const moved = 'tool:{"ok":true,"node":"collect_details"}';
  const live: string[] = [];
  const onLine = new CallTranscript((l) => live.push(`${l.role}:${l.text}`));
  const { model, task } = setup(new GraphBrain(spec), { transcript });
  const other = setup(new GraphBrain(spec), { transcript: onLine });
  for (const [t, m] of [[task, model], [other.task, other.model]] as const) {
    await drive(t, async () => {
      await t.queueFrame(
        makeFrame("Transcription", { text: "a table", userId: "user", final: true }),
      );
      await t.queueFrame(makeFrame("InterimTranscription", { text: "half", userId: "user" }));
      await t.queueFrame(makeFrame("Transcription", { text: "sure", userId: "bot", final: true }));
      await t.queueFrame(makeFrame("FunctionCallsStarted", { calls: [call("wants_booking")] }));
      await until(() => m.kinds("upstream").length >= 2);
      await t.stopWhenDone();
    });
  }
  assert.deepEqual(
    transcript.lines.map((l) => `${l.role}:${l.text}`),
    ["user:a table", "bot:sure", "node:collect_details", moved],
  );
  assert.deepEqual(live, ["user:a table", "bot:sure", "node:collect_details", moved]);
  assert.equal(transcript.lines[3].tool, "wants_booking");
  assert.ok(transcript.lines.every((l, i, a) => l.atMs >= (a[i - 1]?.atMs ?? 0)));
});

Deno.test("call builders: the transcript rides on the brain processor (5 loops per s2s call)", async () => {
  const seen = new Set<string>();
  const leg: MediaTransport = {
    recv: () => Promise.resolve(undefined), // the caller is gone at once: End flows through
    sendAudio: () => Promise.resolve(),
    sendClear: () => Promise.resolve(),
    carrierRate: () => 8000,
  };
  const sessions = new MemorySessionSource({ provider: "echo" });
  const run = await sessions.createRun("carrier", { carrier: "twilio" });
  const task = buildS2sTask({
    transport: leg,
    brain: new GraphBrain(spec),
    session: sessions,
    runId: run.runId,
    token: run.token,
    realtime: new EchoRealtime(),
    model: "echo",
    record: false,
    taskParams: {
      idleTimeoutMs: null,
      logger: silentLogger,
      observers: [{ onProcess: (e) => void seen.add(e.processor) }],
    },
  });
  await task.run();
  assert.deepEqual([...seen], [
    "TransportInput",
    "RealtimeProcessor",
    "BrainProcessor",
    "TransportOutput",
    "FinalizeProcessor",
  ]);
  assert.ok(task.parts.transcript instanceof CallTranscript);
});
