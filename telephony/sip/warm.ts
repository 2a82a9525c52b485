/**
 * Warm-up of what a SIP call's media path compiles or builds on first use: the resampler's
 * WebAssembly kernel (compiled synchronously once per isolate), its filter banks for the rates
 * calls use, and the G.711 tables. Done once at agent start, so the first call's audio is not
 * held up while it happens (that stall showed as a gap in the first call's outbound RTP).
 * @module
 */

import { alawDecode, alawEncode, ulawDecode, ulawEncode } from "../../core/audio/g711.ts";
import { Resampler } from "../../core/audio/resample.ts";
import { SIP_CARRIER_RATE } from "./sip_transport.ts";

/** Pipeline rates a SIP leg meets: 16 kHz model input, 16/24/22.05 kHz model and TTS output. */
const RATES = [16000, 24000, 22050, 48000];

let warmed = false;

/** Run the media path once on silence; idempotent and cheap after the first call. */
export function warmSipMedia(): void {
  if (warmed) return;
  warmed = true;
  const frame = new Int16Array(SIP_CARRIER_RATE / 50);
  ulawDecode(ulawEncode(frame));
  alawDecode(alawEncode(frame));
  for (const rate of RATES) {
    new Resampler(rate, SIP_CARRIER_RATE, { transition: "centered" }).process(
      new Int16Array(rate / 50),
    );
    new Resampler(SIP_CARRIER_RATE, rate).process(frame);
  }
}
