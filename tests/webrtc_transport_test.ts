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
import { ulawDecode, ulawEncode } from "../core/audio/g711.ts";
import { sine } from "../core/audio/pcm.ts";
import { FlowcatError } from "../core/errors.ts";
import type { MediaIn } from "../core/seams.ts";
import { RtpSender } from "../telephony/sip/rtp.ts";
import {
  answerWebRtcOffer,
  iceModeForHost,
  icePermissions,
  isLoopbackHost,
  missingIcePermissions,
  type WebRtcAnswerOptions,
  type WebRtcSession,
  withoutMdnsCandidates,
} from "../transports/webrtc.ts";
import { PcmuPacer } from "../transports/webrtc_pacer.ts";
import { icePeerConfig } from "../transports/webrtc_ice.ts";
import { toneAmplitude } from "./_audio_helpers.ts";
import { sleep, until } from "./_core_helpers.ts";

/** One RTP packet the fake browser received. */
interface Got {
  seq: number;
  ts: number;
  marker: boolean;
  pt: number;
  pcm: Int16Array;
}

/** A werift peer standing in for Chromium: offers Opus and PCMU, opens "events". */
class FakeBrowser {
  readonly pc = new RTCPeerConnection({
    ...icePeerConfig("loopback"),
    codecs: {
      audio: [
        new RTCRtpCodecParameters({
          mimeType: "audio/opus",
          clockRate: 48000,
          channels: 2,
          payloadType: 111,
        }),
        new RTCRtpCodecParameters({ mimeType: "audio/PCMU", clockRate: 8000, payloadType: 0 }),
      ],
    },
  });
  readonly audio: RTCRtpTransceiver;
  readonly channel: RTCDataChannel;
  readonly got: Got[] = [];
  readonly messages: Record<string, unknown>[] = [];
  #rtp = new RtpSender({ payloadType: 0 });

  constructor() {
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
          pcm: ulawDecode(new Uint8Array(p.payload)),
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

  /** Send `pcm` (8 kHz) as 20 ms PCMU packets at real time. */
  async speak(pcm: Int16Array): Promise<void> {
    for (let i = 0; i + 160 <= pcm.length; i += 160) {
      const pkt = this.#rtp.audio(ulawEncode(pcm.subarray(i, i + 160)));
      await this.audio.sender.sendRtp(Buffer.from(pkt));
      await sleep(20);
    }
  }

  /** Everything received so far as one 8 kHz signal. */
  receivedPcm(): Int16Array {
    const out = new Int16Array(this.got.length * 160);
    this.got.forEach((g, i) => out.set(g.pcm, i * 160));
    return out;
  }
}

async function connect(
  opts: WebRtcAnswerOptions = {},
): Promise<{ browser: FakeBrowser; session: WebRtcSession; answer: string }> {
  const browser = new FakeBrowser();
  const { answerSdp, session } = await answerWebRtcOffer(await browser.offer(), {
    ice: "loopback",
    ...opts,
  });
  await browser.pc.setRemoteDescription({ type: "answer", sdp: answerSdp });
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

function sleepAbortable(ms: number): { promise: Promise<"timeout">; cancel: () => void } {
  let timer: ReturnType<typeof setTimeout> | undefined;
  const promise = new Promise<"timeout">((r) => (timer = setTimeout(() => r("timeout"), ms)));
  return { promise, cancel: () => clearTimeout(timer) };
}

async function closeBoth(browser: FakeBrowser, session: WebRtcSession): Promise<void> {
  await session.close();
  await browser.pc.close();
  // werift finishes its DTLS/SCTP shutdown a tick after close() resolves.
  await sleep(50);
}

Deno.test("webrtc: PCMU only in the answer, audio both ways, events both ways, hangup stops", async () => {
  const pageMessages: Record<string, unknown>[] = [];
  const { browser, session, answer } = await connect({
    callId: "web-1",
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
    while (inbound.length < 40) {
      const m = await session.recv();
      assert.equal(m?.type, "audio");
      if (m?.type !== "audio") break;
      assert.equal(m.audio.sampleRate, 8000);
      assert.equal(m.audio.pcm.length, 160);
      inbound.push(m.audio.pcm);
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
    assert.equal(session.queuedSamples, 1600);
    await browser.pc.setRemoteDescription({ type: "answer", sdp: answerSdp });
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

Deno.test("webrtc: bad offers and Opus are refused with FlowcatError", async () => {
  await assert.rejects(
    answerWebRtcOffer("hello", { ice: "loopback" }),
    (e) => e instanceof FlowcatError && e.kind === "protocol",
  );
  const noPcmu = "v=0\r\no=- 1 0 IN IP4 0.0.0.0\r\ns=-\r\nt=0 0\r\n" +
    "m=audio 9 UDP/TLS/RTP/SAVPF 111\r\na=rtpmap:111 opus/48000/2\r\n";
  await assert.rejects(
    answerWebRtcOffer(noPcmu, { ice: "loopback" }),
    (e) => e instanceof FlowcatError && e.kind === "protocol" && /PCMU/.test(e.message),
  );
  const browser = new FakeBrowser();
  try {
    const offer = await browser.offer();
    await assert.rejects(
      answerWebRtcOffer(offer, { codecs: ["pcmu", "opus"] }),
      (e) => e instanceof FlowcatError && e.kind === "config" && /Opus/.test(e.message),
    );
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
    await browser.pc.close();
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
