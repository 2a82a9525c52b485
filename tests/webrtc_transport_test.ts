/**
 * WebRTC transport: a werift "browser" peer and the answerer in one process, on 127.0.0.1.
 *
 * werift leaves no timer or socket behind once both peers are closed (checked by running these
 * tests with the sanitizers on), so the sanitizers stay on.
 */

import assert from "node:assert/strict";
import { Buffer } from "node:buffer";
import {
  type RTCDataChannel,
  RTCPeerConnection,
  RTCRtpCodecParameters,
  type RTCRtpTransceiver,
} from "werift";
import { alawDecode, alawEncode, ulawDecode, ulawEncode } from "../core/audio/g711.ts";
import { OpusCodec } from "../core/audio/opus.ts";
import { sine } from "../core/audio/pcm.ts";
import { FlowcatError } from "../core/errors.ts";
import type { AudioFrame } from "../core/frames.ts";
import type { MediaIn } from "../core/seams.ts";
import { RtpSender } from "../core/rtp.ts";
import {
  answerWebRtcOffer,
  iceModeForHost,
  icePermissions,
  isLoopbackHost,
  missingIcePermissions,
  type WebRtcAnswerOptions,
  type WebRtcCodec,
  type WebRtcSession,
  withoutMdnsCandidates,
} from "../transports/webrtc.ts";
import { PcmuPacer, RtpPacer } from "../transports/webrtc_pacer.ts";
import { icePeerConfig } from "../transports/webrtc_ice.ts";
import { toneAmplitude } from "./_audio_helpers.ts";
import { sleep, until } from "./_core_helpers.ts";

/** One RTP packet the fake browser received, decoded with the negotiated codec. */
interface Got {
  seq: number;
  ts: number;
  marker: boolean;
  pt: number;
  pcm: Int16Array;
}

/** What the fake browser offers, in its order of preference. */
type Offered = "opus" | "pcmu" | "pcma";

const BROWSER_CODECS: Record<Offered, RTCRtpCodecParameters> = {
  opus: new RTCRtpCodecParameters({
    mimeType: "audio/opus",
    clockRate: 48000,
    channels: 2,
    payloadType: 111,
  }),
  pcmu: new RTCRtpCodecParameters({ mimeType: "audio/PCMU", clockRate: 8000, payloadType: 0 }),
  pcma: new RTCRtpCodecParameters({ mimeType: "audio/PCMA", clockRate: 8000, payloadType: 8 }),
};

/** One outgoing packet of {@link FakeBrowser.speak}: send it, drop it, or send it twice. */
type Fate = "send" | "drop" | "twice";

/**
 * A werift peer standing in for Chromium: offers Opus and PCMU by default (as Chromium does,
 * Opus first), opens "events", and speaks and hears whichever codec the answer chose.
 */
class FakeBrowser {
  readonly pc: RTCPeerConnection;
  readonly audio: RTCRtpTransceiver;
  readonly channel: RTCDataChannel;
  readonly got: Got[] = [];
  readonly messages: Record<string, unknown>[] = [];
  #codec: Offered | undefined;
  #opus: OpusCodec | undefined;
  #rtp: RtpSender | undefined;

  constructor(offered: readonly Offered[] = ["opus", "pcmu"]) {
    this.pc = new RTCPeerConnection({
      ...icePeerConfig("loopback"),
      codecs: { audio: offered.map((c) => BROWSER_CODECS[c]) },
    });
    this.audio = this.pc.addTransceiver("audio", { direction: "sendrecv" });
    this.channel = this.pc.createDataChannel("events");
    // One message carries one or more JSON events, newline-separated.
    this.channel.onMessage.subscribe((m) =>
      this.messages.push(...String(m).split("\n").map((line) => JSON.parse(line)))
    );
    this.pc.onTrack.subscribe((track) =>
      track.onReceiveRtp.subscribe((p) =>
        this.got.push({
          seq: p.header.sequenceNumber,
          ts: p.header.timestamp,
          marker: p.header.marker,
          pt: p.header.payloadType,
          pcm: this.#decode(new Uint8Array(p.payload)),
        })
      )
    );
  }

  /** Non-trickle offer: every candidate in the SDP. */
  async offer(): Promise<string> {
    await this.pc.setLocalDescription(await this.pc.createOffer());
    await until(() => this.pc.iceGatheringState === "complete", 5000, "browser gathering");
    return this.pc.localDescription!.sdp;
  }

