/**
 * Test rig for transfers where the agent dials the target itself, against real peers on
 * loopback: an agent, a sipp caller, and baresip or a sipp UAS as the target; tones that tell
 * the target's, the agent's and a briefing's audio apart.
 */

import assert from "node:assert/strict";
import { type AudioFrame, makeFrame } from "../mod.ts";
import type { SipAgentOptions, SipCall } from "../telephony/sip/mod.ts";
import { type Baresip, hasBaresip, startBaresip } from "./_baresip.ts";
import { callControlRig } from "./_call_control_rig.ts";
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
import { toneWindowFlags } from "./_tone.ts";

/** The target's tone (baresip's microphone). */
export const TARGET_HZ = 600;
/** The agent's own voice in these calls: it must stop at the bridge. */
export const AGENT_HZ = 1000;
/** The briefing the "model" speaks to the target in a warm transfer. */
export const BRIEFING_HZ = 1400;

/** True when sipp or baresip is missing here. */
export const skip: boolean = !hasSipp() || !hasBaresip();

/** An agent on loopback with a trunk nobody answers (transfer targets are SIP URIs). */
export const startAgent = (opts: SipAgentOptions = {}) =>
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
export function speech(hz: number, seconds: number) {
  const audio: AudioFrame = { pcm: sine8k(8000 * seconds, hz), sampleRate: 8000, numChannels: 1 };
  return makeFrame("OutputAudio", { audio });
}

/** The index of the first 20 ms window that carries `hz`, or -1. */
export const firstWindow = (pcm: Int16Array, hz: number) => toneWindowFlags(pcm, hz).indexOf(true);

/** After the bridge, the agent's leg takes nothing more from the pipeline: a second of its tone. */
export async function agentKeepsTalking(call: SipCall): Promise<void> {
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
export interface BaresipCall {
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
export async function withBaresipTarget(
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

/** A call from a sipp caller to the agent, with a sipp UAS as the transfer target. */
export interface SippPair {
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
export async function withSippPair(
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
