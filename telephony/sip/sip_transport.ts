/**
 * The {@link MediaTransport} of one SIP call: StreamStart{callId} first, then 8 kHz audio and
 * RFC 4733 key presses from the {@link RtpSession}, then Stop when the dialog ends (BYE either
 * side). `sendAudio` takes any rate and resamples to 8 kHz; `sendClear` drops what is queued for
 * the 20 ms RTP clock (RTP cannot recall what was sent); `close()` hangs the call up (sends BYE).
 * A transfer can route the agent's audio elsewhere (a warm transfer's target) or nowhere (the
 * call is bridged to the target: the agent's frames stop, and `close()` no longer hangs up).
 *
 * @example
 * ```ts
 * import type { SipInvite } from "@flowcat/flowcat/sip";
 * declare const invite: SipInvite;
 * declare const pcm: Int16Array;
 * const call = await invite.answer();
 * const m = await call.transport.recv(); // { type: "start", callId }
 * await call.transport.sendAudio({ pcm, sampleRate: 24000, numChannels: 1 });
 * await call.transport.close(); // BYE
 * ```
 * @module
 */

import { Resampler } from "../../core/audio/resample.ts";
import type { AudioFrame, KeypadEntry, TransferOutcome } from "../../core/frames.ts";
import type { MediaIn, MediaTransport, WarmTransferOptions } from "../../core/seams.ts";
import { AsyncQueue } from "./async_queue.ts";
import type { RtpSession } from "./rtp_session.ts";
import type { DtmfSendOptions } from "./rtp_session_types.ts";

/** Inbound events kept while nobody reads (10 s of 20 ms packets); older ones are dropped. */
const MAX_QUEUED = 500;

/** The telephony sample rate of every SIP leg. */
export const SIP_CARRIER_RATE = 8000;

/** What a leg's transfers run (the call's REFER, its dialled second leg). */
export interface SipTransferHooks {
  /** A cold transfer (REFER, or the bridge it falls back to). */
  transfer(target: string): Promise<TransferOutcome>;
  /** A warm transfer (second leg, briefing, bridge). */
  warmTransfer?(target: string, opts: WarmTransferOptions): Promise<TransferOutcome>;
}

/** A SIP call's media leg. */
export class SipMediaTransport implements MediaTransport {
  /** The call's SIP Call-ID (also the StreamStart callId). */
  readonly callId: string;
  readonly #rtp: RtpSession;
  readonly #hangup: () => Promise<void>;
  readonly #hooks: SipTransferHooks | undefined;
  readonly #queue = new AsyncQueue<MediaIn>(MAX_QUEUED);
  /** Where the agent's audio goes: the call's RTP, a transfer target's, or nowhere (bridged). */
  #out: RtpSession | undefined;
  #lastSentAt = -Infinity;
  #resampler: Resampler | undefined;
  #stopped = false;

  /**
   * Wrap `rtp`; `hangup` is what {@link close} runs (send BYE, end the call), `hooks` what
   * {@link transfer} and {@link warmTransfer} run.
   */
  constructor(
    callId: string,
    rtp: RtpSession,
    hangup: () => Promise<void>,
    hooks?: SipTransferHooks,
  ) {
    this.callId = callId;
    this.#rtp = rtp;
    this.#out = rtp;
    this.#hangup = hangup;
    this.#hooks = hooks;
    this.#queue.push({ type: "start", callId });
  }

  /**
   * Send the agent's audio to `rtp` from now on (a warm transfer's target while it is briefed),
   * or to nobody (`undefined`: the call is bridged and the agent has left the media path).
   */
  route(rtp: RtpSession | undefined): void {
    this.#out?.clearOutbound();
    this.#out = rtp;
  }

  /** True once the call was handed to a bridge: closing the leg no longer hangs up. */
  get detached(): boolean {
    return this.#out === undefined;
  }

  /** performance.now() of the last audio the agent sent (-Infinity: none yet). */
  get lastSentAt(): number {
    return this.#lastSentAt;
  }

  /** Inbound events dropped because nobody was reading. */
  get droppedInbound(): number {
    return this.#queue.dropped;
  }

