// Carrier serializers, table-driven across all nine carriers: fixtures follow the wire formats in
// shared/reference/carriers.md; payload bytes are checked against known G.711 / PCM16LE values.
import assert from "node:assert/strict";
import { Buffer } from "node:buffer";
import type { SerIn, WsIn, WsOut } from "../core/seams.ts";
import {
  CARRIER_NAMES,
  type CarrierName,
  type CarrierSerializer,
  createSerializer,
} from "../telephony/serializers/mod.ts";
import { FlowcatError } from "../core/errors.ts";

const text = (o: unknown): WsIn => ({ type: "text", data: JSON.stringify(o) });
const binary = (bytes: Uint8Array): WsIn => ({ type: "binary", data: bytes.slice() });
const b64 = (bytes: Uint8Array) => Buffer.from(bytes).toString("base64");
const unb64 = (s: string) => new Uint8Array(Buffer.from(s, "base64"));
const json = (out: WsOut | undefined) => {
  assert.equal(typeof out, "string", "expected a text message");
  return JSON.parse(out as string);
};

/** Wire bytes and the PCM they stand for (G.711 code points, PCM16 little-endian). */
const WIRE = {
  pcmu: {
    bytes: new Uint8Array([0xff, 0x00, 0x80, 0xf0, 0x70, 0x8f]),
    pcm: [0, -32124, 32124, 120, -120, 16764],
  },
  pcma: { bytes: new Uint8Array([0xd5, 0x55, 0xaa, 0x2a, 0xd4]), pcm: [8, -8, 32256, -32256, 24] },
  l16: {
    bytes: new Uint8Array([1, 0, 0xfe, 0xff, 0xff, 0x7f, 0, 0x80, 0, 1]),
    pcm: [1, -2, 32767, -32768, 256],
  },
};

interface Case {
  carrier: CarrierName;
  encoding: keyof typeof WIRE;
  rate: number;
  start: WsIn;
  expectStart: Omit<Extract<SerIn, { type: "start" }>, "type">;
  /** A media message carrying `wire`. */
  media: (wire: Uint8Array) => WsIn;
  /** The wire bytes of an outbound audio message (after checking its envelope). */
  audioOut: (out: WsOut) => Uint8Array;
  dtmf?: WsIn;
  markIn?: WsIn;
  stop?: WsIn;
  handshake?: WsIn;
  clear: unknown;
  mark: unknown;
  replies?: (replies: readonly WsOut[]) => void;
}

// Inbound fixtures are the reference's example messages, verbatim apart from the payloads.
const raw = (data: string): WsIn => ({ type: "text", data });
const G_ID = "e160e428-0000-4000-8000-000000000001";
const G = `"version":"2","id":"${G_ID}"`;

const twilioLike = (carrier: CarrierName): Case => ({
  carrier,
  encoding: "pcmu",
  rate: 8000,
  handshake: raw('{"event":"connected","protocol":"Call","version":"1.0.0"}'),
  start: raw(
    '{"event":"start","sequenceNumber":"1","streamSid":"MZ0001","start":{"streamSid":"MZ0001","accountSid":"AC0001","callSid":"CA0001","tracks":["inbound"],"customParameters":{"from_number":"+15550001111"},"mediaFormat":{"encoding":"audio/x-mulaw","sampleRate":8000,"channels":1}}}',
  ),
  expectStart: { callId: "CA0001", streamId: "MZ0001", params: { from_number: "+15550001111" } },
  media: (w) =>
    raw(
      `{"event":"media","sequenceNumber":"3","streamSid":"MZ0001","media":{"track":"inbound","chunk":"2","timestamp":"40","payload":"${
        b64(w)
      }"}}`,
    ),
  audioOut: (out) => {
    const m = json(out);
    assert.deepEqual([m.event, m.streamSid], ["media", "MZ0001"]);
    return unb64(m.media.payload);
  },
  dtmf: raw(
    '{"event":"dtmf","streamSid":"MZ0001","sequenceNumber":"9","dtmf":{"track":"inbound_track","digit":"5"}}',
  ),
  markIn: raw(
    '{"event":"mark","sequenceNumber":"12","streamSid":"MZ0001","mark":{"name":"utt-7"}}',
  ),
  stop: raw(
    '{"event":"stop","sequenceNumber":"40","streamSid":"MZ0001","stop":{"accountSid":"AC0001","callSid":"CA0001"}}',
  ),
  clear: { event: "clear", streamSid: "MZ0001" },
  mark: { event: "mark", streamSid: "MZ0001", mark: { name: "utt-7" } },
});

