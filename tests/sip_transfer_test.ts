/**
 * Call control on a SIP leg against real sipp: the model's `transfer_call` sends REFER; a peer
 * that accepts (202, NOTIFY 100 then 200 sipfrag) gets our BYE and the call ends `transferred`;
 * a busy target (NOTIFY 486) or a refused REFER (405) leaves the call up and tells the model.
 * The model's `send_dtmf` leaves as RFC 4733 events that a sipp UAS echoes back, and our own
 * receive path decodes them.
 */

import assert from "node:assert/strict";
import type { KeypadEntry, StopReason } from "../mod.ts";
import { endReason } from "../server/end_reason.ts";
import {
  ReferProgress,
  referTargetProblem,
  referToUri,
  sipfragStatus,
} from "../telephony/sip/mod.ts";
import { until } from "./_core_helpers.ts";
import { callControlRig, callsFrame } from "./_call_control_rig.ts";
import { loopbackSipConfig, startLoopbackAgent } from "./_sip_peer.ts";
import { freeUdpPort, runSipp, sippArgs, sippUasEchoArgs } from "./_sipp.ts";

const TARGET = "sip:desk@127.0.0.1:5099";

// REFER alone: the bridge the agent falls back to is tested in sip_bridge_transfer_test.ts.
const startAgent = (server = `sip:127.0.0.1:${freeUdpPort()}`) =>
  startLoopbackAgent(
    loopbackSipConfig({
      server,
      login: "alice",
      password: "unused",
      callerId: "+15550001111",
    }),
    { transfer: { bridgeFallback: false } },
  );

Deno.test("REFER helpers: sipfrag status lines and Refer-To for numbers and URIs", () => {
  for (
    const ok of [
      "sip:desk@pbx.example.com:5070;transport=udp",
      "tel:+15550100",
      "+15550100",
      "1001",
    ]
  ) {
    assert.equal(referTargetProblem(ok), undefined, ok);
  }
  for (
    const bad of ["sip:a@b\r\nX-Evil: 1", "sip:", "<sip:a@b>", "1 2", "", "a".repeat(300), "a@b"]
  ) {
    assert.notEqual(referTargetProblem(bad), undefined, bad);
  }
  assert.equal(sipfragStatus("SIP/2.0 200 OK\r\n"), 200);
  assert.equal(sipfragStatus("SIP/2.0 100 Trying"), 100);
  assert.equal(sipfragStatus("INVITE sip:x SIP/2.0"), undefined);
  assert.equal(
    referToUri("sip:desk@pbx.example.com", "sip:a@10.0.0.1"),
    "sip:desk@pbx.example.com",
  );
  assert.equal(referToUri("tel:+15550100", "sip:a@10.0.0.1"), "tel:+15550100");
  assert.equal(
    referToUri("+15550100", "sip:a@10.0.0.1:5070;transport=udp"),
    "sip:+15550100@10.0.0.1:5070",
  );
});

/** sipp calls the agent with `scenario`; the agent answers and runs the call-control rig. */
async function referCall(scenario: string) {
  const { agent, logger } = await startAgent();
  const sipp = runSipp(sippArgs(scenario, agent.local.port));
  const invite = await agent.nextInbound();
  assert.ok(invite !== undefined);
  const call = await invite.answer();
  return { agent, logger, sipp, call, ...callControlRig(call.transport) };
}

/** Run `body` on a {@link referCall}; then sipp must have played its scenario through. */
async function withReferCall(
  scenario: string,
  body: (c: Awaited<ReturnType<typeof referCall>>) => Promise<void>,
): Promise<void> {
  const c = await referCall(scenario);
  try {
    await body(c);
    const res = await c.sipp.done;
    assert.equal(res.code, 0, res.stdout.slice(-2000) + res.stderr.slice(-1000));
  } finally {
    c.sipp.kill();
    await c.sipp.done;
    await c.agent.close();
  }
}

Deno.test("transfer_call on SIP: REFER accepted, NOTIFY 200 sipfrag, our BYE, ended as transferred", async () => {
  await withReferCall("uac_refer_accept.xml", async ({ logger, call, task, bp, results }) => {
    task.onStarted(() => task.queueFrame(callsFrame("transfer_call", { target: TARGET })));
    const stop: StopReason = await task.run();
    assert.deepEqual(results(), [{ ok: true, transferred: TARGET }]);
    assert.deepEqual(stop, { kind: "end", reason: "brain: transferred" });
    assert.equal(endReason(stop, { disposition: bp.disposition }), "transferred");
    assert.equal(await call.ended, "local hangup");
    const done = logger.records.find((r) => r.message === "sip transfer finished");
    assert.equal(done?.fields?.ok, true, JSON.stringify(done));
  });
});

