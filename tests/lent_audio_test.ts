import assert from "node:assert/strict";
import {
  type Direction,
  type Frame,
  FrameProcessor,
  type Link,
  type MediaIn,
  type MediaTransport,
  Pipeline,
  PipelineTask,
  type WsIn,
} from "../mod.ts";
import { WsMediaTransport } from "../telephony/ws_transport.ts";
import { createSerializer } from "../telephony/serializers/mod.ts";
import { TransportInput } from "../core/processors/transport.ts";
import { ulawEncode } from "../core/audio/g711.ts";
import { silentLogger } from "../core/log.ts";
import { until } from "./_core_helpers.ts";

/** A Twilio media message whose 160 mu-law samples all decode to about `level`. */
function media(level: number): WsIn {
  const payload = ulawEncode(new Int16Array(160).fill(level)).toBase64();
  return {
    type: "text",
    data: `{"event":"media","streamSid":"MZ1","media":{"track":"inbound","payload":"${payload}"}}`,
  };
}

const START: WsIn = {
  type: "text",
  data: JSON.stringify({
    event: "start",
    streamSid: "MZ1",
    start: { callSid: "CA1", streamSid: "MZ1" },
  }),
};

/** A socket fed by the test: pull from `inbox`, or push through the returned function. */
function fakeSocket(inbox: WsIn[]) {
  const rig = { push: undefined as ((m: WsIn | undefined) => void) | undefined };
  const socket = {
    recv: () => Promise.resolve(inbox.shift()),
    listen(fn: (m: WsIn | undefined) => void) {
      rig.push = fn;
    },
    sendText: () => Promise.resolve(),
    sendBinary: () => Promise.resolve(),
  };
  return { socket, rig };
}

Deno.test("push mode lends decoded mu-law (one buffer, right samples at delivery); pull mode gives fresh PCM", async () => {
  const { socket, rig } = fakeSocket([START]);
  const t = new WsMediaTransport(socket, createSerializer("twilio"));
  assert.equal((await t.waitForStart())?.callId, "CA1");
  const got: { pcm: Int16Array; first: number; lent: boolean | undefined }[] = [];
  t.listen((m) => {
    if (m?.type === "audio") got.push({ pcm: m.audio.pcm, first: m.audio.pcm[0], lent: m.lent });
  });
  rig.push!(media(1000));
  rig.push!(media(-2000));
  assert.equal(got.length, 2);
  assert.deepEqual(got.map((g) => g.lent), [true, true]);
  assert.ok(Math.abs(got[0].first - 1000) < 40 && Math.abs(got[1].first + 2000) < 80, "samples");
  assert.equal(got[0].pcm.buffer, got[1].pcm.buffer, "one reused buffer");
  assert.equal(got[0].pcm[0], got[1].first, "the first event's samples were overwritten");

  // A leg read with recv (no push) never lends: its events may wait in a promise queue.
  const pulled = fakeSocket([START, media(1000), media(-2000)]).socket;
  const p = new WsMediaTransport({ ...pulled, listen: undefined }, createSerializer("twilio"));
  assert.equal((await p.recv())?.type, "start");
  const a = await p.recv();
  const b = await p.recv();
  assert.ok(a?.type === "audio" && b?.type === "audio");
  assert.equal(a.lent, undefined);
  assert.notEqual(a.audio.pcm.buffer, b.audio.pcm.buffer);
  assert.ok(Math.abs(a.audio.pcm[0] - 1000) < 40, "the first event kept its samples");
});

/** Frames the tap saw downstream, as their first sample and rate. */
async function inputFrames(pipelineRate: number): Promise<[number, number][]> {
  const shared = new Int16Array(160);
  let deliver: ((m: MediaIn | undefined) => void) | undefined;
  const leg: MediaTransport = {
    recv: () => Promise.reject(new Error("push mode must not be read")),
    listen(fn) {
      deliver = fn;
      fn({ type: "start", callId: "lent-1" });
      // Like a carrier leg: every event's PCM is the same buffer, rewritten for the next one.
      for (let i = 1; i <= 3; i++) {
        shared.fill(i * 1000);
        fn({ type: "audio", audio: { pcm: shared, sampleRate: 8000, numChannels: 1 }, lent: true });
      }
      shared.fill(0);
    },
    sendAudio: () => Promise.resolve(),
    sendClear: () => Promise.resolve(),
    carrierRate: () => 8000,
  };
  const kept: Int16Array[] = [];
  const rates: number[] = [];
  class Keeper extends FrameProcessor {
    override processFrame(f: Frame, d: Direction, l: Link) {
      if (f.kind === "InputAudio") {
        kept.push(f.audio.pcm); // a processor that keeps frames (a recorder, a queue)
        rates.push(f.audio.sampleRate);
      }
      l.push(f, d);
    }
  }
  const task = new PipelineTask(new Pipeline([new TransportInput(leg), new Keeper("keeper")]), {
    idleTimeoutMs: null,
    audioInSampleRate: pipelineRate,
    logger: silentLogger,
  });
  task.onStarted(async () => {
    await until(() => kept.length === 3);
    deliver!({ type: "stop" });
  });
  await task.run();
  // The middle of each frame (past the resampler's start-up transient).
  return kept.map((pcm, i) => [pcm[pcm.length - 1], rates[i]]);
}

Deno.test("TransportInput: frames made from lent audio own their samples, resampled or not", async () => {
  assert.deepEqual(await inputFrames(8000), [[1000, 8000], [2000, 8000], [3000, 8000]]);
  const up = await inputFrames(16000);
  assert.deepEqual(up.map(([, rate]) => rate), [16000, 16000, 16000]);
  for (const [i, [v]] of up.entries()) {
    assert.ok(Math.abs(v - (i + 1) * 1000) < 150, `frame ${i} kept its level (${v})`);
  }
});
