// Carrier-specific behaviour of the serializers beyond the shared table in serializers_test.ts:
// negotiated formats and rates, handshakes, acknowledgements, and buffer ownership.
import assert from "node:assert/strict";
import { Buffer } from "node:buffer";
import type { SerIn, WsIn, WsOut } from "../core/seams.ts";
import { createSerializer } from "../telephony/serializers/mod.ts";
import { createGenesysSerializer, parseIsoPosition } from "../telephony/serializers/genesys.ts";
import { createSinchSerializer } from "../telephony/serializers/sinch.ts";
import { createVonageSerializer } from "../telephony/serializers/vonage.ts";
import { PayloadCodec } from "../telephony/serializers/_codec.ts";

const text = (o: unknown): WsIn => ({ type: "text", data: JSON.stringify(o) });
const b64 = (bytes: Uint8Array) => Buffer.from(bytes).toString("base64");
const unb64 = (s: string) => [...new Uint8Array(Buffer.from(s, "base64"))];
const json = (out: WsOut | undefined) => JSON.parse(out as string);
const pcmOf = (r: SerIn) => {
  assert.equal(r.type, "audio", JSON.stringify(r));
  return (r as Extract<SerIn, { type: "audio" }>).audio.pcm;
};
const reasonOf = (r: SerIn) => {
  assert.equal(r.type, "ignore", JSON.stringify(r));
  return (r as { reason: string }).reason;
};
const frame = (pcm: number[], sampleRate: number) => ({
  pcm: Int16Array.from(pcm),
  sampleRate,
  numChannels: 1,
});

function telnyxStart(encoding: string, sampleRate = 8000): WsIn {
  return text({
    event: "start",
    stream_id: "s",
    start: { call_control_id: "v3:x", media_format: { encoding, sample_rate: sampleRate } },
  });
}
const telnyxMedia = (bytes: number[], track = "inbound") =>
  text({ event: "media", media: { track, payload: b64(new Uint8Array(bytes)) } });

Deno.test("telnyx: PCMA start switches to A-law; G722 starts but its audio is refused", () => {
  const a = createSerializer("telnyx");
  assert.equal(a.onMessage(telnyxStart("PCMA")).type, "start");
  assert.deepEqual([...pcmOf(a.onMessage(telnyxMedia([0xd5, 0xaa])))], [8, 32256]);
  assert.deepEqual(unb64(json(a.encodeAudio(frame([8, 32256], 8000))).media.payload), [0xd5, 0xaa]);

  const g = createSerializer("telnyx");
  assert.equal(g.onMessage(telnyxStart("G722", 16000)).type, "start");
  assert.match(reasonOf(g.onMessage(telnyxMedia([1, 2]))), /unsupported telnyx encoding "G722"/);
});

Deno.test("telnyx: error events and outbound-track media are ignored with what happened", () => {
  const ser = createSerializer("telnyx");
  ser.onMessage(telnyxStart("PCMU"));
  const err = text({
    event: "error",
    stream_id: "s",
    payload: { code: 100003, title: "malformed_frame", detail: "bad" },
  });
  assert.match(reasonOf(ser.onMessage(err)), /100003 malformed_frame bad/);
  assert.match(reasonOf(ser.onMessage(telnyxMedia([0xff], "outbound"))), /non-inbound/);
});

Deno.test("twilio: no streamSid before start, escaped mark names, start without callSid", () => {
  const ser = createSerializer("twilio");
  assert.deepEqual(json(ser.encodeClear()), { event: "clear" });
  assert.match(reasonOf(ser.onMessage(text({ event: "start", start: {} }))), /callSid/);
  ser.onMessage(text({ event: "start", start: { callSid: "CA1", streamSid: 'MZ"1' } }));
  assert.deepEqual(json(ser.encodeMark('a"b\\c')), {
    event: "mark",
    streamSid: 'MZ"1',
    mark: { name: 'a"b\\c' },
  });
});

Deno.test("plivo: L16 16 kHz stream plays L16 back; played/clearedAudio acknowledgements", () => {
  const ser = createSerializer("plivo");
  ser.onMessage(text({
    event: "start",
    start: {
      callId: "c1",
      streamId: "s1",
      mediaFormat: { encoding: "audio/x-l16", sampleRate: 16000 },
    },
    extra_headers: "a=1,b=2",
  }));
  assert.equal(ser.carrierRate(), 16000);
  const media = text({ event: "media", media: { payload: b64(new Uint8Array([0x34, 0x12])) } });
  assert.deepEqual([...pcmOf(ser.onMessage(media))], [0x1234]);
  const out = json(ser.encodeAudio(frame([0x1234, -1], 16000)));
  assert.deepEqual(out.media.contentType, "audio/x-l16");
  assert.equal(out.media.sampleRate, 16000);
  assert.deepEqual(unb64(out.media.payload), [0x34, 0x12, 0xff, 0xff]);
  assert.deepEqual(ser.onMessage(text({ event: "played", streamId: "s1", name: "n" })), {
    type: "mark",
    name: "n",
  });
  assert.match(reasonOf(ser.onMessage(text({ event: "clearedAudio", streamId: "s1" }))), /clear/);
});