  /**
   * Media dropped so far, by reason: `overflow` (inbound nobody read in time), `late` (packets
   * too late for the jitter buffer, or duplicates), `jitter_discard` (buffered packets discarded
   * to keep the delay bounded), `barge_in` (queued bot audio cleared before it was sent).
   */
  droppedMedia(): Record<string, number> {
    const s = this.#rtp.stats;
    return {
      overflow: this.#queue.dropped,
      late: s.late,
      jitter_discard: s.discarded,
      barge_in: this.#rtp.pacing?.cleared ?? 0,
    };
  }

  /** Deliver decoded inbound audio (called by the call). */
  pushAudio(pcm: Int16Array): void {
    this.#queue.push({
      type: "audio",
      audio: { pcm, sampleRate: SIP_CARRIER_RATE, numChannels: 1 },
    });
  }

  /** Deliver an inbound key press (called by the call). */
  pushDtmf(key: KeypadEntry): void {
    this.#queue.push({ type: "dtmf", key });
  }

  /** The dialog ended: queue Stop, after which recv() returns undefined. */
  stop(): void {
    if (this.#stopped) return;
    this.#stopped = true;
    this.#queue.push({ type: "stop" });
    this.#queue.end();
  }

  /** Next StreamStart / Audio / DTMF / Stop; undefined after Stop. */
  recv(): Promise<MediaIn | undefined> {
    return this.#queue.next();
  }

  /** Resample to 8 kHz when needed and queue as 20 ms G.711 packets for the RTP clock. */
  sendAudio(audio: AudioFrame): Promise<void> {
    if (this.#stopped) return Promise.resolve();
    let pcm = audio.pcm;
    if (audio.sampleRate !== SIP_CARRIER_RATE) {
      if (this.#resampler?.inRate !== audio.sampleRate) {
        this.#resampler = new Resampler(audio.sampleRate, SIP_CARRIER_RATE, {
          transition: "centered", // G.711 at 8 kHz: see transitionFor
        });
      }
      // Lent: sendPcm8k copies the samples into its packets at once.
      pcm = this.#resampler.processLent(pcm);
    }
    const out = this.#out;
    if (out === undefined) return Promise.resolve();
    this.#lastSentAt = performance.now();
    out.sendPcm8k(pcm);
    return Promise.resolve();
  }

  /** Send key presses as RFC 4733 events (the pipeline's OutputDtmf). */
  sendDtmf(keys: readonly KeypadEntry[], opts?: DtmfSendOptions): Promise<void> {
    return this.#out === undefined ? Promise.resolve() : this.#out.sendDtmf(keys, opts);
  }

  /**
   * Whether the leg the agent's audio goes to agreed to telephone-events (during a warm
   * transfer's briefing, the target's); without them the keys go in-band.
   */
  canSendDtmf(): boolean {
    return (this.#out ?? this.#rtp).media?.telephoneEventPt !== undefined;
  }

  /** Cold transfer by REFER (the pipeline's TransferCall); refused when the leg has none. */
  transfer(target: string): Promise<TransferOutcome> {
    if (this.#hooks === undefined) {
      return Promise.resolve({ ok: false, refused: true, reason: "this leg cannot transfer" });
    }
    return this.#hooks.transfer(target);
  }

  /** Warm transfer (a TransferCall with mode `warm`); refused when the leg has none. */
  warmTransfer(target: string, opts: WarmTransferOptions): Promise<TransferOutcome> {
    if (this.#hooks?.warmTransfer === undefined) {
      return Promise.resolve({ ok: false, refused: true, reason: "this leg cannot transfer" });
    }
    return this.#hooks.warmTransfer(target, opts);
  }

  /**
   * Barge-in: drop the audio queued for the RTP clock but not sent yet. What the far end has
   * already received plays out (RTP has no way to recall it), at most the pipeline's short lead.
   */
  sendClear(): Promise<void> {
    this.#out?.clearOutbound();
    return Promise.resolve();
  }

  /** 8000. */
  carrierRate(): number {
    return SIP_CARRIER_RATE;
  }

  /**
   * Hang up (BYE) and end the leg; idempotent. Once bridged, the call is the bridge's: only the
   * leg ends (the pipeline is done with it).
   */
  close(): Promise<void> {
    if (this.detached) {
      this.stop();
      return Promise.resolve();
    }
    return this.#hangup();
  }
}
