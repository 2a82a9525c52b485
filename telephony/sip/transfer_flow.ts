/**
 * Transfers that take the agent's own second leg, as the pipeline runs them on a SIP call:
 *
 * - **Cold, with fallback:** REFER first (telephony/sip/refer.ts). When the peer answers the
 *   REFER with a refusal (405, 501, 403, ...) or reports that its own call to the target failed
 *   (a final sipfrag of 300 or above), the agent dials the target itself and bridges the two
 *   calls in process (telephony/sip/bridge.ts). A REFER that got no answer at all does not fall
 *   back: a peer that does not answer would not carry a bridged call either.
 * - **Warm:** the agent dials the target; once it answers, the caller is on hold (it hears
 *   silence, or the policy's hold audio, and is not heard), the agent's voice goes to the target and the target's to the
 *   agent, so the briefing is spoken by the call's own model or TTS. Once the briefing has
 *   played (the agent went quiet after speaking), the caller and the target are bridged.
 * @module
 */

import { errorMessage } from "../../core/errors.ts";
import type { TransferOutcome } from "../../core/frames.ts";
import type { WarmTransferOptions } from "../../core/seams.ts";
import { bridgeCalls } from "./bridge.ts";
import { playOnHold } from "./hold_audio.ts";
import type { CallHost, SipLeg, SipTransferPolicy, TransferOptions } from "./call_leg.ts";

export type { SipTransferPolicy } from "./call_leg.ts";

/** The defaults of {@link SipTransferPolicy}. */
export const SIP_TRANSFER_DEFAULTS: Readonly<Required<SipTransferPolicy>> = Object.freeze({
  bridgeFallback: true,
  dialTimeoutMs: 30_000,
  briefingQuietMs: 700,
  briefingWaitMs: 10_000,
  briefingMaxMs: 60_000,
  holdAudio: new Int16Array(0),
  onBridge: () => {},
});

/** The second leg, once it answered, or why not. */
type Dialled = { ok: true; leg: SipLeg } | { ok: false; reason: string };

/** Dial `target` for `call`, preferring the caller's codec; gives up after `dialTimeoutMs`. */
async function dialLeg(call: SipLeg, host: CallHost, target: string): Promise<Dialled> {
  if (host.dial === undefined) return { ok: false, reason: "this agent cannot dial out" };
  const policy = { ...SIP_TRANSFER_DEFAULTS, ...host.transferPolicy };
  const abort = new AbortController();
  const timer = setTimeout(() => abort.abort(), policy.dialTimeoutMs);
  // The caller hanging up while the target rings cancels the second leg.
  void call.ended.then(() => abort.abort());
  try {
    const leg = await host.dial(target, { signal: abort.signal, codec: call.media.codec });
    if (call.endReason !== undefined) {
      await leg.hangup();
      return { ok: false, reason: "the caller hung up during the transfer" };
    }
    return { ok: true, leg };
  } catch (err) {
    const why = abort.signal.aborted && call.endReason === undefined
      ? `no answer in ${policy.dialTimeoutMs} ms`
      : errorMessage(err);
    return { ok: false, reason: call.endReason !== undefined ? "the caller hung up" : why };
  } finally {
    clearTimeout(timer);
  }
}

/** Bridge `call` and `leg` (the bridge then lives until either hangs up), and say so. */
function bridged(call: SipLeg, leg: SipLeg, host: CallHost): TransferOutcome {
  const bridge = bridgeCalls(call, leg, host.log);
  host.transferPolicy?.onBridge?.(bridge.ended);
  return { ok: true, status: 200, bridged: true };
}

/** A cold transfer: REFER, then (see the module doc) the agent's own call to the target, bridged. */
export async function coldTransfer(
  call: SipLeg,
  host: CallHost,
  target: string,
  opts: TransferOptions = {},
): Promise<TransferOutcome> {
  const referred = await call.transfer(target, opts);
  const fallback = host.transferPolicy?.bridgeFallback ?? SIP_TRANSFER_DEFAULTS.bridgeFallback;
  if (referred.ok || referred.status === undefined || !fallback || call.endReason !== undefined) {
    return referred;
  }
  host.log.info("sip transfer falls back to a bridge", {
    callId: call.callId,
    status: referred.status,
  });
  const dialled = await dialLeg(call, host, target);
  if (!dialled.ok) {
    return { ...referred, reason: `${referred.reason}; calling it ourselves: ${dialled.reason}` };
  }
  return bridged(call, dialled.leg, host);
}

/** A warm transfer: second leg, briefing, bridge (see the module doc). */
export async function warmTransfer(
  call: SipLeg,
  host: CallHost,
  target: string,
  opts: WarmTransferOptions,
): Promise<TransferOutcome> {
  if (call.endReason !== undefined) return { ok: false, reason: "the call has ended" };
  const dialled = await dialLeg(call, host, target);
  if (!dialled.ok) return { ok: false, reason: `calling the target failed: ${dialled.reason}` };
  const leg = dialled.leg;
  // Consulting: the caller hears silence (the RTP clock sends it when nothing is queued) and
  // is not heard; the agent and the target hear each other.
  call.rtp.redirect({ onAudio: () => {}, onDtmf: () => {} });
  leg.rtp.redirect({
    onAudio: (pcm) => call.transport.pushAudio(pcm),
    onDtmf: (key) => call.transport.pushDtmf(key),
  });
  call.transport.route(leg.rtp);
  const stopHold = playOnHold(call.rtp, host.transferPolicy?.holdAudio ?? new Int16Array(0));
  host.log.info("sip warm transfer: briefing the target", {
    callId: call.callId,
    targetCallId: leg.callId,
  });
  const since = performance.now();
  opts.onConsulting();
  const after = await briefingPlayed(call, leg, host, since, opts.brief);
  stopHold();
  if (after === "caller gone") {
    await leg.hangup();
    return { ok: false, reason: "the caller hung up during the transfer" };
  }
  if (after === "target gone") {
    // Back to the caller: the agent can tell it the transfer did not work.
    call.transport.route(call.rtp);
    call.rtp.redirect(call.agentMedia());
    return { ok: false, reason: "the target hung up before the caller was connected" };
  }
  return bridged(call, leg, host);
}

/** Waits until the agent spoke to the target and went quiet (or either side hung up). */
function briefingPlayed(
  call: SipLeg,
  leg: SipLeg,
  host: CallHost,
  since: number,
  brief: boolean,
): Promise<"played" | "caller gone" | "target gone"> {
  const p = { ...SIP_TRANSFER_DEFAULTS, ...host.transferPolicy };
  return new Promise((resolve) => {
    const check = () => {
      if (call.endReason !== undefined) return "caller gone";
      if (leg.endReason !== undefined) return "target gone";
      if (!brief) return "played";
      const now = performance.now();
      const last = call.transport.lastSentAt;
      if (last > since && now - last >= p.briefingQuietMs) return "played";
      if (last <= since && now - since >= p.briefingWaitMs) {
        host.log.warn("sip warm transfer: no briefing was spoken; bridging", {
          callId: call.callId,
        });
        return "played";
      }
      return now - since >= p.briefingMaxMs ? "played" : undefined;
    };
    const first = check();
    if (first !== undefined) return resolve(first);
    const timer = setInterval(() => {
      const state = check();
      if (state === undefined) return;
      clearInterval(timer);
      resolve(state);
    }, 50);
  });
}