Deno.test("transfer_call on SIP: the peer hangs up right after NOTIFY 200: still transferred", async () => {
  await withReferCall("uac_refer_hangup.xml", async ({ call, task, bp, results }) => {
    task.onStarted(() => task.queueFrame(callsFrame("transfer_call", { target: TARGET })));
    // Whichever End came first (ours, or the leg's stop on sipp's BYE), the call was handed over.
    const stop = await task.run();
    await until(() => results().length === 1, 5000, "transfer result");
    assert.deepEqual(results(), [{ ok: true, transferred: TARGET }]);
    assert.equal(endReason(stop, { disposition: bp.disposition }), "transferred");
    await call.ended;
  });
});

Deno.test("REFER progress: accepted then the call ends is a transfer; refused or unanswered is not", () => {
  const accepted = new ReferProgress(1000);
  accepted.accept();
  accepted.callEnded();
  const early = new ReferProgress(1000);
  early.callEnded();
  return Promise.all([accepted.outcome, early.outcome]).then(([a, e]) => {
    assert.deepEqual(a, { ok: true, status: 202 });
    assert.deepEqual(e, { ok: false, reason: "the call ended during the transfer" });
  });
});

for (
  const [scenario, what, want] of [
    ["uac_refer_busy.xml", "target busy (NOTIFY 486)", {
      error: `transfer to ${TARGET} failed: the target answered 486 Busy Here`,
      status: 486,
    }],
    ["uac_refer_refused.xml", "REFER refused (405)", {
      error: `transfer to ${TARGET} failed: the peer answered the REFER 405 Method Not Allowed`,
      refused: true,
      status: 405,
    }],
  ] as const
) {
  Deno.test(`transfer_call on SIP, ${what}: the model is told and the call goes on`, async () => {
    await withReferCall(scenario, async ({ call, task, bp, results }) => {
      task.onStarted(async () => {
        // A target that would smuggle a header is refused before any REFER (sipp checks the one
        // REFER it gets).
        const bad = await call.transfer("sip:desk@127.0.0.1\r\nX-Evil: 1");
        assert.equal(bad.ok, false);
        assert.match((bad as { reason: string }).reason, /line breaks/);
        await task.queueFrame(callsFrame("transfer_call", { target: TARGET }));
        await until(() => results().length === 1, 5000, "transfer result");
        assert.equal(call.endReason, undefined, "the agent did not hang up");
      });
      const stop = await task.run(); // ends when sipp hangs up, a second later
      assert.deepEqual(results(), [want]);
      assert.equal(bp.disposition, undefined);
      assert.equal(endReason(stop), "caller_hung_up");
      assert.equal(await call.ended, "remote hangup");
    });
  });
}

Deno.test("send_dtmf on SIP: RFC 4733 events reach sipp, which echoes them; we decode the keys", async () => {
  const sippPort = freeUdpPort();
  const { agent } = await startAgent(`sip:127.0.0.1:${sippPort}`);
  const sipp = runSipp(sippUasEchoArgs("uas_echo_dtmf.xml", sippPort));
  try {
    const call = await agent.call("+15557654321");
    assert.ok(call.media.telephoneEventPt !== undefined, "telephone-event negotiated");
    const { task, results, model } = callControlRig(call.transport);
    const heard = () =>
      model.frames.flatMap((s) => s.frame.kind === "InputDtmf" ? [s.frame.key] : []);
    task.onStarted(async () => {
      await task.queueFrame(callsFrame("send_dtmf", { keys: "2#9" }));
      await until(() => heard().length >= 3, 5000, "echoed keys");
      await until(() => call.stats.dtmfOut === 3, 2000, "last key's end packets sent");
      await call.hangup();
    });
    await task.run();
    assert.deepEqual(results(), [{ ok: true, sent: "2#9" }]);
    assert.deepEqual(heard(), ["2", "#", "9"] as KeypadEntry[]);
    assert.equal(call.stats.dtmfOut, 3);
    const res = await sipp.done;
    assert.equal(res.code, 0, res.stdout.slice(-2000));
  } finally {
    sipp.kill();
    await sipp.done;
    await agent.close();
  }
});