const binaryOut = (out: WsOut) => {
  assert.ok(out instanceof Uint8Array, "audio goes out as a binary frame");
  return out;
};

const CASES: Case[] = [
  twilioLike("twilio"),
  twilioLike("signalwire"),
  {
    carrier: "telnyx",
    encoding: "pcmu",
    rate: 8000,
    handshake: raw('{"event":"connected","version":"1.0.0"}'),
    start: raw(
      '{"event":"start","sequence_number":"1","stream_id":"3f1c-aa","start":{"user_id":"u-1","call_control_id":"v3:abc","client_state":null,"from":"+15550001111","to":"+15550002222","media_format":{"encoding":"PCMU","sample_rate":8000,"channels":1}}}',
    ),
    expectStart: {
      callId: "v3:abc",
      streamId: "3f1c-aa",
      params: { from: "+15550001111", to: "+15550002222", user_id: "u-1" },
    },
    media: (w) =>
      raw(
        `{"event":"media","sequence_number":"4","stream_id":"3f1c-aa","media":{"track":"inbound","chunk":"2","timestamp":"40","payload":"${
          b64(w)
        }"}}`,
      ),
    audioOut: (out) => {
      const m = json(out);
      assert.deepEqual(Object.keys(m), ["event", "media"]);
      return unb64(m.media.payload);
    },
    dtmf: raw(
      '{"event":"dtmf","stream_id":"3f1c-aa","sequence_number":"8","occurred_at":"2025-01-01T00:00:00Z","dtmf":{"digit":"5"}}',
    ),
    markIn: raw(
      '{"event":"mark","stream_id":"3f1c-aa","sequence_number":"9","mark":{"name":"utt-7"}}',
    ),
    stop: raw(
      '{"event":"stop","sequence_number":"30","stream_id":"3f1c-aa","stop":{"user_id":"u-1","call_control_id":"v3:abc"}}',
    ),
    clear: { event: "clear" },
    mark: { event: "mark", mark: { name: "utt-7" } },
  },
  {
    carrier: "plivo",
    encoding: "pcmu",
    rate: 8000,
    start: raw(
      '{"event":"start","sequenceNumber":1,"start":{"callId":"c0ffee00-0000-4000-8000-000000000001","streamId":"5eed0000-0000-4000-8000-000000000002","accountId":"MA0001","tracks":["inbound"],"mediaFormat":{"encoding":"audio/x-mulaw","sampleRate":8000}},"extra_headers":"k1=v1;k2=v2"}',
    ),
    expectStart: {
      callId: "c0ffee00-0000-4000-8000-000000000001",
      streamId: "5eed0000-0000-4000-8000-000000000002",
      params: { k1: "v1", k2: "v2" },
    },
    media: (w) =>
      raw(
        `{"event":"media","sequenceNumber":42,"streamId":"5eed0000-0000-4000-8000-000000000002","media":{"track":"inbound","timestamp":"1735689600000","chunk":41,"payload":"${
          b64(w)
        }"}}`,
      ),
    audioOut: (out) => {
      const m = json(out);
      assert.deepEqual([m.event, m.streamId], [
        "playAudio",
        "5eed0000-0000-4000-8000-000000000002",
      ]);
      assert.deepEqual([m.media.contentType, m.media.sampleRate], ["audio/x-mulaw", 8000]);
      return unb64(m.media.payload);
    },
    dtmf: raw(
      '{"event":"dtmf","sequenceNumber":50,"streamId":"5eed0000-0000-4000-8000-000000000002","dtmf":{"digit":"5","track":"inbound"}}',
    ),
    markIn: raw(
      '{"event":"playedStream","streamId":"5eed0000-0000-4000-8000-000000000002","name":"utt-7"}',
    ),
    clear: { event: "clearAudio", streamId: "5eed0000-0000-4000-8000-000000000002" },
    mark: { event: "checkpoint", streamId: "5eed0000-0000-4000-8000-000000000002", name: "utt-7" },
  },
  {
    carrier: "vonage",
    encoding: "l16",
    rate: 16000,
    start: raw(
      '{"event":"websocket:connected","content-type":"audio/l16;rate=16000","call_uuid":"uuid-1","k":"v"}',
    ),
    expectStart: { callId: "uuid-1", params: { call_uuid: "uuid-1", k: "v" } },
    media: binary,
    audioOut: binaryOut,
    dtmf: raw('{"event":"websocket:dtmf","digit":"5","duration":260}'),
    markIn: raw('{"event":"websocket:notify","payload":{"mark":"utt-7"}}'),
    clear: { action: "clear" },
    mark: { action: "notify", payload: { mark: "utt-7" } },
  },
  {
    carrier: "exotel",
    encoding: "l16",
    rate: 8000,
    handshake: raw('{"event":"connected"}'),
    start: raw(
      '{"event":"start","sequence_number":"1","stream_sid":"MZ0001","start":{"stream_sid":"MZ0001","call_sid":"CA0001","account_sid":"AC0001","from":"+919800000000","to":"+918000000000","custom_parameters":{"k":"v"},"media_format":{"encoding":"audio/x-raw","sample_rate":"8000","bit_rate":"16"}}}',
    ),
    expectStart: {
      callId: "CA0001",
      streamId: "MZ0001",
      params: { k: "v", from: "+919800000000", to: "+918000000000" },
    },
    media: (w) =>
      raw(
        `{"event":"media","sequence_number":"3","stream_sid":"MZ0001","media":{"chunk":"2","timestamp":"200","payload":"${
          b64(w)
        }"}}`,
      ),
    audioOut: (out) => {
      const m = json(out);
      assert.deepEqual([m.event, m.stream_sid], ["media", "MZ0001"]);
      return unb64(m.media.payload);
    },
    dtmf: raw(
      '{"event":"dtmf","sequence_number":"7","stream_sid":"MZ0001","dtmf":{"digit":"5","duration":"100"}}',
    ),
    markIn: raw(
      '{"event":"mark","sequence_number":"15","stream_sid":"MZ0001","mark":{"name":"utt-7"}}',
    ),
    stop: raw(
      '{"event":"stop","sequence_number":"90","stream_sid":"MZ0001","stop":{"call_sid":"CA0001","account_sid":"AC0001","reason":"callended"}}',
    ),
    clear: { event: "clear", stream_sid: "MZ0001" },
    mark: { event: "mark", stream_sid: "MZ0001", mark: { name: "utt-7" } },
  },
  {
    carrier: "genesys",
    encoding: "pcmu",
    rate: 8000,
    start: raw(
      `{${G},"type":"open","seq":1,"serverseq":0,"position":"PT0S","parameters":{"organizationId":"org-1","conversationId":"conv-1","participant":{"id":"p-1","ani":"+15550001111","aniName":"Caller","dnis":"+15550002222"},"media":[{"type":"audio","format":"PCMU","channels":["external","internal"],"rate":8000},{"type":"audio","format":"PCMU","channels":["external"],"rate":8000}],"language":"en-US","customConfig":{},"inputVariables":{"k":"v"}}}`,
    ),
    expectStart: {
      callId: "conv-1",
      streamId: G_ID,
      params: { ani: "+15550001111", dnis: "+15550002222", k: "v" },
    },
    replies: (replies) => {
      assert.deepEqual(replies.map(json), [{
        version: "2",
        id: G_ID,
        type: "opened",
        seq: 1,
        clientseq: 1,
        parameters: {
          startPaused: false,
          media: [{ type: "audio", format: "PCMU", channels: ["external"], rate: 8000 }],
        },
      }]);
    },
    media: binary,
    audioOut: binaryOut,
    dtmf: raw(
      `{${G},"type":"dtmf","seq":7,"serverseq":3,"position":"PT5.2S","parameters":{"digit":"5"}}`,
    ),
    stop: raw(
      `{${G},"type":"close","seq":9,"serverseq":3,"position":"PT6S","parameters":{"reason":"end"}}`,
    ),
    clear: {
      version: "2",
      id: G_ID,
      type: "event",
      seq: 2,
      clientseq: 1,
      position: "PT0.000S",
      parameters: { entities: [{ type: "barge_in", data: {} }] },
    },
    mark: undefined,
  },
  {
    carrier: "bandwidth",
    encoding: "pcmu",
    rate: 8000,
    start: raw(
      '{"eventType":"start","metadata":{"accountId":"9900000","callId":"c-0001","streamId":"s-0001","streamName":"s1","tracks":[{"name":"inbound","mediaFormat":{"encoding":"audio/PCMU","sampleRate":8000}}]},"streamParams":{"k":"v"}}',
    ),
    expectStart: { callId: "c-0001", streamId: "s-0001", params: { k: "v" } },
    media: (w) =>
      raw(`{"eventType":"media","track":"inbound","sequenceNumber":12,"payload":"${b64(w)}"}`),
    audioOut: (out) => {
      const m = json(out);
      assert.deepEqual([m.eventType, m.media.contentType], ["playAudio", "audio/pcmu"]);
      return unb64(m.media.payload);
    },
    stop: raw(
      '{"eventType":"stop","metadata":{"accountId":"9900000","callId":"c-0001","streamId":"s-0001","streamName":"s1"}}',
    ),
    clear: { eventType: "clear" },
    mark: undefined,
  },
  {
    carrier: "sinch",
    encoding: "l16",
    rate: 16000,
    start: raw(
      '{"command":"connect","version":1,"callId":"call-1","applicationKey":"app-1","codec":"PCM","sampleRate":16000,"callHeaders":{"k":"v"}}',
    ),
    expectStart: { callId: "call-1", params: { k: "v" } },
    replies: (replies) => assert.deepEqual(replies.map(json), [{ command: "answer" }]),
    media: binary,
    audioOut: binaryOut,
    clear: { command: "clear" },
    mark: undefined,
  },
];

