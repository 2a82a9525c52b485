import assert from "node:assert/strict";
import {
  GenericSerializer,
  pcm16FromBytes,
  pcm16ToBytes,
} from "../telephony/generic_serializer.ts";
import { socketFromWebSocket, WsMediaTransport } from "../telephony/ws_transport.ts";
import { SENT, type SerIn, type WsIn } from "../mod.ts";
import { createSerializer } from "../telephony/serializers/mod.ts";
import { ulawDecode } from "../core/audio/g711.ts";
import { memoryLogger } from "../core/log.ts";

Deno.test("generic serializer: start, audio, dtmf, mark, stop, and malformed input ignored", () => {
  const s = new GenericSerializer();
  const text = (o: unknown): WsIn => ({ type: "text", data: JSON.stringify(o) });
  assert.deepEqual(s.onMessage(text({ event: "start", call_id: "c1", sample_rate: 8000 })), {
    type: "start",
    callId: "c1",
  });
  assert.equal(s.carrierRate(), 8000);
  const pcm = new Int16Array([1, -2, 32767, -32768]);
  const audio = s.onMessage({ type: "binary", data: pcm16ToBytes(pcm) });
  assert.equal(audio.type, "audio");
  if (audio.type === "audio") {
    assert.deepEqual([...audio.audio.pcm], [...pcm]);
    assert.equal(audio.audio.sampleRate, 8000);
  }
  assert.deepEqual(s.onMessage(text({ event: "dtmf", digit: "#" })), { type: "dtmf", key: "#" });
  assert.deepEqual(s.onMessage(text({ event: "mark", name: "m" })), { type: "mark", name: "m" });
  assert.deepEqual(s.onMessage(text({ event: "stop" })), { type: "stop" });
  for (
    const bad of [
      "{",
      "[]",
      "null",
      JSON.stringify({ event: "start" }),
      JSON.stringify({ event: "dtmf", digit: "x" }),
      JSON.stringify({ event: "start", call_id: "c", sample_rate: 3 }),
      JSON.stringify({ event: "wat" }),
    ]
  ) {
    assert.equal(s.onMessage({ type: "text", data: bad }).type, "ignore", bad);
  }
  assert.equal(s.onMessage({ type: "binary", data: new Uint8Array(3) }).type, "ignore");
  assert.equal(s.encodeClear(), '{"event":"clear"}');
});

Deno.test("pcm16FromBytes handles misaligned views", () => {
  const buf = new Uint8Array(7);
  buf.set([0x34, 0x12, 0xff, 0xff], 1);
  assert.deepEqual([...pcm16FromBytes(buf.subarray(1, 5))], [0x1234, -1]);
});

Deno.test("WsMediaTransport over a loopback WebSocket: recv, resampled sendAudio, clear", async () => {
  let transport!: WsMediaTransport;
  const ready = Promise.withResolvers<void>();
  const server = Deno.serve({ hostname: "127.0.0.1", port: 0, onListen: () => {} }, (req) => {
    const { socket, response } = Deno.upgradeWebSocket(req);
    transport = new WsMediaTransport(socketFromWebSocket(socket), new GenericSerializer());
    ready.resolve();
    return response;
  });
  const ws = new WebSocket(`ws://127.0.0.1:${server.addr.port}/`);
  const client = socketFromWebSocket(ws);
  await client.opened;
  await ready.promise;
  await client.sendText(JSON.stringify({ event: "start", call_id: "abc", sample_rate: 8000 }));
  await client.sendText("not json");
  await client.sendBinary(pcm16ToBytes(new Int16Array(160).fill(100)));
  await client.sendText(JSON.stringify({ event: "dtmf", digit: "7" }));
  assert.deepEqual(await transport.recv(), { type: "start", callId: "abc" });
  const audio = await transport.recv();
  assert.equal(audio?.type, "audio");
  assert.equal(transport.ignored, 1, "the malformed message was ignored, not fatal");
  assert.deepEqual(await transport.recv(), { type: "dtmf", key: "7" });
  assert.equal(transport.carrierRate(), 8000);

  const sending = transport.sendAudio({
    pcm: new Int16Array(480).fill(1000),
    sampleRate: 24000,
    numChannels: 1,
  });
  // Done when it returns: the output transport then attaches no handler to it.
  assert.equal(sending, SENT);
  const out = await client.recv();
  assert.equal(out?.type, "binary");
  assert.equal(
    (out as { data: Uint8Array }).data.length,
    320,
    "24 kHz x 480 -> 8 kHz x 160 samples",
  );
  await transport.sendClear();
  assert.deepEqual(await client.recv(), { type: "text", data: '{"event":"clear"}' });
  await client.sendText(JSON.stringify({ event: "stop" }));
  assert.deepEqual(await transport.recv(), { type: "stop" });
  assert.equal(await transport.recv(), undefined);
  ws.close();
  await transport.close();
  await server.shutdown();
});

