/**
 * SRTP benchmark (`deno task bench --only srtp`): what encrypting one call's media costs per
 * 20 ms G.711 packet (172 bytes of RTP), for both SDES suites: protect (encrypt + tag), unprotect
 * (replay check, tag check, decrypt), and both together, which is what one call pays per packet
 * each way. Packets are timed in batches of 500 (a single packet is below the timer's
 * resolution); the percentiles are across batches of per-packet means, in microseconds.
 *
 * Run alone: `deno run --allow-read=. bench/srtp.ts` (prints JSON), or call
 * {@link runSrtpBench} from bench/main.ts.
 * @module
 */

import { RtpSender } from "../core/rtp.ts";
import { SrtpContext, type SrtpSuite } from "../telephony/sip/srtp.ts";
import { newSrtpKey } from "../telephony/sip/sdes.ts";
import { percentile } from "./core.ts";

const BATCH = 500;

/** p50 / p99 of `xs` (us), rounded to 4 significant digits. */
function p(xs: readonly number[]): { p50: number; p99: number; runs: number } {
  const r = (x: number) => Number(x.toPrecision(4));
  return { p50: r(percentile(xs, 50)), p99: r(percentile(xs, 99)), runs: xs.length };
}

/** Per-packet microseconds of one suite: protect, unprotect, and the two together. */
function benchSuite(suite: SrtpSuite, batches: number): Record<string, unknown> {
  const key = newSrtpKey(suite);
  const tx = new SrtpContext(key);
  const rx = new SrtpContext(key);
  const sender = new RtpSender({ payloadType: 0 });
  const payload = new Uint8Array(160).map((_, i) => (i * 37) & 0xff);
  const wire: Uint8Array[] = Array.from({ length: BATCH }, () => new Uint8Array(0));
  const protect: number[] = [];
  const unprotect: number[] = [];
  const both: number[] = [];
  let dropped = 0;
  for (let b = 0; b < batches + 5; b++) {
    const t0 = performance.now();
    for (let i = 0; i < BATCH; i++) wire[i] = tx.protect(sender.audio(payload)).slice();
    const t1 = performance.now();
    for (let i = 0; i < BATCH; i++) if (rx.unprotect(wire[i]) === undefined) dropped++;
    const t2 = performance.now();
    if (b < 5) continue; // warm-up: let the JIT settle
    // slice() is the copy the UDP endpoint makes anyway; it is counted in protect.
    protect.push(((t1 - t0) * 1000) / BATCH);
    unprotect.push(((t2 - t1) * 1000) / BATCH);
    both.push(((t2 - t0) * 1000) / BATCH);
  }
  if (dropped > 0) throw new Error(`srtp bench: ${dropped} packets failed to unprotect`);
  return {
    packet_bytes: 12 + 160,
    protect_us: p(protect),
    unprotect_us: p(unprotect),
    protect_plus_unprotect_us: p(both),
  };
}

/** Both suites; `quick` runs fewer batches. */
export function runSrtpBench(quick: boolean): Record<string, unknown> {
  const batches = quick ? 40 : 200;
  return {
    goal_us: 10,
    AES_CM_128_HMAC_SHA1_80: benchSuite("AES_CM_128_HMAC_SHA1_80", batches),
    AES_CM_128_HMAC_SHA1_32: benchSuite("AES_CM_128_HMAC_SHA1_32", batches),
  };
}

if (import.meta.main) console.log(JSON.stringify(runSrtpBench(false), null, 2));