Deno.test("plivo: extra_headers with commas become params", () => {
  const got = createSerializer("plivo").onMessage(
    text({ event: "start", start: { callId: "c1" }, extra_headers: "a=1,b=x=y" }),
  );
  assert.deepEqual((got as { params?: unknown }).params, { a: "1", b: "x=y" });
});

Deno.test("exotel: ?sample-rate=16000 stream runs at 16 kHz in 100 ms chunks", () => {
  const ser = createSerializer("exotel");
  ser.onMessage(text({
    event: "start",
    start: { call_sid: "CA1", media_format: { encoding: "audio/x-raw", sample_rate: "16000" } },
  }));
  assert.equal(ser.carrierRate(), 16000);
  assert.equal(ser.chunkSamples(), 1600);
});

Deno.test("exotel: an unknown media_format.encoding is the documented PCM16, with one warning", () => {
  const ser = createSerializer("exotel");
  const start = ser.onMessage(text({
    event: "start",
    start: { call_sid: "CA1", media_format: { encoding: "base64", sample_rate: "8000" } },
  }));
  assert.equal(start.type, "start");
  const warnings = ser.takeWarnings();
  assert.equal(warnings.length, 1);
  assert.match(warnings[0], /unknown media_format\.encoding "base64".*16-bit PCM/);
  // Every frame decodes (little-endian PCM16), and nothing more is said about it.
  for (let i = 0; i < 3; i++) {
    const media = text({
      event: "media",
      media: { payload: b64(new Uint8Array([1, 0, 0xff, 0xff])) },
    });
    assert.deepEqual([...pcmOf(ser.onMessage(media))], [1, -1]);
    assert.deepEqual(ser.takeWarnings(), []);
  }
  // A known encoding says nothing.
  const known = createSerializer("exotel");
  known.onMessage(
    text({ event: "start", start: { call_sid: "C", media_format: { encoding: "audio/x-raw" } } }),
  );
  assert.deepEqual(known.takeWarnings(), []);
});

Deno.test("vonage: rate from content-type; call id from headers, option, or a clear refusal", () => {
  const ser = createVonageSerializer();
  const got = ser.onMessage(
    text({ event: "websocket:connected", "content-type": "audio/l16;rate=24000" }),
  );
  assert.match(reasonOf(got), /call_uuid.*NCCO/);
  const withOption = createVonageSerializer({ callId: "run-9" });
  const started = withOption.onMessage(
    text({ event: "websocket:connected", "content-type": "audio/l16;rate=24000" }),
  );
  assert.deepEqual(started, { type: "start", callId: "run-9", params: {} });
  assert.equal(withOption.carrierRate(), 24000);
  assert.equal(withOption.chunkSamples(), 480);
  assert.deepEqual(withOption.onMessage(text({ event: "websocket:dtmf", dtmf: { digit: "#" } })), {
    type: "dtmf",
    key: "#",
  });
});

Deno.test("binary L16: inbound aliases aligned frames, copies unaligned ones; outbound is a view", () => {
  const ser = createVonageSerializer({ callId: "c" });
  const aligned = new Uint8Array([1, 0, 2, 0]);
  const pcm = pcmOf(ser.onMessage({ type: "binary", data: aligned }));
  assert.equal(pcm.buffer, aligned.buffer, "no copy for an aligned frame");
  const backing = new Uint8Array([9, 3, 0, 4, 0]);
  const odd = pcmOf(ser.onMessage({ type: "binary", data: backing.subarray(1) }));
  assert.deepEqual([...odd], [3, 4]);
  const out = frame([5, 6], 16000);
  const bytes = ser.encodeAudio(out) as Uint8Array;
  assert.equal(bytes.buffer, out.pcm.buffer);
  assert.deepEqual([...bytes], [5, 0, 6, 0]);
});

Deno.test("base64 G.711: scratch reuse never leaks into earlier results", () => {
  const codec = new PayloadCodec("pcmu", 8000);
  const first = codec.decodeBase64(b64(new Uint8Array([0x00, 0x80])))!;
  const big = codec.decodeBase64(b64(new Uint8Array(4000).fill(0xff)))!;
  assert.deepEqual([...first], [-32124, 32124]);
  assert.equal(big.length, 4000);
  const s1 = codec.encodeBase64(Int16Array.from([0, 32124]));
  codec.encodeBase64(new Int16Array(1000));
  assert.equal(s1, b64(new Uint8Array([0xff, 0x80])));
  assert.equal(codec.decodeBase64("AA=A"), undefined);
});