  /** Apply the server's answer and take the codec it chose. */
  async accept(answerSdp: string): Promise<void> {
    await this.pc.setRemoteDescription({ type: "answer", sdp: answerSdp });
    const first = this.audio.codecs[0];
    this.#codec = first.mimeType.toLowerCase() === "audio/opus"
      ? "opus"
      : first.mimeType.toLowerCase() === "audio/pcma"
      ? "pcma"
      : "pcmu";
    this.#rtp = new RtpSender({ payloadType: first.payloadType });
    if (this.#codec === "opus") this.#opus = await OpusCodec.create();
  }

  /** The negotiated codec and its rate. */
  get codec(): Offered {
    return this.#codec!;
  }
  get rate(): number {
    return this.#codec === "opus" ? 48000 : 8000;
  }

  #decode(payload: Uint8Array): Int16Array {
    if (this.#codec === "opus") return this.#opus!.decode(payload);
    return this.#codec === "pcma" ? alawDecode(payload) : ulawDecode(payload);
  }

  /**
   * Send `pcm` (at {@link rate}) as 20 ms packets at real time. `fate(i)` may drop packet i or
   * send it twice; `swap` lists packet indexes sent after their successor (reordered).
   */
  async speak(
    pcm: Int16Array,
    opts: { fate?: (i: number) => Fate; swap?: readonly number[]; late?: readonly number[] } = {},
  ): Promise<void> {
    const n = this.rate / 50;
    const packets: Uint8Array[] = [];
    for (let i = 0; i + n <= pcm.length; i += n) {
      const frame = pcm.subarray(i, i + n);
      const payload = this.#codec === "opus"
        ? this.#opus!.encode(frame)
        : this.#codec === "pcma"
        ? alawEncode(frame)
        : ulawEncode(frame);
      packets.push(this.#rtp!.audio(payload, n).slice());
    }
    // werift drops what is sent before its own DTLS is up (the server may be up first).
    await until(() => this.pc.connectionState === "connected", 5000, "browser connected");
    const order = packets.map((_, i) => i);
    for (const i of opts.swap ?? []) [order[i], order[i + 1]] = [order[i + 1], order[i]];
    // A late packet goes out 15 packets (300 ms) after its turn: after its frame was played.
    for (const i of opts.late ?? []) order.splice(order.indexOf(i), 1), order.splice(i + 15, 0, i);
    // On an absolute schedule, as a browser's audio clock sends: 50 packets a second.
    const t0 = performance.now();
    for (const [k, i] of order.entries()) {
      const wait = t0 + k * 20 - performance.now();
      if (wait > 0) await sleep(wait);
      const fate = opts.fate?.(i) ?? "send";
      if (fate !== "drop") await this.audio.sender.sendRtp(Buffer.from(packets[i]));
      if (fate === "twice") await this.audio.sender.sendRtp(Buffer.from(packets[i]));
    }
    await sleep(20);
  }

  /** Everything received so far as one signal at {@link rate}. */
  receivedPcm(): Int16Array {
    const n = this.got.reduce((sum, g) => sum + g.pcm.length, 0);
    const out = new Int16Array(n);
    let o = 0;
    for (const g of this.got) out.set(g.pcm, o), o += g.pcm.length;
    return out;
  }

  async close(): Promise<void> {
    this.#opus?.close();
    await this.pc.close();
  }
}

async function connect(
  opts: WebRtcAnswerOptions = {},
  offered?: readonly Offered[],
): Promise<{ browser: FakeBrowser; session: WebRtcSession; answer: string }> {
  const browser = new FakeBrowser(offered);
  const { answerSdp, session } = await answerWebRtcOffer(await browser.offer(), {
    ice: "loopback",
    ...opts,
  });
  await browser.accept(answerSdp);
  return { browser, session, answer: answerSdp };
}

/** Read until `stop` (or end), collecting the audio; fails after `ms`. */
async function drain(session: WebRtcSession, ms = 5000): Promise<MediaIn[]> {
  const seen: MediaIn[] = [];
  const deadline = sleepAbortable(ms);
  try {
    for (;;) {
      const m = await Promise.race([session.recv(), deadline.promise]);
      if (m === "timeout") throw new Error("timed out waiting for stop");
      if (m === undefined) return seen;
      seen.push(m);
      if (m.type === "stop") return seen;
    }
  } finally {
    deadline.cancel();
  }
}

/** The next `n` inbound audio chunks (each checked to be audio); fails after `ms`. */
function audioChunks(session: WebRtcSession, n: number, ms = 10_000): Promise<AudioFrame[]> {
  return collectAudio(session, (got) => got >= n, `${n} audio chunks`, ms);
}

/**
 * Inbound audio until each of the `sent` frames is accounted for: played (or concealed), or
 * discarded by the jitter buffer to bound the delay, as it does when its playout clock fell
 * behind the sender (an event loop stalled on a busy machine). A frame that never arrives fails
 * it after `ms`.
 */
function playedOut(session: WebRtcSession, sent: number, ms = 10_000): Promise<AudioFrame[]> {
  return collectAudio(
    session,
    (got) => {
      const s = session.inboundStats;
      return got + s.discarded + (s.lost - s.concealed) >= sent;
    },
    `${sent} frames played or discarded`,
    ms,
  );
}

async function collectAudio(
  session: WebRtcSession,
  done: (got: number) => boolean,
  what: string,
  ms: number,
): Promise<AudioFrame[]> {
  const out: AudioFrame[] = [];
  const deadline = sleepAbortable(ms);
  try {
    while (!done(out.length)) {
      const m = await Promise.race([session.recv(), deadline.promise]);
      if (m === "timeout") {
        const stats = JSON.stringify(session.inboundStats);
        throw new Error(`timed out with ${out.length} audio chunks, waiting for ${what}: ${stats}`);
      }
      if (m?.type !== "audio") throw new Error(`expected audio, got ${JSON.stringify(m)}`);
      out.push(m.audio);
    }
    return out;
  } finally {
    deadline.cancel();
  }
}

function median(xs: number[]): number {
  const sorted = [...xs].sort((a, b) => a - b);
  return sorted[Math.floor(sorted.length / 2)];
}

function sleepAbortable(ms: number): { promise: Promise<"timeout">; cancel: () => void } {
  let timer: ReturnType<typeof setTimeout> | undefined;
  const promise = new Promise<"timeout">((r) => (timer = setTimeout(() => r("timeout"), ms)));
  return { promise, cancel: () => clearTimeout(timer) };
}

async function closeBoth(browser: FakeBrowser, session: WebRtcSession): Promise<void> {
  await session.close();
  await browser.close();
  // werift finishes its DTLS/SCTP shutdown a tick after close() resolves.
  await sleep(50);
}

Deno.test("webrtc: an offer with Opus gets Opus; wideband audio both ways, 960 a packet", async () => {
  const { browser, session, answer } = await connect({ callId: "web-opus" });
  try {
    // Opus (the browser's PT 111) first, PCMU kept as the fallback the browser may switch to.
    const mAudio = answer.match(/^m=audio \d+ \S+ (.*)$/m);
    assert.equal(mAudio?.[1].trim(), "111 0");
    assert.match(answer, /a=rtpmap:111 opus\/48000\/2/);
    assert.equal(browser.codec, "opus");

    assert.deepEqual(await session.recv(), { type: "start", callId: "web-opus" });
    assert.equal(session.codec, "opus");
    assert.equal(session.carrierRate(), 48000);

    // A 1 s greeting at the TTS rate (24 kHz) with a 5 kHz tone: beyond what G.711 can carry.
    await session.sendAudio({
      pcm: sine({ freq: 5000, sampleRate: 24000, samples: 24000, amplitude: 8000 }),
      sampleRate: 24000,
      numChannels: 1,
    });
    // The browser speaks 1 s of 440 Hz plus 6 kHz, at 48 kHz.
    const a = sine({ freq: 440, sampleRate: 48000, samples: 48000, amplitude: 6000 });
    const b = sine({ freq: 6000, sampleRate: 48000, samples: 48000, amplitude: 4000 });
    const spoken = a.map((x, i) => x + b[i]);
    const speaking = browser.speak(spoken);
    // Every packet arrives; a loaded machine may see a few discarded to keep the delay bounded.
    const inbound = await playedOut(session, 50);
    await speaking;
    const stats = session.inboundStats;
    assert.deepEqual(
      [stats.received, stats.lost, stats.late, stats.undecodable],
      [50, 0, 0, 0],
    );
    assert.equal(inbound.length + stats.discarded, 50);
    assert.ok(inbound.length >= 25, `${inbound.length} frames played`);
    for (const a of inbound) {
      assert.equal(a.sampleRate, 48000);
      assert.equal(a.pcm.length, 960);
    }
    // Tone levels frame by frame (a discarded frame breaks the phase of the whole), the median
    // of the frames past the codec's start and before its end.
    const level = (freq: number) =>
      median(inbound.slice(5, -5).map((a) => toneAmplitude(a.pcm, freq, 48000)));
    const at440 = level(440);
    const at6k = level(6000);
    assert.ok(at440 > 4800, `440 Hz amplitude ${at440}`);
    assert.ok(at6k > 3000, `6 kHz amplitude ${at6k} (wideband)`);
    assert.ok(level(5000) < 300, "no foreign tone in the inbound audio");

    // The greeting reached the browser as ~50 paced Opus packets, seq +1 and timestamp +960.
    await until(() => browser.got.length >= 48, 5000, "greeting packets");
    const got = browser.got;
    assert.ok(got.every((g) => g.pt === 111 && g.pcm.length === 960));
    for (let i = 1; i < got.length; i++) {
      assert.equal(got[i].seq, (got[i - 1].seq + 1) & 0xffff, `seq at ${i}`);
      assert.equal(got[i].ts, (got[i - 1].ts + 960) >>> 0, `ts at ${i}`);
    }
    assert.equal(got[0].marker, true);
    const out = browser.receivedPcm().subarray(4800, 43200);
    const at5k = toneAmplitude(out, 5000, 48000);
    assert.ok(at5k > 6000, `5 kHz greeting heard by the browser: ${at5k}`);
    assert.ok(toneAmplitude(out, 440, 48000) < 300);

    // After a pause, the next talkspurt skips the timestamp ahead and sets the marker.
    const before = got.length;
    await sleep(300);
    await session.sendAudio({
      pcm: sine({ freq: 1000, sampleRate: 48000, samples: 4800, amplitude: 8000 }),
      sampleRate: 48000,
      numChannels: 1,
    });
    await until(() => browser.got.length >= before + 5, 3000, "second talkspurt");
    const [last, next] = [browser.got[before - 1], browser.got[before]];
    assert.equal(next.seq, (last.seq + 1) & 0xffff);
    assert.equal(next.marker, true);
    assert.ok(((next.ts - last.ts) >>> 0) >= 960 * 10, `ts skipped ${next.ts - last.ts}`);
  } finally {
    await closeBoth(browser, session);
  }
});

Deno.test("webrtc: lost, reordered and repeated packets come out in order, losses concealed", async () => {
  // Three frames of playout delay, so the swapped pair is reordered in time on a loaded machine.
  const { browser, session } = await connect({ jitter: { minDelayMs: 60 } });
  try {
    assert.equal((await session.recv())?.type, "start");
    const tone = sine({ freq: 440, sampleRate: 48000, samples: 48000, amplitude: 8000 });
    const fate = (i: number) => (i === 10 || i === 30 ? "drop" : i === 40 ? "twice" : "send");
    const speaking = browser.speak(tone, { fate, swap: [20] });
    const frames = (await audioChunks(session, 50)).map((a) => a.pcm);
    await speaking;
    const stats = session.inboundStats;
    assert.equal(stats.received, 48, "each packet once (the repeat is not played again)");
    assert.equal(stats.lost, 2);
    assert.equal(stats.concealed, 2);
    assert.equal(stats.late, 0, "the swapped pair was put back in order in time");
    assert.ok(stats.duplicates <= 1, `duplicates ${stats.duplicates}`);
    // The two concealed frames continue the tone (Opus PLC), instead of a hole of silence.
    for (const k of [10, 30]) {
      const rmsK = Math.sqrt(frames[k].reduce((s, x) => s + x * x, 0) / frames[k].length);
      assert.ok(rmsK > 1000, `concealed frame ${k}: rms ${rmsK}`);
    }
    const heard = new Int16Array(50 * 960);
    frames.forEach((f, i) => heard.set(f, i * 960));
    const at440 = toneAmplitude(heard.subarray(960), 440, 48000);
    assert.ok(at440 > 6000, `440 Hz amplitude ${at440}`);
  } finally {
    await closeBoth(browser, session);
  }
});

Deno.test("webrtc: late packets and bot audio cleared by a barge-in count as dropped media", async () => {
  const { browser, session } = await connect({ jitter: { minDelayMs: 20, maxDelayMs: 60 } });
  try {
    assert.equal((await session.recv())?.type, "start");
    assert.deepEqual(session.droppedMedia(), {
      overflow: 0,
      late: 0,
      jitter_discard: 0,
      barge_in: 0,
    });
    const tone = sine({ freq: 440, sampleRate: 48000, samples: 48000, amplitude: 8000 });
    const speaking = browser.speak(tone, { late: [10, 25] });
    await audioChunks(session, 45);
    await speaking;
    await until(() => session.droppedMedia().late >= 2, 3000, "late packets counted");
    // A second of bot audio queued, then a barge-in clears it before most of it is sent.
    await session.sendAudio({
      pcm: sine({ freq: 1000, sampleRate: 48000, samples: 48000, amplitude: 8000 }),
      sampleRate: 48000,
      numChannels: 1,
    });
    await session.sendClear();
    const dropped = session.droppedMedia();
    assert.ok(dropped.barge_in >= 40 && dropped.barge_in <= 50, `cleared ${dropped.barge_in}`);
    assert.equal(dropped.late, 2, "each late packet once");
  } finally {
    await closeBoth(browser, session);
  }
});

Deno.test("webrtc: an offer without Opus falls back to PCMU, then PCMA", async () => {
  for (
    const [offered, codec, pt] of [[["pcmu", "pcma"], "pcmu", 0], [["pcma"], "pcma", 8]] as const
  ) {
    const { browser, session, answer } = await connect({}, offered);
    try {
      assert.doesNotMatch(answer, /opus/i);
      // Our order (PCMU before PCMA), limited to what was offered.
      assert.equal(
        answer.match(/^m=audio \d+ \S+ (.*)$/m)?.[1].trim(),
        codec === "pcmu" ? "0 8" : "8",
      );
      assert.equal((await session.recv())?.type, "start");
      assert.equal(session.codec, codec);
      assert.equal(session.carrierRate(), 8000);
      await session.sendAudio({
        pcm: sine({ freq: 1000, sampleRate: 24000, samples: 12000, amplitude: 8000 }),
        sampleRate: 24000,
        numChannels: 1,
      });
      await browser.speak(sine({ freq: 440, sampleRate: 8000, samples: 4000, amplitude: 8000 }));
      const inbound: Int16Array[] = [];
      for (const a of await audioChunks(session, 20)) {
        assert.equal(a.sampleRate, 8000);
        inbound.push(a.pcm);
      }
      const heard = new Int16Array(inbound.length * 160);
      inbound.forEach((p, i) => heard.set(p, i * 160));
      assert.ok(toneAmplitude(heard, 440, 8000) > 6000, `${codec}: 440 Hz heard by the server`);
      await until(() => browser.got.length >= 20, 3000, "greeting packets");
      assert.ok(browser.got.every((g) => g.pt === pt && g.pcm.length === 160));
      const out = browser.receivedPcm().subarray(400, 3000);
      assert.ok(toneAmplitude(out, 1000, 8000) > 6000, `${codec}: 1 kHz heard by the browser`);
    } finally {
      await closeBoth(browser, session);
    }
  }
});

Deno.test('webrtc: codecs ["pcmu"]: PCMU only in the answer, audio and events both ways, hangup stops', async () => {
  const pageMessages: Record<string, unknown>[] = [];
  const { browser, session, answer } = await connect({
    callId: "web-1",
    codecs: ["pcmu"],
    onPageMessage: (m) => pageMessages.push(m),
  });
  try {
    // Answer: PCMU (PT 0) is the only audio format, and it carries candidates (non-trickle).
    const mAudio = answer.match(/^m=audio \d+ \S+ (.*)$/m);
    assert.equal(mAudio?.[1].trim(), "0");
    assert.match(answer, /a=rtpmap:0 PCMU\/8000/);
    assert.doesNotMatch(answer, /opus/i);
    assert.match(answer, /a=candidate:.* 127\.0\.0\.1 \d+ typ host/);
    assert.match(answer, /m=application \d+ UDP\/DTLS\/SCTP/);

    assert.deepEqual(await session.recv(), { type: "start", callId: "web-1" });
    assert.equal(session.codec, "pcmu");
    assert.equal(session.carrierRate(), 8000);

    // The server sends a greeting at 16 kHz (resampled to 8 kHz) and an event before the
    // page's channel may be open: both must arrive.
    session.sendEvent({ type: "transcript", role: "bot", text: "hello", final: true });
    await session.sendAudio({
      pcm: sine({ freq: 1000, sampleRate: 16000, samples: 16000, amplitude: 8000 }),
      sampleRate: 16000,
      numChannels: 1,
    });

    // The browser speaks 1 s of a 440 Hz tone.
    await browser.speak(sine({ freq: 440, sampleRate: 8000, samples: 8000, amplitude: 8000 }));
    const inbound: Int16Array[] = [];
    for (const a of await audioChunks(session, 40)) {
      assert.equal(a.sampleRate, 8000);
      assert.equal(a.pcm.length, 160);
      inbound.push(a.pcm);
    }
    const heard = new Int16Array(inbound.length * 160);
    inbound.forEach((p, i) => heard.set(p, i * 160));
    const at440 = toneAmplitude(heard, 440, 8000);
    assert.ok(at440 > 6000, `440 Hz amplitude ${at440}`);
    assert.ok(toneAmplitude(heard, 1000, 8000) < 300, "no foreign tone in the inbound audio");

    // Our 1 s greeting reached the browser as ~50 paced packets with continuous seq / ts.
    await until(() => browser.got.length >= 48, 5000, "greeting packets");
    const got = browser.got;
    assert.ok(got.every((g) => g.pt === 0 && g.pcm.length === 160));
    for (let i = 1; i < got.length; i++) {
      assert.equal(got[i].seq, (got[i - 1].seq + 1) & 0xffff, `seq at ${i}`);
      assert.equal(got[i].ts, (got[i - 1].ts + 160) >>> 0, `ts at ${i}`);
    }
    assert.equal(got[0].marker, true);
    const out = browser.receivedPcm().subarray(400, 7600);
    assert.ok(toneAmplitude(out, 1000, 8000) > 6000, "1 kHz greeting heard by the browser");
    assert.ok(toneAmplitude(out, 440, 8000) < 300);

    // After a pause, the next talkspurt skips the timestamp ahead and sets the marker.
    const before = got.length;
    await sleep(300);
    await session.sendAudio({
      pcm: sine({ freq: 1000, sampleRate: 8000, samples: 800, amplitude: 8000 }),
      sampleRate: 8000,
      numChannels: 1,
    });
    await until(() => browser.got.length >= before + 5, 3000, "second talkspurt");
    const [last, next] = [browser.got[before - 1], browser.got[before]];
    assert.equal(next.seq, (last.seq + 1) & 0xffff);
    assert.equal(next.marker, true);
    assert.ok(((next.ts - last.ts) >>> 0) >= 160 * 10, `ts skipped ${next.ts - last.ts}`);

    // Events both ways; the hangup message ends the session with stop.
    await until(() => browser.messages.length >= 1, 3000, "event on the page");
    assert.deepEqual(browser.messages[0], {
      type: "transcript",
      role: "bot",
      text: "hello",
      final: true,
    });
    session.sendEvent({ type: "node", id: "greet" });
    await until(() => browser.messages.length >= 2, 3000, "second event");
    assert.deepEqual(browser.messages[1], { type: "node", id: "greet" });

    browser.channel.send(JSON.stringify({ type: "note", n: 1 }));
    browser.channel.send(JSON.stringify({ type: "hangup" }));
    const rest = await drain(session);
    assert.equal(rest.at(-1)?.type, "stop");
    assert.equal(await session.recv(), undefined);
    assert.equal(session.endReason, "hangup");
    assert.deepEqual(pageMessages, [{ type: "note", n: 1 }, { type: "hangup" }]);
    // After the end nothing more is sent or queued.
    await session.sendAudio({ pcm: new Int16Array(160), sampleRate: 8000, numChannels: 1 });
    assert.equal(session.queuedSamples, 0);
  } finally {
    await closeBoth(browser, session);
  }
});

Deno.test("webrtc: the browser closing its peer connection gives stop", async () => {
  const { browser, session } = await connect({ disconnectGraceMs: 500 });
  try {
    assert.equal((await session.recv())?.type, "start");
    // The page closes once its events channel is up (the server has seen the channel).
    session.sendEvent({ type: "state", state: "listening" });
    await until(() => browser.messages.length === 1, 3000, "events channel");
    await browser.pc.close();
    // Well before ICE consent (30 s) would expire: the SCTP abort closes the channel.
    const rest = await drain(session, 5000);
    assert.equal(rest.at(-1)?.type, "stop");
    assert.equal(session.endReason, "closed");
  } finally {
    await closeBoth(browser, session);
  }
});

Deno.test("webrtc: sendClear drops queued audio; close is idempotent and ends recv", async () => {
  const { browser, session } = await connect();
  try {
    assert.equal((await session.recv())?.type, "start");
    await session.sendAudio({
      pcm: sine({ freq: 500, sampleRate: 24000, samples: 24000 * 3, amplitude: 4000 }),
      sampleRate: 24000,
      numChannels: 1,
    });
    await until(() => browser.got.length >= 5, 3000, "first packets");
    assert.ok(session.queuedSamples > 8000, `queued ${session.queuedSamples}`);
    await session.sendClear();
    assert.equal(session.queuedSamples, 0);
    const sent = session.packetsSent;
    await sleep(200);
    assert.ok(session.packetsSent <= sent + 1, "nothing sent after clear");
    const pending = session.recv();
    await session.close();
    await session.close();
    assert.deepEqual(await pending, { type: "stop" });
    assert.equal(await session.recv(), undefined);
    assert.equal(session.endReason, "local");
    session.sendEvent({ type: "state", state: "late" }); // ignored, no throw
  } finally {
    await closeBoth(browser, session);
  }
});

Deno.test("webrtc: audio sent before the peer connects is kept for the connection", async () => {
  const browser = new FakeBrowser();
  const { answerSdp, session } = await answerWebRtcOffer(await browser.offer(), {
    ice: iceModeForHost("localhost"),
  });
  try {
    await session.sendAudio({
      pcm: sine({ freq: 1000, sampleRate: 8000, samples: 1600, amplitude: 8000 }),
      sampleRate: 8000,
      numChannels: 1,
    });
    // Kept at the negotiated codec's rate: Opus, 48 kHz.
    assert.equal(session.queuedSamples, 9600);
    await browser.accept(answerSdp);
    assert.equal((await session.recv())?.type, "start");
    await until(() => browser.got.length >= 10, 3000, "early audio");
  } finally {
    await closeBoth(browser, session);
  }
});

Deno.test("webrtc: a peer that never connects times out with stop", async () => {
  const browser = new FakeBrowser();
  const { session } = await answerWebRtcOffer(await browser.offer(), {
    ice: "loopback",
    connectTimeoutMs: 200,
  });
  try {
    assert.deepEqual(await drain(session), [{ type: "stop" }]);
    assert.equal(session.endReason, "timeout");
  } finally {
    await closeBoth(browser, session);
  }
});

Deno.test("webrtc: bad offers and codec choices are refused with FlowcatError", async () => {
  await assert.rejects(
    answerWebRtcOffer("hello", { ice: "loopback" }),
    (e) => e instanceof FlowcatError && e.kind === "protocol",
  );
  const opusOnly = "v=0\r\no=- 1 0 IN IP4 0.0.0.0\r\ns=-\r\nt=0 0\r\n" +
    "m=audio 9 UDP/TLS/RTP/SAVPF 111\r\na=rtpmap:111 opus/48000/2\r\n";
  await assert.rejects(
    answerWebRtcOffer(opusOnly, { ice: "loopback", codecs: ["pcmu"] }),
    (e) =>
      e instanceof FlowcatError && e.kind === "protocol" &&
      /no audio offering PCMU$/.test(e.message),
  );
  const g722Only = "v=0\r\no=- 1 0 IN IP4 0.0.0.0\r\ns=-\r\nt=0 0\r\n" +
    "m=audio 9 UDP/TLS/RTP/SAVPF 9\r\na=rtpmap:9 G722/8000\r\n";
  await assert.rejects(
    answerWebRtcOffer(g722Only, { ice: "loopback" }),
    (e) =>
      e instanceof FlowcatError && e.kind === "protocol" &&
      e.message.endsWith("no audio offering Opus, PCMU or PCMA"),
  );
  const browser = new FakeBrowser();
  try {
    const offer = await browser.offer();
    for (const codecs of [["pcmu", "g729"], [], ["opus", "opus"]]) {
      await assert.rejects(
        answerWebRtcOffer(offer, { ice: "loopback", codecs: codecs as WebRtcCodec[] }),
        (e) => e instanceof FlowcatError && e.kind === "config" && /webrtc\.codecs/.test(e.message),
        JSON.stringify(codecs),
      );
    }
    // Under the test task's flags the default "interfaces" mode lacks its permissions: a
    // clear error before werift starts (its wildcard bind would throw where nothing catches).
    const missing = missingIcePermissions("interfaces");
    if (missing.length > 0) {
      await assert.rejects(
        answerWebRtcOffer(offer),
        (e) => e instanceof FlowcatError && e.kind === "config" && e.message.includes(missing[0]),
      );
    }
  } finally {
    await browser.close();
    await sleep(50);
  }
});

Deno.test("webrtc ICE modes: loopback and pinned skip the interface scan", () => {
  assert.ok(isLoopbackHost("127.0.0.1") && isLoopbackHost("localhost") && isLoopbackHost("[::1]"));
  assert.ok(!isLoopbackHost("0.0.0.0") && !isLoopbackHost("example.com"));
  assert.equal(iceModeForHost("localhost"), "loopback");
  assert.deepEqual(iceModeForHost("192.0.2.10"), { address: "192.0.2.10" });
  assert.equal(iceModeForHost("0.0.0.0"), "interfaces");
  assert.equal(iceModeForHost(undefined), "interfaces");

  const loop = icePeerConfig("loopback");
  assert.deepEqual(loop.iceAdditionalHostAddresses, ["127.0.0.1"]);
  assert.deepEqual(loop.iceInterfaceAddresses, { udp4: "127.0.0.1" });
  assert.equal(loop.iceUseIpv4, false, "no os.networkInterfaces() call");
  const pinned = icePeerConfig({ address: "192.0.2.10" }, ["203.0.113.5"]);
  assert.deepEqual(pinned.iceAdditionalHostAddresses, ["192.0.2.10", "203.0.113.5"]);
  assert.deepEqual(pinned.iceInterfaceAddresses, { udp4: "192.0.2.10" });
  const all = icePeerConfig("interfaces");
  assert.equal(all.iceUseIpv4, true);
  // No loopback candidate beside the interfaces: browsers never pair with it.
  assert.equal(all.iceAdditionalHostAddresses, undefined);
  assert.deepEqual(icePeerConfig("interfaces", ["203.0.113.5"]).iceAdditionalHostAddresses, [
    "203.0.113.5",
  ]);
  assert.equal(all.iceInterfaceAddresses, undefined);

  assert.deepEqual(icePermissions("loopback"), { net: ["127.0.0.1"], sys: [] });
  assert.deepEqual(icePermissions("interfaces"), { net: null, sys: ["networkInterfaces"] });
  assert.deepEqual(icePermissions({ address: "192.0.2.10" }), { net: null, sys: [] });
});

Deno.test("PcmuPacer: 20 ms packets, partial packets padded, clear empties the queue", async () => {
  const packets: Uint8Array[] = [];
  const pacer = new PcmuPacer((p) => packets.push(p.slice()), { sequence: 65535, timestamp: 100 });
  try {
    pacer.push(new Int16Array(160 * 3 + 40).fill(1000));
    await until(() => packets.length === 4, 2000, "four packets");
    const seqs = packets.map((p) => (p[2] << 8) | p[3]);
    assert.deepEqual(seqs, [65535, 0, 1, 2]);
    const ts = packets.map((p) => new DataView(p.buffer).getUint32(4));
    assert.deepEqual(ts, [100, 260, 420, 580]);
    assert.ok(packets.every((p) => p.length === 12 + 160 && (p[1] & 0x7f) === 0));
    const lastPcm = ulawDecode(packets[3].subarray(12));
    assert.ok(lastPcm.subarray(0, 40).every((s) => Math.abs(s - 1000) < 40));
    assert.ok(lastPcm.subarray(40).every((s) => s === 0), "padded with silence");
    pacer.push(new Int16Array(160 * 50));
    assert.ok(pacer.queuedSamples > 0);
    pacer.clear();
    assert.equal(pacer.queuedSamples, 0);
  } finally {
    pacer.close();
  }
});

Deno.test("webrtc: an offer whose candidates are mDNS names connects (peer-reflexive)", async () => {
  const browser = new FakeBrowser();
  const offer = await browser.offer();
  // What Chromium sends when it hides its address: a random name under .local.
  const hidden = offer.replace(
    /^(a=candidate:\S+ \d+ udp \d+ )127\.0\.0\.1( \d+ typ host)/gim,
    "$1f3b1c2d4-5e6f-4a7b-8c9d-0e1f2a3b4c5d.local$2",
  );
  assert.match(hidden, /\.local \d+ typ host/);
  assert.doesNotMatch(hidden, /a=candidate:.* 127\.0\.0\.1 /);
  const t0 = performance.now();
  const { answerSdp, session } = await answerWebRtcOffer(hidden, { ice: "loopback" });
  try {
    // ICE-lite, said once at session level (before the first m= line), as RFC 8839 asks.
    const session0 = answerSdp.slice(0, answerSdp.indexOf("\nm="));
    assert.match(session0, /^a=ice-lite\r?$/m);
    assert.equal(answerSdp.match(/^a=ice-lite/gm)?.length, 1);
    await browser.pc.setRemoteDescription({ type: "answer", sdp: answerSdp });
    assert.deepEqual(await session.recv(), { type: "start", callId: session.callId });
    const ms = performance.now() - t0;
    assert.ok(ms < 1000, `ICE and DTLS took ${Math.round(ms)} ms`);
  } finally {
    await closeBoth(browser, session);
  }
});

Deno.test("webrtc: withoutMdnsCandidates drops only .local host candidates", () => {
  const sdp = [
    "v=0",
    "a=candidate:1 1 udp 2122260223 4f1c0a44-0c61-4f2d-a1c5-d7d0b4a3e2f1.local 54321 typ host",
    "a=candidate:2 1 udp 2122260223 192.0.2.7 54322 typ host",
    "a=candidate:3 1 udp 1686052607 198.51.100.9 60000 typ srflx raddr 0.0.0.0 rport 0",
    "",
  ].join("\r\n");
  const out = withoutMdnsCandidates(sdp);
  assert.doesNotMatch(out, /\.local/);
  assert.match(out, /192\.0\.2\.7 54322 typ host/);
  assert.match(out, /198\.51\.100\.9 60000 typ srflx/);
});

Deno.test("webrtc: events raised together reach the page in one message, none lost", async () => {
  const { browser, session } = await connect();
  try {
    assert.equal((await session.recv())?.type, "start");
    await until(() => browser.channel.readyState === "open", 3000, "events channel");
    const raw: string[] = [];
    browser.channel.onMessage.subscribe((m) => raw.push(String(m)));
    for (let i = 0; i < 5; i++) session.sendEvent({ type: "n", i });
    await until(() => raw.length >= 1, 3000, "batch");
    await sleep(50);
    assert.equal(raw.length, 1, "one message");
    assert.deepEqual(raw[0].split("\n").map((l) => JSON.parse(l).i), [0, 1, 2, 3, 4]);
  } finally {
    await closeBoth(browser, session);
  }
});

Deno.test("webrtc: close() delivers queued events before releasing the connection", async () => {
  const browser = new FakeBrowser();
  const { answerSdp, session } = await answerWebRtcOffer(await browser.offer(), {
    ice: "loopback",
  });
  try {
    // A call that fails at once: the reason is queued before the page's channel is open,
    // and the leg is closed right after.
    session.sendEvent({ type: "error", message: "model unreachable" });
    const closed = session.close();
    await browser.pc.setRemoteDescription({ type: "answer", sdp: answerSdp });
    await closed;
    await until(() => browser.messages.length >= 1, 3000, "the error reached the page");
    assert.deepEqual(browser.messages[0], { type: "error", message: "model unreachable" });
  } finally {
    await browser.pc.close();
    await sleep(50);
  }
});

Deno.test("RtpPacer: Opus-sized frames, timestamp +960 a packet, payload of any length", async () => {
  const packets: Uint8Array[] = [];
  const frames: Int16Array[] = [];
  const encoder = {
    frameSamples: 960,
    encode: (f: Int16Array) => (frames.push(f.slice()), new Uint8Array([1, 2, 3])),
  };
  const pacer = new RtpPacer((p) => packets.push(p.slice()), encoder, {
    payloadType: 111,
    sequence: 10,
    timestamp: 0xffffffff - 959,
  });
  try {
    pacer.push(new Int16Array(960 * 2 + 100).fill(7));
    await until(() => packets.length === 3, 2000, "three packets");
    const ts = packets.map((p) => new DataView(p.buffer).getUint32(4));
    assert.deepEqual(ts, [0xffffffff - 959, 0, 960], "wraps at 2^32");
    assert.ok(packets.every((p) => p.length === 12 + 3 && (p[1] & 0x7f) === 111));
    assert.ok(frames.every((f) => f.length === 960));
    assert.ok(frames[2].subarray(0, 100).every((s) => s === 7));
    assert.ok(frames[2].subarray(100).every((s) => s === 0), "padded with silence");
  } finally {
    pacer.close();
  }
});

Deno.test("RtpPacer: one clock for both ways: onTick every 20 ms, a push meanwhile goes out at once", async () => {
  const packets: Uint8Array[] = [];
  let ticks = 0;
  let listen = true;
  const encoder = { frameSamples: 160, encode: (f: Int16Array) => ulawEncode(f) };
  const pacer = new RtpPacer((p) => packets.push(p.slice()), encoder, {
    onTick: () => (ticks++, listen),
  });
  try {
    assert.equal(pacer.ticking, false);
    pacer.wake();
    assert.equal(ticks, 1, "wake ticks at once");
    const t0 = performance.now();
    await until(() => ticks >= 11, 2000, "ten more ticks");
    const elapsed = performance.now() - t0;
    assert.ok(elapsed >= 180 && elapsed < 600, `ten ticks took ${elapsed} ms`);
    // The clock runs for the inbound side: a talkspurt's first packet does not wait for it.
    pacer.push(new Int16Array(160 * 3));
    assert.equal(packets.length, 1);
    await until(() => packets.length === 3, 2000, "the rest on the clock");
    // Nothing to send and nothing to listen to: the clock stops, and wake restarts it.
    listen = false;
    await until(() => !pacer.ticking, 2000, "clock stopped");
    const stoppedAt = ticks;
    await sleep(60);
    assert.equal(ticks, stoppedAt, "no tick while stopped");
    listen = true;
    pacer.wake();
    assert.equal(pacer.ticking, true);
    assert.equal(ticks, stoppedAt + 1);
  } finally {
    pacer.close();
  }
  assert.equal(pacer.ticking, false);
});