/** A generic serializer that owes the carrier `reply` after each `on` event; `chunk`-sample messages. */
class Replying extends GenericSerializer {
  #replies: string[] = [];
  constructor(readonly on: SerIn["type"], readonly reply: string, readonly chunk = 0) {
    super();
  }
  override onMessage(msg: WsIn) {
    const r = super.onMessage(msg);
    if (r.type === this.on) this.#replies.push(this.reply);
    return r;
  }
  takeReplies() {
    const r = this.#replies;
    this.#replies = [];
    return r;
  }
  chunkSamples() {
    return this.chunk;
  }
}

Deno.test("WsMediaTransport sends serializer replies and whole carrier-sized chunks only", async () => {
  const sent: (string | Uint8Array)[] = [];
  const inbox: WsIn[] = [{
    type: "text",
    data: JSON.stringify({ event: "start", call_id: "x", sample_rate: 8000 }),
  }];
  const socket = {
    recv: () => Promise.resolve(inbox.shift()),
    sendText: (t: string) => {
      sent.push(t);
      return Promise.resolve();
    },
    sendBinary: (b: Uint8Array) => {
      sent.push(b.slice());
      return Promise.resolve();
    },
  };
  const t = new WsMediaTransport(socket, new Replying("start", '{"event":"opened"}', 100));
  assert.deepEqual(await t.recv(), { type: "start", callId: "x" });
  assert.deepEqual([...sent], ['{"event":"opened"}'], "the handshake reply went out first");
  for (const n of [30, 30, 30, 30, 90]) {
    await t.sendAudio({ pcm: new Int16Array(n).fill(n), sampleRate: 8000, numChannels: 1 });
  }
  const audio = sent.slice(1).filter((m): m is Uint8Array => typeof m !== "string");
  assert.deepEqual(
    audio.map((b) => b.length / 2),
    [100, 100],
    "210 samples -> two chunks of 100, 10 held",
  );
  await t.sendClear();
  await t.sendAudio({ pcm: new Int16Array(100), sampleRate: 8000, numChannels: 1 });
  assert.equal(audio.length, 2);
  assert.equal(
    (sent.at(-1) as Uint8Array | undefined)?.length,
    200,
    "clear dropped the 10 held samples",
  );
});

Deno.test("WsMediaTransport push mode: held start first, queued then live events in order, replies sent, end once", async () => {
  const text = (o: unknown): WsIn => ({ type: "text", data: JSON.stringify(o) });
  const sent: string[] = [];
  let push: ((m: WsIn | undefined) => void) | undefined;
  const inbox: WsIn[] = [text({ event: "start", call_id: "p1", sample_rate: 8000 })];
  const socket = {
    recv: () => Promise.resolve(inbox.shift()),
    listen(fn: (m: WsIn | undefined) => void) {
      push = fn;
      while (inbox.length > 0) fn(inbox.shift());
    },
    sendText: (t: string) => {
      sent.push(t);
      return Promise.resolve();
    },
    sendBinary: () => Promise.resolve(),
  };
  const t = new WsMediaTransport(socket, new Replying("dtmf", '{"event":"ack"}'));
  assert.equal((await t.waitForStart())?.callId, "p1");
  inbox.push({ type: "binary", data: pcm16ToBytes(new Int16Array([7, 8])) });
  const got: unknown[] = [];
  t.listen((m) => got.push(m === undefined ? "end" : m.type === "audio" ? [...m.audio.pcm] : m));
  assert.deepEqual(got, [{ type: "start", callId: "p1" }, [7, 8]], "held start, then the queue");
  push!(text({ event: "mark", name: "m" })); // marks and ignores deliver nothing
  push!(text({ event: "wat" }));
  push!(text({ event: "dtmf", digit: "5" }));
  await Promise.resolve();
  assert.deepEqual(sent, ['{"event":"ack"}'], "the serializer's reply went out");
  push!(text({ event: "stop" }));
  push!(text({ event: "dtmf", digit: "6" })); // after the stop: nothing
  push!(undefined);
  assert.deepEqual(got.slice(2), [{ type: "dtmf", key: "5" }, { type: "stop" }, "end"]);
  assert.equal(t.ignored, 1);
});

