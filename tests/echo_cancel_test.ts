import assert from "node:assert/strict";
import {
  type Direction,
  EchoCancelProcessor,
  type Frame,
  FrameProcessor,
  inputAudio,
  type Link,
  makeFrame,
  Pipeline,
  PipelineTask,
  TransportOutput,
} from "../mod.ts";
import { EchoReference } from "../core/audio/aec_reference.ts";
import { noise } from "../core/audio/pcm.ts";
import { silentLogger } from "../core/log.ts";
import { ECHO_CANCEL_DEFAULT, echoCancelFor } from "../server/echo_cancel_policy.ts";
import { buildS2sTask } from "../core/builders.ts";
import type { MediaTransport } from "../core/seams.ts";
import { EchoRealtime } from "../providers/echo/realtime.ts";
import { MemorySessionSource } from "../server/session_store.ts";
import { GraphBrain, parseGraphSpec } from "../core/agent/mod.ts";
import { parse, yaml } from "./_server_config_helpers.ts";
import { drive } from "./_core_helpers.ts";
import { FakeLeg } from "./_fake_leg.ts";

const mono = (pcm: Int16Array, sampleRate = 8000) => ({ pcm, sampleRate, numChannels: 1 });

Deno.test("echo reference: audio lands at its playout time, gaps are silence", () => {
  const ref = new EchoReference(8000);
  const a = new Int16Array(160).fill(100), b = new Int16Array(160).fill(200);
  ref.write(mono(a), 1000); // the origin
  ref.write(mono(b), 1040); // 20 ms of silence between
  const out = new Int16Array(480);
  ref.read(out, 1060); // the 60 ms that ended at 1060
  assert.equal(out[0], 100);
  assert.equal(out[159], 100);
  assert.equal(out[160], 0);
  assert.equal(out[319], 0);
  assert.equal(out[320], 200);
  assert.equal(out[479], 200);
});

Deno.test("echo reference: reads count samples, so late arrivals keep the alignment", () => {
  const ref = new EchoReference(8000);
  const ramp = new Int16Array(8000).map((_, i) => i);
  ref.write(mono(ramp), 0);
  const out = new Int16Array(160);
  ref.read(out, 20);
  assert.equal(out[0], 0);
  // Three frames late by 50 ms each (a burst), still read back to back.
  ref.read(out, 90);
  assert.equal(out[0], 160);
  ref.read(out, 110);
  assert.equal(out[0], 320);
  // Audio cannot arrive before it was spoken: a count ahead of the clock re-anchors.
  ref.read(out, 40);
  assert.equal(out[0], 160);
});

Deno.test("echo reference: resamples what was sent to its own rate", () => {
  const ref = new EchoReference(8000);
  ref.write(mono(new Int16Array(480).fill(1000), 24000), 0);
  const out = new Int16Array(160);
  ref.read(out, 20);
  assert.ok(Math.abs(out[120] - 1000) < 30, `${out[120]}`);
});

/** Collects what reaches the end of the pipeline. */
class Sink extends FrameProcessor {
  frames: Frame[] = [];
  override processFrame(frame: Frame, dir: Direction, link: Link): void {
    if (dir === "downstream") this.frames.push(frame);
    link.push(frame, dir);
  }
}

Deno.test("echo cancel processor: real-time echo of what was sent is removed", async () => {
  const aec = new EchoCancelProcessor();
  const sink = new Sink("sink");
  const task = new PipelineTask(new Pipeline([aec, sink]), {
    idleTimeoutMs: null,
    logger: silentLogger,
  });
  const ref = noise(8000 * 3, 4000, 5);
  const delay = 800; // 100 ms of bulk delay
  const frames = ref.length / 160;
  await drive(task, async () => {
    const t0 = performance.now();
    for (let k = 0; k < frames; k++) {
      // The reference is on the playout timeline (smooth); the echo comes 100 ms later.
      aec.reference(mono(ref.subarray(k * 160, k * 160 + 160)), t0 + 20 * k);
      const echo = new Int16Array(160);
      for (let i = 0; i < 160; i++) {
        const j = k * 160 + i - delay;
        echo[i] = j >= 0 ? Math.round(0.5 * ref[j] - 0.2 * (j > 2 ? ref[j - 3] : 0)) : 0;
      }
      await task.queueFrame(inputAudio(mono(echo)));
      const wait = t0 + 20 * (k + 1) - performance.now();
      if (wait > 0) await new Promise((r) => setTimeout(r, wait));
    }
    await task.stopWhenDone();
  });
  const audio = sink.frames.flatMap((f) => f.kind === "InputAudio" ? [f.audio.pcm] : []);
  assert.equal(audio.length, frames);
  let inE = 0, outE = 0;
  for (let k = frames - 50; k < frames; k++) {
    for (let i = 0; i < 160; i++) outE += audio[k][i] ** 2;
    inE += 0.29 * 160 * 4000 ** 2 / 3; // the echo's power: (0.5^2 + 0.2^2) of the noise's
  }
  const erle = 10 * Math.log10(inE / Math.max(outE, 1));
  assert.ok(erle >= 25, `ERLE over the last second ${erle.toFixed(1)} dB`);
  assert.ok(aec.erleDb >= 25, `reported ERLE ${aec.erleDb}`);
});