Deno.test("the table covers every carrier once", () => {
  assert.deepEqual(CASES.map((c) => c.carrier).sort(), [...CARRIER_NAMES].sort());
  assert.equal(CARRIER_NAMES.length, 9);
});

function started(c: Case): CarrierSerializer {
  const ser = createSerializer(c.carrier);
  const got = ser.onMessage(c.start);
  assert.equal(got.type, "start", `${c.carrier} start: ${JSON.stringify(got)}`);
  const { type: _, ...rest } = got as Extract<SerIn, { type: "start" }>;
  const defined = Object.fromEntries(Object.entries(rest).filter(([, v]) => v !== undefined));
  assert.deepEqual(defined, c.expectStart);
  (c.replies ?? ((r) => assert.equal(r.length, 0)))(ser.takeReplies());
  assert.equal(ser.takeReplies().length, 0, "replies are handed out once");
  return ser;
}

for (const c of CASES) {
  Deno.test(`${c.carrier}: start, rate and carrier name`, () => {
    const ser = started(c);
    assert.equal(ser.carrier, c.carrier);
    assert.equal(ser.carrierRate(), c.rate);
    assert.ok(ser.chunkSamples() > 0 && ser.chunkSamples() % (c.rate / 100) === 0);
  });

  Deno.test(`${c.carrier}: media decodes known ${c.encoding} bytes and encodes them back`, () => {
    const ser = started(c);
    const wire = WIRE[c.encoding];
    const got = ser.onMessage(c.media(wire.bytes));
    assert.equal(got.type, "audio", JSON.stringify(got));
    const audio = (got as Extract<SerIn, { type: "audio" }>).audio;
    assert.deepEqual([...audio.pcm], wire.pcm);
    assert.equal(audio.sampleRate, c.rate);
    assert.equal(audio.numChannels, 1);
    const out = ser.encodeAudio({
      pcm: Int16Array.from(wire.pcm),
      sampleRate: c.rate,
      numChannels: 1,
    });
    assert.deepEqual([...c.audioOut(out)], [...wire.bytes]);
  });

  Deno.test(`${c.carrier}: dtmf, mark echo and stop`, () => {
    const ser = started(c);
    if (c.dtmf) assert.deepEqual(ser.onMessage(c.dtmf), { type: "dtmf", key: "5" });
    if (c.markIn) assert.deepEqual(ser.onMessage(c.markIn), { type: "mark", name: "utt-7" });
    if (c.stop) assert.deepEqual(ser.onMessage(c.stop), { type: "stop" });
    // Closing the socket ends the stream on every carrier.
    assert.deepEqual(ser.onMessage({ type: "close" }), { type: "stop" });
  });

  Deno.test(`${c.carrier}: clear and mark out`, () => {
    const ser = started(c);
    const clear = ser.encodeClear();
    const mark = ser.encodeMark("utt-7");
    if (c.clear === undefined) assert.equal(clear, undefined);
    else assert.deepEqual(json(clear), c.clear);
    if (c.mark === undefined) assert.equal(mark, undefined);
    else assert.deepEqual(json(mark), c.mark);
  });

  Deno.test(`${c.carrier}: malformed, mistyped and unknown input is ignored with a reason`, () => {
    const ser = started(c);
    const bad: WsIn[] = [
      { type: "text", data: "{not json" },
      { type: "text", data: "[1,2]" },
      { type: "text", data: "null" },
      text({}),
      text({ event: 5, eventType: 5, type: 5, command: 5 }),
      text({ event: "bogus", eventType: "bogus", type: "bogus", command: "bogus" }),
    ];
    if (c.handshake) bad.push(c.handshake);
    if (c.media === binary) {
      if (c.encoding === "l16") bad.push(binary(new Uint8Array(3)));
    } else {
      bad.push({ type: "binary", data: new Uint8Array(4) });
      const good = JSON.parse((c.media(new Uint8Array([1, 2])) as { data: string }).data);
      for (const payload of [42, "@@not base64@@", ""]) {
        const msg = structuredClone(good);
        if (msg.media) msg.media.payload = payload;
        else msg.payload = payload;
        bad.push(text(msg));
      }
    }
    if (c.dtmf) {
      const msg = JSON.parse((c.dtmf as { data: string }).data);
      if (msg.dtmf) msg.dtmf.digit = "55";
      else if (msg.parameters) msg.parameters.digit = "x";
      else msg.digit = 7;
      bad.push(text(msg));
    }
    for (const msg of bad) {
      const got = ser.onMessage(msg);
      assert.equal(got.type, "ignore", `${JSON.stringify(msg)} gave ${JSON.stringify(got)}`);
      assert.ok((got as { reason: string }).reason.length > 0);
    }
  });
}

Deno.test("createSerializer gives a fresh instance per call and refuses unknown carriers", () => {
  const a = createSerializer("twilio");
  const b = createSerializer("twilio");
  assert.notEqual(a, b);
  a.onMessage(CASES[0].start);
  assert.equal(json(b.encodeClear()).streamSid, undefined, "stream ids are per instance");
  assert.throws(
    () => createSerializer("skype"),
    (e) => e instanceof FlowcatError && e.kind === "config" && /twilio/.test(e.message),
  );
  assert.throws(() => createSerializer("toString"), FlowcatError);
});
