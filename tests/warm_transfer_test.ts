/**
 * `transfer_call` with `mode: "warm"` through the pipeline, over an in-memory leg: the leg's
 * warm transfer reports the target's answer (`consulting`), the brain has the briefing spoken
 * (the realtime model's `say`, or a TtsSpeak for the cascade's context aggregator), and the
 * call ends `transferred` once the leg bridged. Legs without a warm transfer refuse it.
 */

import assert from "node:assert/strict";
import {
  makeFrame,
  Pipeline,
  PipelineTask,
  TRANSFER_CALL_TOOL,
  type TransferOutcome,
  transferToolMode,
  type WarmTransferOptions,
} from "../mod.ts";
import { silentLogger } from "../core/log.ts";
import { BrainProcessor } from "../core/processors/brain.ts";
import { TransportInput, TransportOutput } from "../core/processors/transport.ts";
import { Recorder, until } from "./_core_helpers.ts";
import { FakeLeg } from "./_fake_leg.ts";
import { callControlRig, callsFrame, stayBrain } from "./_call_control_rig.ts";

Deno.test("transfer_call mode and briefing: warm takes a briefing, cold does not", () => {
  assert.deepEqual(transferToolMode({ target: "1001" }), { mode: "cold" });
  assert.deepEqual(transferToolMode({ mode: "warm", briefing: "  Ann, invoice 42. " }), {
    mode: "warm",
    briefing: "Ann, invoice 42.",
  });
  assert.deepEqual(transferToolMode({ mode: "warm", briefing: " " }), { mode: "warm" });
  assert.deepEqual(transferToolMode({ mode: "hot" }), { error: 'mode must be "cold" or "warm"' });
  assert.deepEqual(transferToolMode({ briefing: "hi" }), {
    error: 'a briefing needs mode "warm"',
  });
  assert.ok("error" in transferToolMode({ mode: "warm", briefing: "x".repeat(1001) }));
  assert.ok("error" in transferToolMode({ mode: "warm", briefing: 42 }));
  // A declaration's default and enum for the mode apply, as they do for the target.
  const warmOnly = {
    name: "transfer_call",
    description: "",
    params: {
      type: "object",
      properties: { mode: { type: "string", enum: ["warm"], default: "warm" } },
    },
  };
  assert.deepEqual(transferToolMode({ briefing: "hi" }, warmOnly), {
    mode: "warm",
    briefing: "hi",
  });
  assert.deepEqual(transferToolMode({ mode: "cold" }, warmOnly), {
    error: "mode must be one of: warm",
  });
  assert.deepEqual(transferToolMode({}, TRANSFER_CALL_TOOL), { mode: "cold" });
  const props = TRANSFER_CALL_TOOL.params.properties as Record<string, { enum?: string[] }>;
  assert.deepEqual(props.mode.enum, ["cold", "warm"]);
  assert.ok(props.briefing !== undefined);
});

/** A leg whose warm transfer answers, waits for `bridge()`, then resolves `outcome`. */
function warmLeg(outcome: TransferOutcome = { ok: true, status: 200, bridged: true }) {
  const calls: { target: string; brief: boolean }[] = [];
  let bridge!: () => void;
  const bridged = new Promise<void>((r) => (bridge = r));
  const leg = Object.assign(new FakeLeg(), {
    transfer: () => Promise.reject(new Error("a cold transfer was asked for")),
    warmTransfer: async (target: string, opts: WarmTransferOptions) => {
      calls.push({ target, brief: opts.brief });
      opts.onConsulting();
      await bridged;
      return outcome;
    },
  });
  return { leg, calls, bridge };
}

const WARM = { target: "sip:desk@pbx", mode: "warm", briefing: "Ann asks about invoice 42." };

Deno.test("warm transfer, realtime shape: the model is asked to say the briefing, then the call ends transferred", async () => {
  const { leg, calls, bridge } = warmLeg();
  const { task, bp, results, model } = callControlRig(leg);
  const says = () =>
    model.frames.flatMap((s) =>
      s.dir === "upstream" && s.frame.kind === "UpdateSettings" ? [s.frame.settings] : []
    );
  task.onStarted(async () => {
    await task.queueFrame(callsFrame("transfer_call", WARM));
    await until(() => says().length === 1, 2000, "the briefing");
    assert.deepEqual(results(), [], "no result while the target is briefed");
    bridge();
  });
  const stop = await task.run();
  assert.deepEqual(calls, [{ target: "sip:desk@pbx", brief: true }]);
  assert.deepEqual(says(), [{
    systemPrompt: "",
    tools: [],
    say: WARM.briefing,
    nodeId: "menu",
  }]);
  assert.deepEqual(results(), [{ ok: true, transferred: "sip:desk@pbx", bridged: true }]);
  assert.equal(bp.disposition, "transferred");
  assert.deepEqual(stop, { kind: "end", reason: "brain: transferred" });
});