Deno.test("echo cancel processor: off passes frames as they are; UpdateSettings turns it on", async () => {
  const aec = new EchoCancelProcessor({ enabled: false });
  const sink = new Sink("sink");
  const task = new PipelineTask(new Pipeline([aec, sink]), {
    idleTimeoutMs: null,
    logger: silentLogger,
  });
  const f1 = inputAudio(mono(noise(160, 3000, 1)));
  const f2 = inputAudio(mono(noise(160, 3000, 2)));
  const on = makeFrame("UpdateSettings", { target: "echo_cancel", settings: { enabled: true } });
  await drive(task, async () => {
    await task.queueFrame(f1);
    await task.queueFrame(on);
    await task.queueFrame(f2);
    await task.stopWhenDone();
  });
  const audio = sink.frames.filter((f) => f.kind === "InputAudio");
  assert.equal(audio[0], f1, "off: the same frame");
  assert.notEqual(audio[1], f2, "on: a new frame (one block later)");
  assert.ok(aec.enabled);
});

Deno.test("transport output: onSent hears each chunk with its place on the playout timeline", async () => {
  const leg = new FakeLeg();
  const output = new TransportOutput(leg);
  const heard: number[] = [];
  output.onSent((audio, at) => {
    assert.equal(audio.pcm.length, 160);
    heard.push(at);
  });
  const task = new PipelineTask(new Pipeline([output]), {
    idleTimeoutMs: null,
    logger: silentLogger,
  });
  await drive(task, async () => {
    await task.queueFrame(makeFrame("OutputAudio", { audio: mono(new Int16Array(800)) }));
    await task.stopWhenDone();
  });
  assert.equal(heard.length, 5);
  for (let i = 1; i < 5; i++) assert.ok(Math.abs(heard[i] - heard[i - 1] - 20) < 1e-6);
});

Deno.test("config: audio.echo_cancel unset is told apart from an explicit on, off or auto", async () => {
  const plain = await parse(yaml(""));
  assert.ok(plain.ok);
  assert.equal(plain.config.audio.echoCancel, undefined);
  for (const value of ["auto", "on", "off"] as const) {
    const set = await parse(yaml(`audio: { echo_cancel: ${value} }`));
    assert.ok(set.ok);
    assert.equal(set.config.audio.echoCancel, value);
  }
  const bad = await parse(yaml("audio: { echo_cancel: yes }"));
  assert.equal(bad.ok, false);
});

Deno.test("echo cancel per transport: on, off and auto as set; unset is on for telephone legs", () => {
  const legs = ["carrier", "sip", "outbound", "browser"] as const;
  for (const leg of legs) {
    assert.equal(echoCancelFor("on", leg), true, `on, ${leg}`);
    assert.equal(echoCancelFor("off", leg), false, `off, ${leg}`);
    assert.equal(echoCancelFor("auto", leg), leg !== "browser", `auto, ${leg}`);
  }
  // Browsers cancel their own echo; every telephone leg gets the canceller (docs/audio.md).
  assert.equal(ECHO_CANCEL_DEFAULT, "auto");
  for (const leg of legs) {
    assert.equal(echoCancelFor(undefined, leg), leg !== "browser", `unset, ${leg}`);
  }
});

Deno.test("call builders: echoCancel puts the canceller right after the input, fed by the output", async () => {
  const parsed = parseGraphSpec(await Deno.readTextFile("examples/graph.yaml"));
  if (!parsed.ok) throw new Error("example graph invalid");
  const leg: MediaTransport = {
    recv: () => Promise.resolve(undefined),
    sendAudio: () => Promise.resolve(),
    sendClear: () => Promise.resolve(),
    carrierRate: () => 8000,
  };
  const sessions = new MemorySessionSource({ provider: "echo" });
  for (const echoCancel of [true, false]) {
    const run = await sessions.createRun("carrier", { carrier: "twilio" });
    const seen = new Set<string>();
    const task = buildS2sTask({
      transport: leg,
      brain: new GraphBrain(parsed.spec),
      session: sessions,
      runId: run.runId,
      token: run.token,
      realtime: new EchoRealtime(),
      model: "echo",
      record: false,
      echoCancel,
      taskParams: {
        idleTimeoutMs: null,
        logger: silentLogger,
        observers: [{ onProcess: (e) => void seen.add(e.processor) }],
      },
    });
    await task.run();
    const order = [...seen];
    if (echoCancel) {
      assert.ok(task.parts.echoCancel instanceof EchoCancelProcessor);
      assert.deepEqual(order.slice(0, 3), ["TransportInput", "EchoCancel", "RealtimeProcessor"]);
    } else {
      assert.equal(task.parts.echoCancel, undefined);
      assert.ok(!order.includes("EchoCancel"));
    }
  }
});
