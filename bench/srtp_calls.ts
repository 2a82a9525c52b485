/**
 * SRTP calls benchmark (`deno task bench --only srtp_calls`): the CPU one SIP call's media costs
 * per 20 ms frame with SRTP on and off, through the real RTP session code. N pairs of
 * RtpSessions on 127.0.0.1 exchange G.711 both ways on the shared 20 ms clock (every session
 * sends a packet each tick, voice or silence, and plays out what it receives through the jitter
 * buffer), with RTCP on the port above; with SRTP each packet is protected and authenticated and
 * the reports are SRTCP. Rounds alternate plain and SRTP so machine load drifts hit both alike;
 * CPU is the process's user + system time over each round, divided by the frames (packets sent
 * and received) in it.
 *
 * Run alone: `deno run --allow-net=127.0.0.1 --allow-read=. bench/srtp_calls.ts` (prints JSON),
 * or call {@link runSrtpCallsBench} from bench/main.ts.
 * @module
 */

import process from "node:process";
import { RtpSession } from "../telephony/sip/rtp_session.ts";
import type { NegotiatedMedia } from "../telephony/sip/sdp.ts";
import { newSrtpKey } from "../telephony/sip/sdes.ts";
import { percentile } from "./core.ts";

const PORT_BASE = 30000;
const PORT_TRIES = 8000;

function media(port: number, srtp: NegotiatedMedia["srtp"]): NegotiatedMedia {
  return {
    codec: "PCMU",
    payloadType: 0,
    telephoneEventPt: 101,
    remoteAddress: "127.0.0.1",
    remotePort: port,
    ptime: 20,
    remoteDirection: "sendrecv",
    localDirection: "sendrecv",
    hold: false,
    srtp,
  };
}

/** Open `pairs` pairs of sessions talking to each other, SRTP or not. */
function openCalls(pairs: number, srtp: boolean): RtpSession[] {
  const sessions: RtpSession[] = [];
  const none = { onAudio: () => {}, onDtmf: () => {} };
  for (let i = 0; i < pairs; i++) {
    const open = () =>
      RtpSession.open({ bindHost: "127.0.0.1", portBase: PORT_BASE, portTries: PORT_TRIES });
    const a = open();
    const b = open();
    const keys = srtp
      ? {
        send: newSrtpKey("AES_CM_128_HMAC_SHA1_80"),
        receive: newSrtpKey("AES_CM_128_HMAC_SHA1_80"),
      }
      : undefined;
    a.start(media(b.port, keys), none);
    b.start(media(a.port, keys && { send: keys.receive, receive: keys.send }), none);
    sessions.push(a, b);
  }
  return sessions;
}

function frames(sessions: readonly RtpSession[]): number {
  return sessions.reduce((n, s) => n + s.stats.packetsSent + s.stats.packetsReceived, 0);
}

function cpuUs(): number {
  const u = process.cpuUsage();
  return u.user + u.system;
}

/** One round: open the calls, let them settle, measure `seconds`, close. CPU us per frame. */
async function round(pairs: number, srtp: boolean, seconds: number): Promise<number> {
  const sessions = openCalls(pairs, srtp);
  try {
    await new Promise((r) => setTimeout(r, 500)); // latch, jitter buffers fill, JIT warms
    const f0 = frames(sessions);
    const c0 = cpuUs();
    await new Promise((r) => setTimeout(r, seconds * 1000));
    const cpu = cpuUs() - c0;
    const n = frames(sessions) - f0;
    if (srtp) {
      const bad = sessions.reduce((k, s) => k + s.stats.srtpAuthFailed + s.stats.srtpReplayed, 0);
      if (bad > 0) throw new Error(`srtp_calls bench: ${bad} SRTP packets dropped`);
    }
    if (n === 0) throw new Error("srtp_calls bench: no media flowed");
    return cpu / n;
  } finally {
    await Promise.all(sessions.map((s) => s.close()));
  }
}

/** Interleaved plain and SRTP rounds of `pairs` calls; `quick` runs fewer and shorter. */
export async function runSrtpCallsBench(
  quick: boolean,
  pairs = 20,
): Promise<Record<string, unknown>> {
  const rounds = quick ? 3 : 7;
  const seconds = quick ? 2 : 4;
  const plain: number[] = [];
  const srtp: number[] = [];
  for (let i = 0; i < rounds; i++) {
    // Alternate which goes first, so neither always follows the other's teardown.
    if (i % 2 === 0) {
      plain.push(await round(pairs, false, seconds));
      srtp.push(await round(pairs, true, seconds));
    } else {
      srtp.push(await round(pairs, true, seconds));
      plain.push(await round(pairs, false, seconds));
    }
  }
  const r = (x: number) => Number(x.toPrecision(4));
  const p50 = (xs: number[]) => r(percentile(xs, 50));
  return {
    calls: pairs,
    sessions: pairs * 2,
    rounds,
    seconds_per_round: seconds,
    frame: "one 20 ms G.711 packet sent or received by a session (RTCP included in the CPU)",
    plain_cpu_us_per_frame: { p50: p50(plain), runs: plain.map(r) },
    srtp_cpu_us_per_frame: { p50: p50(srtp), runs: srtp.map(r) },
    srtp_over_plain_ratio_p50: r(p50(srtp) / p50(plain)),
  };
}

if (import.meta.main) console.log(JSON.stringify(await runSrtpCallsBench(false), null, 2));
