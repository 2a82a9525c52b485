/**
 * Warm transfers against real peers on loopback: the agent dials the target, the caller holds
 * (in silence, or hearing the configured hold audio) while the "model" (the test) speaks a
 * briefing the target hears, then the two are bridged. The caller (sipp with `-rtp_echo`, or baresip recording what it hears) never hears
 * the briefing; a target hanging up during it gives the caller back to the agent.
 */

import assert from "node:assert/strict";
import { endReason } from "../server/end_reason.ts";
import { startBaresip } from "./_baresip.ts";
import { callControlRig, callsFrame } from "./_call_control_rig.ts";
import { until } from "./_core_helpers.ts";
import {
  AGENT_HZ,
  agentKeepsTalking,
  BRIEFING_HZ,
  firstWindow,
  skip,
  speech,
  startAgent,
  TARGET_HZ,
  withBaresipTarget,
  withSippPair,
} from "./_sip_bridge_rig.ts";
import { freeUdpPort, runSipp, sine8k, sippUasEchoArgs } from "./_sipp.ts";
import { toneWindows } from "./_tone.ts";

/** The hold tone a caller hears while the target is briefed (silence unless configured). */
const HOLD_HZ = 800;

Deno.test({
  name:
    "warm transfer: the target (outside the inbound allowlist) hangs up during the briefing; the agent has the caller back",
  ignore: skip,
  fn: () =>
    withSippPair("uac_wait_bye.xml", "uas_answer_bye.xml", async (p) => {
      const { task, results, model } = p.rig;
      const spoke = () => p.call.rtp.pacing!.voice;
      let before = 0;
      task.onStarted(async () => {
        await task.queueFrame(callsFrame("transfer_call", {
          target: p.targetUri,
          mode: "warm",
          briefing: "A caller for you.",
        }));
        await until(() => results().length === 1, 10_000, "transfer result");
        // The agent speaks to the caller again, and hears it (sipp echoes what it gets).
        before = spoke();
        model.link!.pushDown(speech(AGENT_HZ, 0.5));
        await until(() => spoke() >= before + 20, 3000, "the agent's voice to the caller");
        const echoed = () => model.frames.filter((s) => s.frame.kind === "InputAudio").length;
        const heard = echoed();
        await until(() => echoed() > heard + 10, 3000, "the caller heard again");
        await p.call.hangup();
      });
      await task.run();
      assert.deepEqual(results(), [{
        error: `transfer to ${p.targetUri} failed: the target hung up before the caller was ` +
          "connected",
      }]);
      assert.ok(!p.call.transport.detached);
      await p.bothPassed();
      // Only the caller's address may start calls: the target's BYE came anyway, as the peer
      // of a call the agent placed.
    }, { extra: ["-rtp_echo"], ip: "127.0.0.2", agent: { inbound: { allow: ["127.0.0.2"] } } }),
});

Deno.test({
  name: "warm transfer: the target hears the briefing while the caller holds, then the bridge",
  ignore: skip,
  fn: () =>
    withBaresipTarget("uac_wait_bye.xml", 6, { transfer: { briefingQuietMs: 500 } }, async (c) => {
      const { task, bp, results, model } = c.rig;
      const briefing = "Caller Ann asks about invoice 42.";
      let heldVoice = -1;
      task.onStarted(async () => {
        await task.queueFrame(callsFrame("transfer_call", {
          target: c.targetUri,
          mode: "warm",
          briefing,
        }));
        // The target answered: the brain asks the model to say the briefing; the test plays
        // the model and speaks it (a tone the target must hear before the caller's audio).
        await until(
          () => model.frames.some((s) => s.frame.kind === "UpdateSettings"),
          10_000,
          "briefing asked for",
        );
        heldVoice = c.call.rtp.pacing!.voice;
        model.link!.pushDown(speech(BRIEFING_HZ, 1));
      });
      const stop = await task.run();
      assert.deepEqual(results(), [{ ok: true, transferred: c.targetUri, bridged: true }]);
      assert.equal(endReason(stop, { disposition: bp.disposition }), "transferred");
      const say = model.frames.find((s) => s.frame.kind === "UpdateSettings")!.frame;
      assert.equal((say as { settings: { say?: string } }).settings.say, briefing);
      // On hold the caller got silence: not one voice packet from the agent.
      assert.equal(c.call.rtp.pacing!.voice, heldVoice, "the caller heard the agent on hold");
      await agentKeepsTalking(c.call);

      const { heard } = await c.targetHungUp();
      const brief = firstWindow(heard, BRIEFING_HZ);
      const own = firstWindow(heard, TARGET_HZ);
      assert.ok(toneWindows(heard, BRIEFING_HZ) >= 40, "the target heard the briefing");
      assert.ok(brief >= 0 && own > brief, `briefing at ${brief}, bridged audio at ${own}`);
      assert.ok(toneWindows(heard, TARGET_HZ) >= 100, "the bridge carried the target's tone back");
      assert.equal(toneWindows(heard, AGENT_HZ), 0, "the agent's voice reached the target");
      const log = c.logger.records;
      assert.ok(log.some((r) => r.message === "sip warm transfer: briefing the target"));
    }),
});