Deno.test("warm transfer, cascaded shape: the briefing goes up as a TtsSpeak for the context", async () => {
  const { leg, bridge } = warmLeg();
  const model = new Recorder("model");
  const bp = new BrainProcessor(stayBrain, { sayUpstream: true });
  const task = new PipelineTask(
    new Pipeline([new TransportInput(leg), model, bp, new TransportOutput(leg)]),
    { idleTimeoutMs: null, logger: silentLogger },
  );
  const speaks = () =>
    model.frames.flatMap((s) =>
      s.dir === "upstream" && s.frame.kind === "TtsSpeak" ? [s.frame] : []
    );
  task.onStarted(async () => {
    await task.queueFrame(callsFrame("transfer_call", WARM));
    await until(() => speaks().length === 1, 2000, "the briefing");
    bridge();
  });
  await task.run();
  assert.equal(speaks()[0].text, WARM.briefing);
  assert.equal(speaks()[0].appendToContext, true);
  assert.equal(bp.disposition, "transferred");
});

Deno.test("warm transfer without a briefing, failed, or on a leg without one", async () => {
  // No briefing: the leg is told so (it bridges at the answer), and nothing is said.
  {
    const { leg, calls, bridge } = warmLeg({ ok: false, reason: "the target hung up" });
    const { task, results, model } = callControlRig(leg);
    task.onStarted(async () => {
      await task.queueFrame(callsFrame("transfer_call", { target: "1001", mode: "warm" }));
      bridge();
      await until(() => results().length === 1, 2000, "result");
      leg.feed(undefined);
    });
    await task.run();
    assert.deepEqual(calls, [{ target: "1001", brief: false }]);
    assert.equal(model.frames.some((s) => s.frame.kind === "UpdateSettings"), false);
    assert.deepEqual(results(), [{ error: "transfer to 1001 failed: the target hung up" }]);
  }
  // A leg with a cold transfer only (a carrier WebSocket): refused, nothing dialled.
  const leg = Object.assign(new FakeLeg(), {
    transfer: () => Promise.reject(new Error("a cold transfer was asked for")),
  });
  const { task, results } = callControlRig(leg);
  task.onStarted(async () => {
    await task.queueFrame(callsFrame("transfer_call", { ...WARM }));
    await until(() => results().length === 1, 2000, "result");
    leg.feed(undefined);
  });
  await task.run();
  assert.deepEqual(results(), [{
    error: "transfer to sip:desk@pbx failed: this call's leg cannot do a warm transfer",
    refused: true,
  }]);
  // The frame itself carries the mode and the briefing.
  const frame = makeFrame("TransferCall", { target: "x", mode: "warm", briefing: "b" });
  assert.equal(frame.mode, "warm");
});

Deno.test("warm transfer: speech still queued for the caller is dropped when the target answers", async () => {
  const { leg, bridge } = warmLeg();
  const { task, model } = callControlRig(leg);
  let atAnswer = 0;
  task.onStarted(async () => {
    // 2 s of the agent's speech to the caller, and the transfer called while it plays.
    const pcm = new Int16Array(16000).fill(1000);
    await task.queueFrame(
      makeFrame("OutputAudio", { audio: { pcm, sampleRate: 8000, numChannels: 1 } }),
    );
    await until(() => leg.sentMs() >= 200, 2000, "speech playing");
    await task.queueFrame(callsFrame("transfer_call", WARM));
    await until(() => model.frames.some((s) => s.frame.kind === "UpdateSettings"), 2000, "asked");
    atAnswer = leg.sentMs();
    await new Promise((r) => setTimeout(r, 300));
    bridge();
  });
  await task.run();
  // Nothing more of it went out once the target answered (the next voice is the briefing's).
  assert.ok(atAnswer < 1000, `${atAnswer} ms sent before the answer`);
  assert.equal(leg.sentMs(), atAnswer);
  const kinds = model.frames.filter((s) => s.dir === "upstream").map((s) => s.frame.kind);
  assert.ok(kinds.indexOf("BotInterrupted") < kinds.indexOf("UpdateSettings"), kinds.join());
});
