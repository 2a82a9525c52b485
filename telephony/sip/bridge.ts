/**
 * An in-process bridge between two SIP calls (a transfer's caller and target): each leg's
 * decoded audio is sent on the other leg in that leg's own codec (so PCMU on one side and PCMA
 * on the other is rewritten, and the same codec passes through unchanged in sound), and each
 * RFC 4733 key press is sent on as a new event (as in-band tones when the other leg negotiated
 * no telephone-event). The agent leaves the media path: its transports send nothing more, and
 * closing them no longer hangs up. A BYE on either leg hangs up the other.
 * @module
 */

import { dtmfTones } from "../../core/audio/dtmf_tone.ts";
import { errorMessage } from "../../core/errors.ts";
import type { KeypadEntry } from "../../core/frames.ts";
import type { Logger } from "../../core/log.ts";
import type { SipLeg } from "./call_leg.ts";

/** What a bridge relayed so far, each way. */
export interface BridgeStats {
  /** 20 ms audio frames from the first leg to the second. */
  framesAToB: number;
  /** 20 ms audio frames from the second leg to the first. */
  framesBToA: number;
  /** Key presses from the first leg to the second. */
  keysAToB: number;
  /** Key presses from the second leg to the first. */
  keysBToA: number;
}

/** Two calls whose media is relayed to each other. */
export interface CallBridge {
  /** Relay counters. */
  readonly stats: BridgeStats;
  /** Resolves once both legs are over (a BYE on one hangs up the other). */
  readonly ended: Promise<void>;
}

/** Bridge `a` and `b`: relay media both ways until either hangs up, then hang up the other. */
export function bridgeCalls(a: SipLeg, b: SipLeg, log: Logger): CallBridge {
  const stats: BridgeStats = { framesAToB: 0, framesBToA: 0, keysAToB: 0, keysBToA: 0 };
  a.transport.route(undefined);
  b.transport.route(undefined);
  relay(a, b, () => stats.framesAToB++, () => stats.keysAToB++);
  relay(b, a, () => stats.framesBToA++, () => stats.keysBToA++);
  log.info("sip calls bridged", {
    callId: a.callId,
    targetCallId: b.callId,
    codec: a.media.codec,
    targetCodec: b.media.codec,
  });
  const ended = Promise.race([
    a.ended.then((why) => ({ gone: a, other: b, why })),
    b.ended.then((why) => ({ gone: b, other: a, why })),
  ]).then(async ({ gone, other, why }) => {
    const side = gone === a ? "caller" : "target";
    await other.hangup(`bridged ${side} hung up`).catch((err) =>
      log.warn("sip bridge: hanging up the other leg failed", {
        callId: other.callId,
        err: errorMessage(err),
      })
    );
    log.info("sip bridge ended", { callId: a.callId, first: side, reason: why, ...stats });
  });
  return { stats, ended };
}

/** Send what `from` receives on `to`, in `to`'s codec. */
function relay(from: SipLeg, to: SipLeg, onFrame: () => void, onKey: () => void): void {
  from.rtp.redirect({
    onAudio: (pcm) => {
      onFrame();
      to.rtp.sendPcm8k(pcm);
    },
    onDtmf: (key: KeypadEntry) => {
      onKey();
      if (to.media.telephoneEventPt === undefined) {
        to.rtp.sendPcm8k(dtmfTones([key], { sampleRate: 8000, toneMs: 100, gapMs: 60 }));
        return;
      }
      to.rtp.sendDtmf([key]).catch(() => {}); // the leg closed meanwhile: nothing to send on
    },
  });
}