Deno.test({
  name:
    "warm transfer, baresip calling: on hold it hears the hold tone, none of the briefing, then the target",
  ignore: skip,
  fn: async () => {
    const holdAudio = sine8k(8000, HOLD_HZ);
    const { agent } = await startAgent({ transfer: { briefingQuietMs: 500, holdAudio } });
    const dir = `${Deno.cwd()}/.tmp/sipp-warm-${crypto.randomUUID()}`;
    Deno.mkdirSync(dir, { recursive: true });
    const targetPort = freeUdpPort();
    // The target answers PCMA and echoes RTP; it requires the agent's BYE at the end.
    const target = runSipp(sippUasEchoArgs("uas_bridge_target.xml", targetPort), dir, "25s");
    // baresip calls the agent, sends 6 s of its tone, then hangs up; it records what it hears.
    const caller = startBaresip({
      tone: sine8k(8000 * 6, TARGET_HZ),
      mediaenc: "none",
      dial: `sip:+15557654321@127.0.0.1:${agent.local.port}`,
      quitAfterSeconds: 15,
    });
    try {
      const invite = await agent.nextInbound();
      assert.ok(invite !== undefined);
      const call = await invite.answer();
      const { task, results, model } = callControlRig(call.transport);
      const targetUri = `sip:desk@127.0.0.1:${targetPort}`;
      task.onStarted(async () => {
        await task.queueFrame(callsFrame("transfer_call", {
          target: targetUri,
          mode: "warm",
          briefing: "A caller for you.",
        }));
        await until(
          () => model.frames.some((s) => s.frame.kind === "UpdateSettings"),
          10_000,
          "briefing asked for",
        );
        model.link!.pushDown(speech(BRIEFING_HZ, 1));
      });
      await task.run();
      assert.deepEqual(results(), [{ ok: true, transferred: targetUri, bridged: true }]);
      assert.equal(await call.ended, "remote hangup");
      const res = await target.done;
      assert.equal(res.code, 0, res.stdout.slice(-1500) + res.stderr.slice(-500));
      caller.kill(); // it stays up after the call: stop it, which writes out its recording
      await caller.done;
      const heard = caller.received();
      // The target's echo of baresip's own tone came through the bridge (transcoded both ways).
      assert.ok(toneWindows(heard, TARGET_HZ) >= 50, `${toneWindows(heard, TARGET_HZ)} windows`);
      assert.equal(toneWindows(heard, BRIEFING_HZ), 0, "the caller heard the briefing");
      // The hold tone played while the target was briefed (1.5 s or so), and stopped at the bridge.
      const hold = toneWindows(heard, HOLD_HZ);
      assert.ok(hold >= 25, `${hold} windows of the hold tone`);
      const bridged = firstWindow(heard, TARGET_HZ);
      assert.ok(firstWindow(heard, HOLD_HZ) < bridged, "hold audio before the bridged audio");
      assert.equal(toneWindows(heard.subarray(bridged * 160), HOLD_HZ), 0, "hold audio after");
    } finally {
      target.kill();
      caller.kill();
      await Promise.all([target.done, caller.done]);
      caller.cleanup();
      Deno.removeSync(dir, { recursive: true });
      await agent.close();
    }
  },
});
