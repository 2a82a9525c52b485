/**
 * Call-control tools through the pipeline: `send_dtmf` reaches the leg's key command or, on a
 * leg without one (a carrier WebSocket), goes in-band as tones our own detector decodes;
 * `transfer_call` ends the call as `transferred` when the leg hands it over, and tells the
 * model when it cannot.
 */

import assert from "node:assert/strict";
import {
  dtmfToolKeys,
  type KeypadEntry,
  type StopReason,
  TRANSFER_CALL_TOOL,
  type TransferOutcome,
  transferToolTarget,
} from "../mod.ts";
import { concatInt16 } from "../core/audio/pcm.ts";
import { createSerializer } from "../telephony/serializers/mod.ts";
import { WsMediaTransport } from "../telephony/ws_transport.ts";
import { GraphBrain, parseGraphSpec } from "../core/agent/mod.ts";
import { until } from "./_core_helpers.ts";
import { FakeLeg } from "./_fake_leg.ts";
import { MemorySocket, twilioSentPcm, twilioStart } from "./_memory_socket.ts";
import { callControlRig, callsFrame, decodeKeys } from "./_call_control_rig.ts";

Deno.test("send_dtmf and transfer_call arguments: keys and targets checked, errors for the model", () => {
  assert.deepEqual(dtmfToolKeys({ keys: "1 2-3#" }), { keys: ["1", "2", "3", "#"] });
  assert.deepEqual(dtmfToolKeys({ keys: "9b" }), { keys: ["9", "B"] });
  assert.ok("error" in dtmfToolKeys({ keys: "12x" }));
  assert.ok("error" in dtmfToolKeys({}));
  assert.ok("error" in dtmfToolKeys({ keys: "1".repeat(33) }));
  assert.deepEqual(transferToolTarget({ target: " sip:desk@example.com " }), {
    target: "sip:desk@example.com",
  });
  assert.ok("error" in transferToolTarget({ target: "sip:a@b\r\nX-Evil: 1" }));
  assert.ok("error" in transferToolTarget({ target: "" }));
  // A declaration that pins the targets: only those, and its default when the model names none.
  const pinned = {
    ...TRANSFER_CALL_TOOL,
    params: {
      type: "object",
      properties: {
        target: { type: "string", enum: ["sip:desk@pbx", "+15550100"], default: "sip:desk@pbx" },
      },
    },
  };
  assert.deepEqual(transferToolTarget({}, pinned), { target: "sip:desk@pbx" });
  assert.deepEqual(transferToolTarget({ target: "+15550100" }, pinned), { target: "+15550100" });
  assert.deepEqual(transferToolTarget({ target: "+19005550199" }, pinned), {
    error: "target must be one of: sip:desk@pbx, +15550100",
  });
  assert.ok(
    "error" in transferToolTarget({}, TRANSFER_CALL_TOOL),
    "no default: a target is needed",
  );
});

Deno.test("send_dtmf on a leg with a key command: OutputDtmf reaches sendDtmf, the model gets ok", async () => {
  const leg = new FakeLeg();
  const pressed: string[][] = [];
  const keyLeg = Object.assign(leg, {
    sendDtmf: (k: readonly KeypadEntry[]) => (pressed.push([...k]), Promise.resolve()),
  });
  const { task, results } = callControlRig(keyLeg);
  task.onStarted(async () => {
    await task.queueFrame(
      callsFrame("send_dtmf", { keys: "12#" }),
    );
    await task.queueFrame(
      callsFrame("send_dtmf", { keys: "x" }),
    );
    await until(() => results().length === 2, 2000, "two results");
    leg.feed(undefined);
  });
  await task.run();
  assert.deepEqual(pressed, [["1", "2", "#"]]);
  assert.deepEqual(results()[0], { ok: true, sent: "12#" });
  assert.match(String((results()[1] as { error: string }).error), /not a keypad key/);
  assert.equal(leg.sent.length, 0, "no in-band tones when the leg has a key command");
});

Deno.test("examples/phone_menu_graph.yaml: send_dtmf at the menu presses keys, transfer_call is pinned", async () => {
  const parsed = parseGraphSpec(await Deno.readTextFile("examples/phone_menu_graph.yaml"));
  assert.ok(parsed.ok, JSON.stringify(parsed));
  const brain = new GraphBrain(parsed.spec);
  assert.ok(brain.tools().some((t) => t.name === "send_dtmf"));
  const pressed: string[] = [];
  const leg = Object.assign(new FakeLeg(), {
    sendDtmf: (k: readonly KeypadEntry[]) => (pressed.push(...k), Promise.resolve()),
  });
  const { task, results } = callControlRig(leg, brain);
  task.onStarted(async () => {
    await task.queueFrame(callsFrame("send_dtmf", { keys: "2" }));
    await until(() => results().length === 1, 2000, "result");
    leg.feed(undefined);
  });
  await task.run();
  assert.deepEqual(pressed, ["2"]);
  assert.deepEqual(results(), [{ ok: true, sent: "2" }]);
  // At "talk", transfer_call is offered with its target pinned.
  const talk = GraphBrain.at(parsed.spec, "talk");
  const decl = talk.tools().find((t) => t.name === "transfer_call");
  assert.deepEqual(transferToolTarget({}, decl), { target: "+15550100" });
  assert.ok("error" in transferToolTarget({ target: "+19005550199" }, decl));
  assert.equal(brain.tools().some((t) => t.name === "transfer_call"), false, "not at the menu");
});

