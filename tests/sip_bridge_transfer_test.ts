/**
 * Transfers where the agent dials the target itself, against real peers on loopback: a sipp
 * caller refuses the REFER, so the agent calls baresip (or a sipp UAS) and bridges the two calls
 * in process; a warm transfer briefs baresip before the bridge. The callers run with
 * `-rtp_echo`, so what the target hears after the bridge is its own tone sent back by the
 * caller: audio flowed target -> caller -> target through the bridge. The agent's own tone
 * must never reach the target.
 */

import assert from "node:assert/strict";
import { type AudioFrame, makeFrame, type StopReason } from "../mod.ts";
import { endReason } from "../server/end_reason.ts";
import type { SipAgentOptions, SipCall } from "../telephony/sip/mod.ts";
import { type Baresip, hasBaresip, startBaresip } from "./_baresip.ts";
import { callControlRig, callsFrame } from "./_call_control_rig.ts";
import { until } from "./_core_helpers.ts";
import { loopbackSipConfig, startLoopbackAgent } from "./_sip_peer.ts";
import {
  freeUdpPort,
  hasSipp,
  pcmuPcap,
  runSipp,
  sine8k,
  sippArgs,
  sippUasEchoArgs,
} from "./_sipp.ts";
import { toneWindowFlags, toneWindows } from "./_tone.ts";

/** The target's tone (baresip's microphone). */
const TARGET_HZ = 600;
/** The agent's own voice in these calls: it must stop at the bridge. */
const AGENT_HZ = 1000;
/** The briefing the "model" speaks to the target in a warm transfer. */
const BRIEFING_HZ = 1400;

const skip = !hasSipp() || !hasBaresip();

const startAgent = (opts: SipAgentOptions = {}) =>
  startLoopbackAgent(
    loopbackSipConfig({
      server: `sip:127.0.0.1:${freeUdpPort()}`,
      login: "alice",
      password: "unused",
      callerId: "+15550001111",
    }),
    opts,
  );

/** `seconds` of a tone as one OutputAudio frame (the model speaking) at 8 kHz. */
function speech(hz: number, seconds: number) {
  const audio: AudioFrame = { pcm: sine8k(8000 * seconds, hz), sampleRate: 8000, numChannels: 1 };
  return makeFrame("OutputAudio", { audio });
}

/** The index of the first 20 ms window that carries `hz`, or -1. */
const firstWindow = (pcm: Int16Array, hz: number) => toneWindowFlags(pcm, hz).indexOf(true);

/** After the bridge, the agent's leg takes nothing more from the pipeline: a second of its tone. */
async function agentKeepsTalking(call: SipCall): Promise<void> {
  for (let i = 0; i < 50; i++) {
    await call.transport.sendAudio({
      pcm: sine8k(160, AGENT_HZ),
      sampleRate: 8000,
      numChannels: 1,
    });
    await new Promise((r) => setTimeout(r, 20));
  }
}

/** A call from an echoing sipp caller to the agent, with baresip as the transfer target. */
interface BaresipCall {
  call: SipCall;
  rig: ReturnType<typeof callControlRig>;
  targetUri: string;
  target: Baresip;
  logger: Awaited<ReturnType<typeof startAgent>>["logger"];
  /**
   * Once bridged: baresip hangs up when its tone file ends, the agent must then hang up the
   * caller (its scenario requires the BYE). Resolves with what baresip heard and printed.
   */
  targetHungUp(): Promise<{ heard: Int16Array; output: string }>;
}

/**
 * Run `body` on a call from sipp running `callerScenario` with `-rtp_echo` to the agent, with
 * baresip (auto-answer, sending `toneSeconds` of the target tone, then hanging up) to transfer to.
 */
