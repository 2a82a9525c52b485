/**
 * Answering-machine detection in a call: AmdProcessor after the input, the BrainProcessor over a
 * graph whose first node offers `answered_by_machine` and `answered_by_human`, and VoicemailGate
 * before the output. A machine greeting (espeak-ng) with a sox beep moves the graph to its
 * voicemail node, and the message the model then speaks reaches the leg only after the beep;
 * a human "Hello?" moves it to the conversation node with nothing held. The model is never sent
 * a result for a call it did not make.
 */

import assert from "node:assert/strict";
import { GraphBrain, parseGraphSpec } from "../core/agent/mod.ts";
import { concatInt16, sine } from "../core/audio/pcm.ts";
import { type Direction, type Frame, outputAudio, Pipeline, PipelineTask } from "../mod.ts";
import { silentLogger } from "../core/log.ts";
import { FrameProcessor, type Link } from "../core/processor.ts";
import { AmdProcessor, VoicemailGate } from "../core/processors/amd.ts";
import { BrainProcessor } from "../core/processors/brain.ts";
import { TransportInput, TransportOutput } from "../core/processors/transport.ts";
import { createAgentServer } from "../server/app.ts";
import { parseConfigText } from "../server/config.ts";
import { sleep, until } from "./_core_helpers.ts";
import { dialTwilio } from "./_twilio_client.ts";
import { FakeLeg } from "./_fake_leg.ts";
import { mixHiss, RATE, silence, voiceMaker } from "./_voice_audio.ts";

const { soxBeep, speak } = voiceMaker(
  await Deno.makeTempDir({ dir: "/tmp", prefix: "flowcat-amd-call-" }),
);

const GRAPH = `
version: 1
start: dial
nodes:
  - id: dial
    prompt: Wait for the callee.
    transitions:
      - name: answered_by_machine
        description: A machine answered.
        target: voicemail
      - name: answered_by_human
        description: A person answered.
        target: talk
  - id: voicemail
    prompt: Leave the message.
    transitions:
      - { name: done, description: Message left., target: bye }
  - id: talk
    prompt: Talk to the person.
    transitions:
      - { name: done, description: Done., target: bye }
  - id: bye
    prompt: Goodbye.
    terminal: true
`;

/** Plays the model: on each move of the graph, speaks 200 ms (the message, or a greeting). */
class Model extends FrameProcessor {
  readonly up: Frame[] = [];
  override processFrame(frame: Frame, dir: Direction, link: Link): void {
    link.push(frame, dir);
    if (dir !== "upstream") return;
    this.up.push(frame);
    if (frame.kind === "UpdateSettings") {
      const pcm = sine({ freq: 300, sampleRate: 8000, samples: 1600, amplitude: 6000 });
      link.pushDown(outputAudio({ pcm, sampleRate: 8000, numChannels: 1 }));
    }
  }
}

function rig() {
  const leg = new FakeLeg();
  const parsed = parseGraphSpec(GRAPH);
  assert.ok(parsed.ok, JSON.stringify(parsed));
  const brain = new GraphBrain(parsed.spec);
  const model = new Model("model");
  const amd = new AmdProcessor();
  const gate = new VoicemailGate();
  const task = new PipelineTask(
    new Pipeline([
      new TransportInput(leg),
      amd,
      model,
      new BrainProcessor(brain),
      gate,
      new TransportOutput(leg),
    ]),
    { idleTimeoutMs: null, logger: silentLogger },
  );
  /** Feed `pcm` as 20 ms audio messages. */
  const play = (pcm: Int16Array) => {
    for (let i = 0; i < pcm.length; i += 160) {
      leg.feed({
        type: "audio",
        audio: { pcm: pcm.slice(i, i + 160), sampleRate: RATE, numChannels: 1 },
      });
    }
  };
  return { leg, brain, model, amd, gate, task, play };
}