Deno.test("send_dtmf on a leg without a key command goes in-band: our detector hears the keys", async () => {
  const leg = new FakeLeg();
  const { task } = callControlRig(leg);
  task.onStarted(async () => {
    await task.queueFrame(
      callsFrame("send_dtmf", { keys: "4*7#" }),
    );
    // 4 keys x (100 ms tone + 100 ms gap), paced at real time.
    await until(() => leg.sentMs() >= 800, 5000, "tones played");
    leg.feed(undefined);
  });
  await task.run();
  const pcm = concatInt16(leg.sent.map((s) => s.audio.pcm));
  assert.deepEqual(decodeKeys(pcm), ["4", "*", "7", "#"]);
});

Deno.test("send_dtmf on a Twilio media stream: mu-law tones in the media messages decode to the keys", async () => {
  const socket = new MemorySocket();
  const leg = new WsMediaTransport(socket, createSerializer("twilio"));
  twilioStart(socket);
  const { task } = callControlRig(leg);
  const media = () => socket.out.filter((m) => m.includes('"media"'));
  task.onStarted(async () => {
    await task.queueFrame(
      callsFrame("send_dtmf", { keys: "305" }),
    );
    await until(() => media().length >= 30, 5000, "tones sent");
    socket.text({ event: "stop", streamSid: "MZ1", stop: { callSid: "CA1" } });
  });
  await task.run();
  const pcm = twilioSentPcm(socket.out);
  assert.deepEqual(decodeKeys(pcm), ["3", "0", "5"]);
});

/** A leg whose transfer answers `outcome`. */
function transferLeg(outcome: TransferOutcome) {
  const leg = new FakeLeg();
  const targets: string[] = [];
  return {
    leg: Object.assign(leg, {
      transfer: (t: string) => (targets.push(t), Promise.resolve(outcome)),
    }),
    targets,
  };
}

Deno.test("transfer_call handed over: the call ends as transferred and the leg closes", async () => {
  const { leg, targets } = transferLeg({ ok: true, status: 200 });
  const { task, bp, results } = callControlRig(leg);
  task.onStarted(async () => {
    await task.queueFrame(
      callsFrame("transfer_call", { target: "sip:desk@127.0.0.1" }),
    );
  });
  const reason: StopReason = await task.run();
  assert.deepEqual(targets, ["sip:desk@127.0.0.1"]);
  assert.deepEqual(results(), [{ ok: true, transferred: "sip:desk@127.0.0.1" }]);
  assert.equal(bp.disposition, "transferred");
  assert.deepEqual(reason, { kind: "end", reason: "brain: transferred" });
  assert.ok(leg.closed, "the agent hangs up after the hand-over");
});

Deno.test("transfer_call refused or failed: the model is told why and the call goes on", async () => {
  for (
    const [outcome, want] of [
      [{ ok: false, refused: true, status: 405, reason: "405 Method Not Allowed" }, {
        error: "transfer to 1001 failed: 405 Method Not Allowed",
        refused: true,
        status: 405,
      }],
      [{ ok: false, status: 486, reason: "486 Busy Here" }, {
        error: "transfer to 1001 failed: 486 Busy Here",
        status: 486,
      }],
    ] as const
  ) {
    const { leg } = transferLeg(outcome);
    const { task, bp, results } = callControlRig(leg);
    task.onStarted(async () => {
      await task.queueFrame(
        callsFrame("transfer_call", { target: "1001" }),
      );
      await until(() => results().length === 1, 2000, "result");
      assert.equal(leg.closed, false, "the call goes on");
      leg.feed(undefined);
    });
    const reason = await task.run();
    assert.deepEqual(results(), [want]);
    assert.equal(bp.disposition, undefined);
    assert.equal(reason.kind, "end");
    assert.equal((reason as { reason?: string }).reason, "caller hung up");
  }
  // A leg with no transfer at all (WebRTC, a carrier WebSocket today).
  const leg = new FakeLeg();
  const { task, results } = callControlRig(leg);
  task.onStarted(async () => {
    await task.queueFrame(
      callsFrame("transfer_call", { target: "1001" }),
    );
    await until(() => results().length === 1, 2000, "result");
    leg.feed(undefined);
  });
  await task.run();
  assert.deepEqual(results(), [{
    error: "transfer to 1001 failed: this call's leg cannot transfer calls",
    refused: true,
  }]);
});