async function withBaresipTarget(
  callerScenario: string,
  toneSeconds: number,
  agentOpts: SipAgentOptions,
  body: (c: BaresipCall) => Promise<void>,
): Promise<void> {
  const { agent, logger } = await startAgent(agentOpts);
  const target = startBaresip({
    tone: sine8k(8000 * toneSeconds, TARGET_HZ),
    mediaenc: "none",
    quitAfterSeconds: 15,
  });
  const sipp = runSipp(
    sippArgs(callerScenario, agent.local.port, ["-rtp_echo"]),
    undefined,
    "25s",
  );
  let watchdog: ReturnType<typeof setTimeout> | undefined;
  try {
    await target.ready();
    const invite = await agent.nextInbound();
    assert.ok(invite !== undefined);
    const call = await invite.answer();
    // A transfer that went wrong leaves the call up: end it rather than hang the test.
    watchdog = setTimeout(() => void call.hangup(), 20_000);
    const targetHungUp = async () => {
      assert.equal(await call.ended, "bridged target hung up");
      // The bridge logs its end once the caller's BYE has been answered.
      await until(() => logger.records.some((r) => r.message === "sip bridge ended"), 3000, "end");
      target.kill(); // it stays up after the call: stop it, which writes out its recording
      const { output } = await target.done;
      const res = await sipp.done;
      assert.equal(res.code, 0, res.stdout.slice(-2000) + res.stderr.slice(-1000));
      return { heard: target.received(), output };
    };
    const rig = callControlRig(call.transport);
    const targetUri = `sip:+15557654321@127.0.0.1:${target.sipPort}`;
    await body({ call, rig, targetUri, target, logger, targetHungUp });
  } finally {
    clearTimeout(watchdog);
    sipp.kill();
    target.kill();
    await Promise.all([sipp.done, target.done]);
    target.cleanup();
    await agent.close();
  }
}

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

/** A call from a sipp caller to the agent, with a sipp UAS as the transfer target. */
interface SippPair {
  call: SipCall;
  rig: ReturnType<typeof callControlRig>;
  targetUri: string;
  logger: Awaited<ReturnType<typeof startAgent>>["logger"];
  /** Both sipps' exit codes must be 0 (each scenario ran through). */
  bothPassed(): Promise<void>;
}

/**
 * Run `body` on a call from sipp running `callerScenario` (it plays bridge_tone.pcap where the
 * scenario says) to the agent, with a sipp UAS echoing RTP on `targetScenario` to transfer to.
 */
async function withSippPair(
  callerScenario: string,
  targetScenario: string,
  body: (p: SippPair) => Promise<void>,
  caller: { extra?: string[]; ip?: string; agent?: SipAgentOptions } = {},
): Promise<void> {
  const { agent, logger } = await startAgent({
    transfer: { briefingWaitMs: 3000 },
    ...caller.agent,
  });
  const dir = `${Deno.cwd()}/.tmp/sipp-bridge-${crypto.randomUUID()}`;
  Deno.mkdirSync(dir, { recursive: true });
  Deno.writeFileSync(`${dir}/bridge_tone.pcap`, pcmuPcap(sine8k(8000 * 1.5, TARGET_HZ)));
  const targetPort = freeUdpPort();
  const target = runSipp(sippUasEchoArgs(targetScenario, targetPort), dir, "20s");
  const callerArgs = sippArgs(callerScenario, agent.local.port, caller.extra, caller.ip);
  const callerSipp = runSipp(callerArgs, dir, "20s");
  let watchdog: ReturnType<typeof setTimeout> | undefined;
  try {
    const invite = await agent.nextInbound();
    assert.ok(invite !== undefined);
    const call = await invite.answer();
    // A transfer that went wrong leaves the call up: end it rather than hang the test.
    watchdog = setTimeout(() => void call.hangup(), 20_000);
    const bothPassed = async () => {
      for (const [who, run] of [["caller", callerSipp], ["target", target]] as const) {
        const res = await run.done;
        assert.equal(res.code, 0, `${who}: ${res.stdout.slice(-2000)}${res.stderr.slice(-500)}`);
      }
    };
    const rig = callControlRig(call.transport);
    await body({ call, rig, targetUri: `sip:desk@127.0.0.1:${targetPort}`, logger, bothPassed });
  } finally {
    clearTimeout(watchdog);
    callerSipp.kill();
    target.kill();
    await Promise.all([callerSipp.done, target.done]);
    Deno.removeSync(dir, { recursive: true });
    await agent.close();
  }
}

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