Deno.test("amd in a call: a machine moves the graph to voicemail; the message waits for the beep", async () => {
  const { leg, brain, model, amd, gate, task, play } = rig();
  const greeting = await speak(
    "Hi, you have reached Sam. Please leave a message after the tone.",
    "en-us",
  );
  const beep = await soxBeep(1000, 0.5);
  task.onStarted(async () => {
    leg.feed({ type: "start", callId: "out-1" });
    play(mixHiss(concatInt16([silence(400), greeting, silence(300), beep.subarray(0, 2400)])));
    await until(() => brain.currentNodeId() === "voicemail", 5000, "voicemail node");
    await sleep(100);
    assert.equal(amd.verdict, "machine");
    assert.ok(gate.holding, "the message is held while the greeting and the beep play");
    assert.equal(leg.sentMs(), 0, "nothing of the message was sent before the beep ended");
    play(mixHiss(concatInt16([beep.subarray(2400), silence(600)])));
    await until(() => leg.sentMs() >= 200, 5000, "the message after the beep");
    assert.equal(gate.holding, false);
    leg.feed(undefined);
  });
  await task.run();
  assert.equal(
    model.up.filter((f) => f.kind === "FunctionCallResult").length,
    0,
    "no result for a call the model never made",
  );
});

Deno.test("amd in a call: a human's hello moves the graph to the conversation, nothing held", async () => {
  const { leg, brain, model, gate, task, play } = rig();
  const hello = await speak("Hello?", "en-gb");
  task.onStarted(async () => {
    leg.feed({ type: "start", callId: "out-2" });
    play(mixHiss(concatInt16([silence(300), hello, silence(1200)])));
    await until(() => brain.currentNodeId() === "talk", 5000, "talk node");
    assert.equal(gate.holding, false);
    // The model's speech goes straight out.
    await until(() => leg.sentMs() >= 200, 5000, "the bot's speech");
    leg.feed(undefined);
  });
  await task.run();
  const moves = model.up.filter((f) => f.kind === "UpdateSettings");
  assert.equal(moves.length, 1, "one move: answered_by_human");
  assert.equal(model.up.filter((f) => f.kind === "FunctionCallResult").length, 0);
});

Deno.test("amd on a call the server placed: a machine's greeting and beep move the graph to voicemail", async () => {
  const parsed = parseGraphSpec(GRAPH);
  assert.ok(parsed.ok);
  const config = {
    agent: { graph: parsed.spec },
    pipeline: "s2s",
    providers: { realtime: { name: "echo", options: { tts: "none" } } },
    telephony: {
      public_url: "https://agent.example.com",
      carriers: ["twilio"],
      answering_machine: { enabled: true },
    },
  };
  const r = await parseConfigText(JSON.stringify(config), "json", ".");
  if (!r.ok) throw new Error(JSON.stringify(r.problems));
  const app = await createAgentServer({
    config: r.config,
    env: (n) => (n === "TWILIO_AUTH_TOKEN" ? "tw-secret" : undefined),
    logger: silentLogger,
  });
  const server = Deno.serve({ hostname: "127.0.0.1", port: 0, onListen: () => {} }, app.handler);
  try {
    // As if POST /calls had placed it: an outbound run, answered through its own answer URL.
    const placed = await app.sessions.createRun("outbound", { carrier: "twilio", to: "+15550100" });
    const { call, runId } = await dialTwilio(`http://127.0.0.1:${server.addr.port}`, {
      secret: "tw-secret",
      publicUrl: "https://agent.example.com",
      runId: placed.runId,
    });
    const greeting = await speak("Hello, this is Sam, please leave a message.", "en-us", 200);
    // Sent faster than real time (5 ms apart): the detector counts audio, not the clock.
    await call.speak(mixHiss(concatInt16([silence(300), greeting, await soxBeep(850, 0.4)])), 5);
    await call.speak(silence(1000), 5);
    await call.hangup();
    const run = app.sessions.get(runId)!;
    await until(() => run.finalize !== undefined, 8000, "finalized");
    const lines = JSON.parse(
      new TextDecoder().decode(app.sessions.memoryArtifact(`run-${runId}-transcript.json`)!),
    ).lines as { role: string; text: string; tool?: string }[];
    const moves = lines.filter((l) => l.role === "tool").map((l) => l.tool);
    assert.deepEqual(moves, ["answered_by_machine"], JSON.stringify(lines));
    await call.close();
  } finally {
    await app.calls.drain(1000);
    await server.shutdown();
    await app.close();
  }
});
