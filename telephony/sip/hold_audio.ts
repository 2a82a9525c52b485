/**
 * Audio for a caller on hold (a warm transfer's consultation): a loop of 8 kHz PCM fed to the
 * call's RTP one 20 ms packet per tick of the shared RTP clock, so it is paced like the call's
 * own voice and needs no timer of its own.
 * @module
 */

import { SAMPLES_PER_20MS } from "../../core/rtp.ts";
import { joinRtpClock, leaveRtpClock } from "./rtp_clock.ts";
import type { RtpSession } from "./rtp_session.ts";

/** Play `pcm` (8 kHz mono) to `rtp` in a loop until the returned function is called. */
export function playOnHold(rtp: RtpSession, pcm: Int16Array): () => void {
  if (pcm.length === 0) return () => {};
  let at = 0;
  const frame = new Int16Array(SAMPLES_PER_20MS);
  const tick = () => {
    if (rtp.closed) return leaveRtpClock(tick);
    for (let i = 0; i < frame.length; i++) frame[i] = pcm[(at + i) % pcm.length];
    at = (at + frame.length) % pcm.length;
    rtp.sendPcm8k(frame); // encoded into the packet at once: the frame can be reused
  };
  joinRtpClock(tick);
  return () => leaveRtpClock(tick);
}
