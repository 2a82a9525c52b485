/**
 * Cold transfers where the caller's side will not transfer, against real peers on loopback: a
 * sipp caller refuses the REFER (or reports its own attempt failed), so the agent calls baresip
 * (or a sipp UAS) and bridges the two calls in process. The callers run with `-rtp_echo`, so
 * what the target hears after the bridge is its own tone sent back by the caller: audio flowed
 * target -> caller -> target through the bridge. The agent's own tone must never reach it.
 */

import assert from "node:assert/strict";
import type { StopReason } from "../mod.ts";
import { endReason } from "../server/end_reason.ts";
import { callsFrame } from "./_call_control_rig.ts";
import { until } from "./_core_helpers.ts";
import {
  AGENT_HZ,
  agentKeepsTalking,
  firstWindow,
  skip,
  speech,
  TARGET_HZ,
  withBaresipTarget,
  withSippPair,
} from "./_sip_bridge_rig.ts";
import { toneWindowFlags, toneWindows } from "./_tone.ts";

Deno.test({
  name:
    "REFER refused: the agent dials baresip, bridges, leaves the media path; its BYE ends the caller",
  ignore: skip,
  fn: () =>
    // baresip hangs up when its microphone file ends: 5 s after it answered.
    withBaresipTarget("uac_refer_refused_bridge.xml", 5, {}, async (c) => {
      const { task, bp, results } = c.rig;
      task.onStarted(async () => {
        // The agent is mid-sentence (3 s queued) when the transfer happens: none of what is
        // still queued may reach the target.
        await task.queueFrame(speech(AGENT_HZ, 3));
        await new Promise((r) => setTimeout(r, 300));
        await task.queueFrame(callsFrame("transfer_call", { target: c.targetUri }));
      });
      const stop: StopReason = await task.run();
      assert.deepEqual(results(), [{ ok: true, transferred: c.targetUri, bridged: true }]);
      assert.deepEqual(stop, { kind: "end", reason: "brain: transferred" });
      assert.equal(endReason(stop, { disposition: bp.disposition }), "transferred");
      assert.equal(c.call.endReason, undefined, "the bridge keeps the caller's call up");
      assert.ok(c.call.transport.detached);
      await agentKeepsTalking(c.call);
      // A key pressed on the target goes to the caller as RFC 4733, comes back in its echo,
      // and is relayed to the target again, which reports the event it received.
      await c.target.press("7");

      const { heard, output } = await c.targetHungUp();
      const own = toneWindows(heard, TARGET_HZ);
      // Its own tone came back through caller and bridge: at least 2 s of it.
      assert.ok(own >= 100, `target heard its tone back in ${own} windows; ${output.slice(-800)}`);
      // Whatever the caller was sent before the bridge can echo back once, right at the start;
      // after the bridge carried the target's tone, never the agent's.
      const firstOwn = firstWindow(heard, TARGET_HZ);
      const agentAfter = toneWindowFlags(heard.subarray(firstOwn * 160), AGENT_HZ)
        .filter((on) => on).length;
      assert.equal(agentAfter, 0, "the agent's voice reached the target after the bridge");
      const log = c.logger.records;
      const ended = log.find((r) => r.message === "sip bridge ended");
      assert.equal(ended?.fields?.first, "target", JSON.stringify(ended));
      assert.ok(Number(ended?.fields?.framesAToB) > 100 && Number(ended?.fields?.framesBToA) > 100);
      assert.deepEqual([ended?.fields?.keysBToA, ended?.fields?.keysAToB], [1, 1]);
      assert.match(output, /received event: '7' \(end=1\)/);
      assert.ok(log.some((r) => r.message === "sip transfer falls back to a bridge"));
    }),
});

for (
  const [callerScenario, what] of [
    ["uac_refer_refused_bye.xml", "REFER refused (405)"],
    ["uac_refer_failed_bye.xml", "the peer's transfer failed (NOTIFY 503)"],
  ]
) {
  Deno.test({
    name: `${what}: bridged to a PCMA target, the caller's BYE hangs the target up`,
    ignore: skip,
    fn: () =>
      withSippPair(callerScenario, "uas_bridge_target.xml", async (p) => {
        const { task, results } = p.rig;
        task.onStarted(() => task.queueFrame(callsFrame("transfer_call", { target: p.targetUri })));
        await task.run();
        assert.deepEqual(results(), [{ ok: true, transferred: p.targetUri, bridged: true }]);
        assert.equal(await p.call.ended, "remote hangup");
        await p.bothPassed(); // the target's scenario requires the agent's BYE
        const log = p.logger.records;
        const bridged = log.find((r) => r.message === "sip calls bridged");
        assert.deepEqual([bridged?.fields?.codec, bridged?.fields?.targetCodec], ["PCMU", "PCMA"]);
        await until(() => log.some((r) => r.message === "sip bridge ended"), 3000, "bridge end");
        const ended = log.find((r) => r.message === "sip bridge ended")!;
        assert.equal(ended.fields?.first, "caller");
        // The caller's tone went to the target, and the target's echo of it came back.
        assert.ok(Number(ended.fields?.framesAToB) > 50, JSON.stringify(ended.fields));
        assert.ok(Number(ended.fields?.framesBToA) > 50, JSON.stringify(ended.fields));
      }),
  });
}

Deno.test({
  name: "REFER refused and the target busy: the model hears both, the call goes on",
  ignore: skip,
  fn: () =>
    withSippPair("uac_refer_refused_bye.xml", "uas_busy.xml", async (p) => {
      const { task, results, bp } = p.rig;
      task.onStarted(() => task.queueFrame(callsFrame("transfer_call", { target: p.targetUri })));
      const stop = await task.run(); // ends when the caller hangs up
      assert.deepEqual(results(), [{
        error: `transfer to ${p.targetUri} failed: the peer answered the REFER 405 Method ` +
          `Not Allowed; calling it ourselves: call to ${p.targetUri} failed: 486 Busy Here`,
        refused: true,
        status: 405,
      }]);
      assert.equal(endReason(stop, { disposition: bp.disposition }), "caller_hung_up");
      assert.equal(p.call.endReason, "remote hangup");
      assert.ok(!p.call.transport.detached);
      await p.bothPassed();
    }),
});
