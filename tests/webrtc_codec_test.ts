/**
 * The WebRTC leg's codec choice: which codecs an offer has, the option's checks, werift's
 * parameters, and the per-call codecs (G.711 concealment, Opus at 48 kHz).
 */

import assert from "node:assert/strict";
import { sine } from "../core/audio/pcm.ts";
import { FlowcatError } from "../core/errors.ts";
import {
  checkWebRtcCodecs,
  codecListText,
  codecOfMime,
  DEFAULT_WEBRTC_CODECS,
  offeredCodecs,
  openMediaCodec,
  rtpCodecParameters,
} from "../transports/webrtc_codec.ts";
import { toneAmplitude } from "./_audio_helpers.ts";

/** The audio section of a Chromium offer (its codec lines as Chromium writes them). */
const CHROMIUM_OFFER = [
  "v=0",
  "o=- 4611731400430051336 2 IN IP4 127.0.0.1",
  "s=-",
  "t=0 0",
  "m=audio 9 UDP/TLS/RTP/SAVPF 111 63 9 0 8 13 110 126",
  "c=IN IP4 0.0.0.0",
  "a=rtpmap:111 opus/48000/2",
  "a=rtcp-fb:111 transport-cc",
  "a=fmtp:111 minptime=10;useinbandfec=1",
  "a=rtpmap:63 red/48000/2",
  "a=fmtp:63 111/111",
  "a=rtpmap:9 G722/8000",
  "a=rtpmap:0 PCMU/8000",
  "a=rtpmap:8 PCMA/8000",
  "a=rtpmap:13 CN/8000",
  "a=rtpmap:110 telephone-event/48000",
  "a=rtpmap:126 telephone-event/8000",
  "m=application 9 UDP/DTLS/SCTP webrtc-datachannel",
  "",
].join("\r\n");

Deno.test("webrtc codecs: what an offer's audio section has, in our order", () => {
  assert.deepEqual(offeredCodecs(CHROMIUM_OFFER, DEFAULT_WEBRTC_CODECS), ["opus", "pcmu", "pcma"]);
  assert.deepEqual(offeredCodecs(CHROMIUM_OFFER, ["pcma", "pcmu"]), ["pcma", "pcmu"]);
  // Static payload types need no rtpmap; a video section before the audio is skipped.
  const staticOnly = "v=0\nm=video 9 RTP/AVP 96\na=rtpmap:96 VP8/90000\nm=audio 9 RTP/AVP 8\n";
  assert.deepEqual(offeredCodecs(staticOnly, DEFAULT_WEBRTC_CODECS), ["pcma"]);
  // A payload type listed in an rtpmap but not on the m-line is not offered.
  const notListed = "v=0\nm=audio 9 RTP/AVP 0\na=rtpmap:111 opus/48000/2\n";
  assert.deepEqual(offeredCodecs(notListed, DEFAULT_WEBRTC_CODECS), ["pcmu"]);
  // Opus at another clock rate is not RFC 7587 Opus.
  const odd = "v=0\nm=audio 9 RTP/AVP 96\na=rtpmap:96 opus/16000\n";
  assert.deepEqual(offeredCodecs(odd, DEFAULT_WEBRTC_CODECS), []);
  assert.deepEqual(offeredCodecs("v=0\nm=application 9 UDP/DTLS/SCTP x\n", ["pcmu"]), []);
});

Deno.test("webrtc codecs: the option is checked; default Opus, PCMU, PCMA", () => {
  assert.deepEqual(checkWebRtcCodecs(undefined), ["opus", "pcmu", "pcma"]);
  assert.deepEqual(checkWebRtcCodecs(["pcma"]), ["pcma"]);
  for (const bad of [["g722"], [], ["pcmu", "pcmu"]]) {
    assert.throws(
      () => checkWebRtcCodecs(bad),
      (e) => e instanceof FlowcatError && e.kind === "config",
      JSON.stringify(bad),
    );
  }
  assert.equal(codecListText(["opus", "pcmu", "pcma"]), "Opus, PCMU or PCMA");
  assert.equal(codecListText(["pcmu"]), "PCMU");
});

Deno.test("webrtc codecs: werift parameters and back", () => {
  const params = rtpCodecParameters(DEFAULT_WEBRTC_CODECS);
  assert.deepEqual(
    params.map((p) => [p.mimeType, p.clockRate, p.channels, p.payloadType]),
    [["audio/opus", 48000, 2, 111], ["audio/PCMU", 8000, undefined, 0], [
      "audio/PCMA",
      8000,
      undefined,
      8,
    ]],
  );
  assert.equal(codecOfMime("audio/OPUS", 48000), "opus");
  assert.equal(codecOfMime("audio/pcmu", 8000), "pcmu");
  assert.equal(codecOfMime("audio/PCMA", 8000), "pcma");
  assert.equal(codecOfMime("audio/G722", 8000), undefined);
});

Deno.test("webrtc codecs: G.711 decodes, encodes, and conceals by a fading repeat", async () => {
  for (const name of ["pcmu", "pcma"] as const) {
    const codec = await openMediaCodec(name);
    assert.equal(codec.clockRate, 8000);
    assert.equal(codec.frameSamples, 160);
    assert.deepEqual(codec.conceal(), new Int16Array(160), "silence before any packet");
    const frame = new Int16Array(160).fill(8000);
    const pcm = codec.decode(codec.encode(frame).slice());
    assert.ok(pcm.every((s) => Math.abs(s - 8000) < 300), name);
    const halves = [1, 2, 3, 4, 5, 6].map(() => codec.conceal()[0]);
    assert.ok(Math.abs(halves[0] - pcm[0] / 2) <= 1, `${name}: first concealed ${halves[0]}`);
    assert.ok(halves[4] > 0 && halves[4] < halves[3], "fading");
    assert.equal(halves[5], 0, "silence after five");
    codec.decode(codec.encode(frame));
    assert.ok(codec.conceal()[0] > 3000, "a new packet restarts the concealment");
    codec.close();
  }
});

Deno.test("webrtc codecs: Opus runs at 48 kHz, 960 samples a packet", async () => {
  const codec = await openMediaCodec("opus");
  try {
    assert.equal(codec.name, "opus");
    assert.equal(codec.clockRate, 48000);
    assert.equal(codec.frameSamples, 960);
    const tone = sine({ freq: 800, sampleRate: 48000, samples: 9600, amplitude: 8000 });
    const out = new Int16Array(9600);
    for (let i = 0; i < 10; i++) {
      out.set(codec.decode(codec.encode(tone.subarray(i * 960, (i + 1) * 960))), i * 960);
    }
    assert.ok(toneAmplitude(out.subarray(2880), 800, 48000) > 6000);
    assert.equal(codec.conceal().length, 960);
  } finally {
    codec.close();
  }
});