Deno.test("socketFromWebSocket push mode over loopback: messages before and after listen, then the close", async () => {
  const server = Deno.serve({ hostname: "127.0.0.1", port: 0, onListen: () => {} }, (req) => {
    const { socket, response } = Deno.upgradeWebSocket(req);
    socket.onopen = () => {
      socket.send("a");
      socket.send("b");
      setTimeout(() => {
        socket.send("c");
        socket.close();
      }, 50);
    };
    return response;
  });
  try {
    const ws = new WebSocket(`ws://127.0.0.1:${server.addr.port}/`);
    const sock = socketFromWebSocket(ws);
    await sock.opened;
    await new Promise((r) => setTimeout(r, 20)); // "a" and "b" wait in the queue
    const got: string[] = [];
    const closed = Promise.withResolvers<void>();
    sock.listen!((m) => {
      if (m === undefined) return closed.resolve();
      got.push(m.type === "text" ? m.data : m.type);
    });
    await closed.promise;
    assert.deepEqual(got, ["a", "b", "c", "close"]);
  } finally {
    await server.shutdown();
  }
});

Deno.test("WsMediaTransport: resampled audio for a binary carrier is never overwritten; a text carrier reuses its buffer safely", async () => {
  const kept: (string | Uint8Array)[] = [];
  const socket = {
    recv: () => Promise.resolve(undefined),
    sendText: (t: string) => {
      kept.push(t);
      return Promise.resolve();
    },
    sendBinary: (b: Uint8Array) => {
      kept.push(b); // kept as is, as a socket with a zero-copy send would
      return Promise.resolve();
    },
  };
  const tone = (v: number) => ({
    pcm: new Int16Array(480).fill(v),
    sampleRate: 24000,
    numChannels: 1,
  });
  for (const serializer of [new GenericSerializer(), createSerializer("twilio")]) {
    kept.length = 0;
    const t = new WsMediaTransport(socket, serializer);
    for (const v of [4000, -9000, 12000]) await t.sendAudio(tone(v));
    assert.equal(kept.length, 3);
    // Past the filter's delay every message holds its own level, not the last one's.
    const levels = kept.map((m) => {
      const pcm = typeof m === "string"
        ? ulawDecode(Uint8Array.fromBase64(JSON.parse(m).media.payload))
        : pcm16FromBytes(m);
      return pcm[pcm.length - 1];
    });
    assert.ok(Math.abs(levels[0] - 4000) < 400, `${serializer.constructor.name}: ${levels}`);
    assert.ok(Math.abs(levels[1] + 9000) < 700, `${levels}`);
    assert.ok(Math.abs(levels[2] - 12000) < 900, `${levels}`);
  }
});

Deno.test("WsMediaTransport.sendAudio: a serializer that throws gives a rejection, not a throw", async () => {
  class Broken extends GenericSerializer {
    override encodeAudio(): never {
      throw new Error("encoder broke");
    }
  }
  const socket = {
    recv: () => Promise.resolve(undefined),
    sendText: () => Promise.resolve(),
    sendBinary: () => Promise.resolve(),
  };
  const t = new WsMediaTransport(socket, new Broken());
  let sent: Promise<void> | undefined;
  assert.doesNotThrow(() => {
    sent = t.sendAudio({ pcm: new Int16Array(160), sampleRate: 16000, numChannels: 1 });
  });
  await assert.rejects(sent!, /encoder broke/);
});

Deno.test("WsMediaTransport logs a serializer's warnings, each once (Exotel's unknown encoding)", async () => {
  const text = (o: unknown): WsIn => ({ type: "text", data: JSON.stringify(o) });
  const payload = btoa(String.fromCharCode(1, 0, 2, 0));
  const inbox: WsIn[] = [
    text({ event: "start", start: { call_sid: "CA1", media_format: { encoding: "base64" } } }),
    text({ event: "media", media: { payload } }),
    text({ event: "media", media: { payload } }),
  ];
  const socket = {
    recv: () => Promise.resolve(inbox.shift()),
    sendText: () => Promise.resolve(),
    sendBinary: () => Promise.resolve(),
  };
  const logger = memoryLogger();
  const t = new WsMediaTransport(socket, createSerializer("exotel"), { logger });
  assert.equal((await t.recv())?.type, "start");
  assert.equal((await t.recv())?.type, "audio");
  assert.equal((await t.recv())?.type, "audio", "frames are decoded, not dropped");
  const warnings = logger.records.filter((r) => r.level === "warn");
  assert.equal(warnings.length, 1);
  assert.match(warnings[0].message, /exotel: unknown media_format\.encoding "base64"/);
});