Deno.test("sinch: answers a PCM connect, rejects another codec, has a heartbeat", () => {
  const ok = createSinchSerializer();
  ok.onMessage(text({ command: "connect", callId: "c", codec: "PCM", sampleRate: 8000 }));
  assert.equal(ok.carrierRate(), 8000);
  const bad = createSinchSerializer();
  const got = bad.onMessage(
    text({ command: "connect", callId: "c", codec: "OPUS", sampleRate: 48000 }),
  );
  assert.match(reasonOf(got), /OPUS.*rejected/);
  assert.deepEqual(bad.takeReplies().map(json), [{ command: "reject" }]);
  assert.deepEqual(json(ok.encodeHeartbeat()), { command: "heartbeat" });
});

Deno.test("bandwidth: only eventType counts; a non-PCMU stream's audio is refused", () => {
  const ser = createSerializer("bandwidth");
  assert.equal(ser.onMessage(text({ event: "start" })).type, "ignore");
  ser.onMessage(text({
    eventType: "start",
    metadata: {
      callId: "c",
      tracks: [{ name: "inbound", mediaFormat: { encoding: "audio/PCMA" } }],
    },
  }));
  const media = text({ eventType: "media", track: "inbound", payload: "/w==" });
  assert.match(reasonOf(ser.onMessage(media)), /unsupported bandwidth encoding/);
});

const G_ID = "sess-1";
const genesys = (type: string, seq: number, parameters: unknown = {}, position?: string) =>
  text({ version: "2", id: G_ID, type, seq, serverseq: 0, position, parameters });
const OPEN_MONO = {
  conversationId: "conv",
  media: [{ type: "audio", format: "PCMU", channels: ["external"], rate: 8000 }],
};

Deno.test("genesys: a whole session keeps seq, clientseq and position", () => {
  const ser = createGenesysSerializer();
  assert.match(
    reasonOf(ser.onMessage({ type: "binary", data: new Uint8Array([0xff]) })),
    /before open/,
  );
  ser.onMessage(genesys("open", 1, OPEN_MONO));
  assert.equal(json(ser.takeReplies()[0]).type, "opened");
  assert.equal(
    pcmOf(ser.onMessage({ type: "binary", data: new Uint8Array(1600).fill(0xff) })).length,
    1600,
  );
  assert.equal(json(ser.encodeClear()).position, "PT0.200S");
  assert.match(reasonOf(ser.onMessage(genesys("ping", 2))), /ping/);
  const pong = json(ser.takeReplies()[0]);
  assert.deepEqual([pong.type, pong.seq, pong.clientseq], ["pong", 3, 2]);

  assert.match(reasonOf(ser.onMessage(genesys("pause", 3, {}, "PT1.5S"))), /paused/);
  assert.match(reasonOf(ser.onMessage({ type: "binary", data: new Uint8Array([0xff]) })), /paused/);
  const resumed = json(ser.encodeResumed());
  assert.deepEqual([resumed.type, resumed.position, resumed.clientseq], ["resumed", "PT1.500S", 3]);
  assert.equal(ser.onMessage({ type: "binary", data: new Uint8Array([0xff]) }).type, "audio");

  ser.setOutputVariables({ action: "finished" });
  assert.deepEqual(json(ser.encodeDisconnect()).parameters, {
    reason: "completed",
    outputVariables: { action: "finished" },
  });
  assert.deepEqual(ser.onMessage(genesys("close", 4, { reason: "end" })), { type: "stop" });
  const closed = json(ser.takeReplies()[0]);
  assert.deepEqual([closed.type, closed.clientseq, closed.parameters], [
    "closed",
    4,
    { outputVariables: { action: "finished" } },
  ]);
});

Deno.test("genesys: a stereo-only offer is taken and the external channel kept", () => {
  const ser = createGenesysSerializer();
  const stereo = { type: "audio", format: "PCMU", channels: ["external", "internal"], rate: 8000 };
  ser.onMessage(genesys("open", 1, { media: [stereo] }));
  assert.deepEqual(json(ser.takeReplies()[0]).parameters.media, [stereo]);
  const pcm = pcmOf(
    ser.onMessage({ type: "binary", data: new Uint8Array([0x00, 0xff, 0x80, 0xff]) }),
  );
  assert.deepEqual([...pcm], [-32124, 32124]);
});

Deno.test("genesys: no usable media gets a disconnect; ISO positions parse", () => {
  const ser = createGenesysSerializer();
  const got = ser.onMessage(
    genesys("open", 1, {
      media: [{ type: "audio", format: "OPUS", channels: ["external"], rate: 48000 }],
    }),
  );
  assert.match(reasonOf(got), /no PCMU\/L16/);
  assert.equal(json(ser.takeReplies()[0]).type, "disconnect");
  assert.equal(parseIsoPosition("PT1M2.5S"), 62.5);
  assert.equal(parseIsoPosition("PT0S"), 0);
  assert.equal(parseIsoPosition("12s"), undefined);
});
