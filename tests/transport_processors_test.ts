import assert from "node:assert/strict";
import {
  type Direction,
  type Frame,
  FrameProcessor,
  type Link,
  makeFrame,
  type MediaIn,
  type MediaTransport,
  outputAudio,
  Pipeline,
  PipelineTask,
  SENT,
} from "../mod.ts";
import { TransportInput, TransportOutput } from "../core/processors/transport.ts";
import { silentLogger } from "../core/log.ts";
import { until } from "./_core_helpers.ts";
import { FakeLeg } from "./_fake_leg.ts";

class Echo extends FrameProcessor {
  override processFrame(f: Frame, d: Direction, link: Link) {
    if (f.kind === "InputAudio") link.pushDown(outputAudio(f.audio));
    else link.push(f, d);
  }
}

Deno.test("input resamples 8 kHz to the task rate; output paces at real time; stream stop ends the call", async () => {
  const leg = new FakeLeg();
  const edges: string[] = [];
  const connected: unknown[] = [];
  const task = new PipelineTask(
    new Pipeline([new TransportInput(leg), new Echo(), new TransportOutput(leg)]),
    {
      idleTimeoutMs: null,
      logger: silentLogger,
    },
  );
  task.onFrameReachedUpstream(
    ["BotStartedSpeaking", "BotStoppedSpeaking", "BotSpeaking"],
    (f) => void edges.push(f.kind),
  );
  task.onFrameReachedDownstream(["ClientConnected"], (f) => void connected.push(f.extra));
  task.onStarted(async () => {
    leg.feed({ type: "start", callId: "call-9" });
    for (let i = 0; i < 12; i++) {
      leg.feed({
        type: "audio",
        audio: { pcm: new Int16Array(160).fill(i), sampleRate: 8000, numChannels: 1 },
      });
    }
    await until(() => leg.sent.length === 12, 3000, "12 chunks played");
    await until(() => edges.includes("BotStoppedSpeaking"), 1000, "playback finished");
    leg.feed({ type: "stop" });
  });
  const reason = await task.run();
  assert.deepEqual(reason, { kind: "end", reason: "caller hung up" });
  assert.deepEqual(connected, [{ callId: "call-9" }]);
  // Echoed at the task's 16 kHz, chunked to 20 ms (320 samples), paced ~20 ms apart.
  assert.ok(leg.sent.every((s) => s.audio.sampleRate === 16000 && s.audio.pcm.length === 320));
  const span = leg.sent[11].at - leg.sent[0].at;
  // The first chunks go out at once (40 ms lead), the rest as the far end plays.
  assert.ok(span >= 160 && span < 400, `12 chunks over ${span} ms`);
  assert.deepEqual(edges.filter((e) => e !== "BotSpeaking"), [
    "BotStartedSpeaking",
    "BotStoppedSpeaking",
  ]);
  assert.equal(edges.filter((e) => e === "BotSpeaking").length, 1, "one BotSpeaking per 10 chunks");
  assert.ok(leg.closed);
});

Deno.test("input in push mode: no reader; audio queued before the start follows Start; End once", async () => {
  let deliver: ((m: MediaIn | undefined) => void) | undefined;
  let listens = 0;
  const leg: MediaTransport = {
    recv: () => Promise.reject(new Error("push mode must not be read")),
    listen(fn) {
      listens++;
      deliver = fn;
      // Events the leg had queued before listen are delivered at once, in order.
      fn({ type: "start", callId: "push-1" });
      for (let i = 0; i < 3; i++) {
        fn({
          type: "audio",
          audio: { pcm: new Int16Array(160).fill(i), sampleRate: 8000, numChannels: 1 },
        });
      }
    },
    sendAudio: () => Promise.resolve(),
    sendClear: () => Promise.resolve(),
    carrierRate: () => 8000,
  };
  const seen: string[] = [];
  class Tap extends FrameProcessor {
    override start() {
      seen.push("Start");
    }
    override processFrame(f: Frame, d: Direction, l: Link) {
      if (d === "downstream") seen.push(f.kind);
      l.push(f, d);
    }
  }
  const input = new TransportInput(leg);
  const task = new PipelineTask(new Pipeline([input, new Tap("tap")]), {
    idleTimeoutMs: null,
    logger: silentLogger,
  });
  const ends: string[] = [];
  task.onFrameReachedUpstream(["End"], (f) => void ends.push(f.kind));
  task.onStarted(async () => {
    await until(() => seen.filter((k) => k === "InputAudio").length === 3);
    deliver!({ type: "stop" });
    deliver!(undefined); // the end after the stop changes nothing
  });
  const reason = await task.run();
  assert.deepEqual(reason, { kind: "end", reason: "caller hung up" });
  assert.equal(listens, 1);
  assert.equal(input.callId, "push-1");
  assert.deepEqual(seen.slice(0, 5), [
    "Start",
    "ClientConnected",
    "InputAudio",
    "InputAudio",
    "InputAudio",
  ]);
});

/** A TransportOutput on a fake leg, fed by a driver whose link the test pushes into. */
function outputRig() {
  const leg = new FakeLeg();
  const out = new TransportOutput(leg);
  const rig = { leg, out } as {
    leg: FakeLeg;
    out: TransportOutput;
    link: Link;
    task: PipelineTask;
  };
  class Driver extends FrameProcessor {
    override start(_s: unknown, _p: unknown, l: Link) {
      rig.link = l;
    }
  }
  rig.task = new PipelineTask(new Pipeline([new Driver(), out]), {
    idleTimeoutMs: null,
    logger: silentLogger,
  });
  return rig;
}

Deno.test("while playing, a chunk within the lead is sent as it arrives, not at the next clock tick", async () => {
  const rig = outputRig();
  const { leg, out, task } = rig;
  const chunk = () =>
    makeFrame("TtsAudio", {
      audio: { pcm: new Int16Array(320), sampleRate: 16000, numChannels: 1 },
    });
  const microtasks = async () => {
    for (let i = 0; i < 50; i++) await Promise.resolve();
  };
  task.onStarted(async () => {
    rig.link.pushDown(chunk());
    await until(() => leg.sent.length === 1);
    assert.ok(out.speaking);
    // Real-time arrivals: each one is sent within the same macrotask (no timer has run).
    for (let k = 2; k <= 5; k++) {
      await new Promise((r) => setTimeout(r, 20));
      rig.link.pushDown(chunk());
      await microtasks();
      assert.equal(leg.sent.length, k, `chunk ${k} sent on arrival`);
    }
    await task.stopWhenDone();
  });
  await task.run();
});

Deno.test("interruption drops queued playback and clears the far end", async () => {
  const rig = outputRig();
  const { leg, out, task } = rig;
  task.onStarted(async () => {
    rig.link.pushDown(
      makeFrame("TtsAudio", {
        audio: { pcm: new Int16Array(24000), sampleRate: 24000, numChannels: 1 },
      }),
    );
    await until(() => leg.sent.length >= 3);
    assert.ok(out.speaking);
    rig.link.broadcast(makeFrame("Interruption", {}));
    await until(() => leg.clears === 1);
    const n = leg.sent.length;
    await new Promise((r) => setTimeout(r, 80));
    assert.equal(leg.sent.length, n, "nothing plays after the interruption");
    assert.equal(out.speaking, false);
    await task.stopWhenDone();
  });
  await task.run();
  assert.ok(leg.sent.length < 50, `sent ${leg.sent.length} of 50 chunks`);
});

Deno.test("End plays out queued audio before the leg closes", async () => {
  const leg = new FakeLeg();
  const task = new PipelineTask(new Pipeline([new TransportOutput(leg)]), {
    idleTimeoutMs: null,
    logger: silentLogger,
  });
  task.onStarted(async () => {
    await task.queueFrame(
      outputAudio({ pcm: new Int16Array(1600), sampleRate: 16000, numChannels: 1 }),
    );
    await task.stopWhenDone();
  });
  await task.run();
  assert.equal(leg.sent.length, 5, "all five 20 ms chunks played");
  assert.ok(leg.closed);
});

Deno.test("output sends OutputDtmf through the leg's sendDtmf when it has one", async () => {
  const leg = new FakeLeg();
  const keys: string[][] = [];
  const dtmfLeg = Object.assign(leg, {
    sendDtmf: (k: readonly string[]) => (keys.push([...k]), Promise.resolve()),
  });
  const task = new PipelineTask(
    new Pipeline([new TransportInput(dtmfLeg), new TransportOutput(dtmfLeg)]),
    { idleTimeoutMs: null, logger: silentLogger },
  );
  task.onStarted(async () => {
    await task.queueFrame(makeFrame("OutputDtmf", { keys: ["1", "#"] }));
    await until(() => keys.length === 1, 2000, "dtmf sent");
    leg.feed(undefined);
  });
  await task.run();
  assert.deepEqual(keys, [["1", "#"]]);
});

Deno.test("output reports each sentence once it has played, and where an interruption cut", async () => {
  const rig = outputRig();
  const { leg, task } = rig;
  const up: Frame[] = [];
  task.onFrameReachedUpstream(["SpokenText", "BotInterrupted"], (f) => void up.push(f));
  const ms = (n: number) =>
    makeFrame("TtsAudio", {
      audio: { pcm: new Int16Array(16 * n), sampleRate: 16000, numChannels: 1 },
    });
  let spokenAt = 0;
  task.onStarted(async () => {
    const t0 = performance.now();
    for (const [text, dur] of [["One two.", 200], ["Three four five six.", 1000]] as const) {
      rig.link.pushDown(makeFrame("TtsText", { text, utteranceId: "reply-1" }));
      rig.link.pushDown(makeFrame("TtsStarted", {}));
      rig.link.pushDown(ms(dur));
      rig.link.pushDown(makeFrame("TtsStopped", {}));
    }
    await until(() => up.length === 1, 2000, "first sentence played");
    spokenAt = performance.now() - t0;
    // Half of the second sentence has been sent (so a little less played): barge in.
    await until(() => leg.sentMs() >= 700, 2000, "second sentence half sent");
    rig.link.broadcast(makeFrame("Interruption", {}));
    await until(() => up.length === 2, 2000, "BotInterrupted");
    await task.stopWhenDone();
  });
  await task.run();
  // Played, not merely sent: the far end is sent 40 ms ahead.
  assert.ok(spokenAt >= 150, `first sentence reported after ${spokenAt} ms`);
  assert.deepEqual(up[0], {
    ...up[0],
    kind: "SpokenText",
    utteranceId: "reply-1",
    text: "One two.",
  });
  const bi = up[1];
  assert.equal(bi.kind, "BotInterrupted");
  const cut = bi.kind === "BotInterrupted" ? bi.cut! : undefined;
  assert.ok(cut && cut.fraction > 0.3 && cut.fraction < 0.6, JSON.stringify(cut));
  assert.equal(cut.utteranceId, "reply-1");
  assert.equal(cut.text, "Three four five six.");
  assert.match(cut.heard, /^Three( four)?$/); // 5 to 10 of its 17 letters, whole words
});

Deno.test("input in read mode: a leg that already holds its start sends it after Start", async () => {
  // A SIP leg queues its stream start before the call runs; it must not overtake Start.
  const leg = new FakeLeg();
  leg.feed({ type: "start", callId: "sip-1" });
  const seen: string[] = [];
  class Tap extends FrameProcessor {
    override async start() {
      // A slow start hook (an engine loading) below the input.
      await new Promise((r) => setTimeout(r, 30));
      seen.push("Start");
    }
    override processFrame(f: Frame, d: Direction, l: Link) {
      if (d === "downstream") seen.push(f.kind);
      l.push(f, d);
    }
  }
  const task = new PipelineTask(new Pipeline([new TransportInput(leg), new Tap("tap")]), {
    idleTimeoutMs: null,
    logger: silentLogger,
  });
  task.onStarted(async () => {
    await until(() => seen.includes("ClientConnected"));
    leg.feed({ type: "stop" });
  });
  await task.run();
  assert.deepEqual(seen.slice(0, 2), ["Start", "ClientConnected"]);
});

Deno.test("a hold stops the bot's audio at once; playout resumes where it stopped, or an interruption clears it", async () => {
  const rig = outputRig();
  const { leg, out, task } = rig;
  const ms = () => leg.sentMs();
  task.onStarted(async () => {
    // 1 s of speech.
    rig.link.pushDown(
      makeFrame("TtsAudio", {
        audio: { pcm: new Int16Array(16000), sampleRate: 16000, numChannels: 1 },
      }),
    );
    await until(() => ms() >= 200);
    rig.link.pushDown(makeFrame("BotAudioHold", { ms: 150 }));
    await new Promise((r) => setTimeout(r, 5));
    const held = ms();
    await new Promise((r) => setTimeout(r, 100));
    assert.equal(ms(), held, "nothing is sent while held");
    assert.ok(out.speaking, "the bot is still mid-utterance");
    await until(() => ms() > held, 500, "playout resumes after the hold");
    assert.ok(ms() < 1000, "from where it stopped, not skipped");
    // Held again, then the barge-in is confirmed: nothing more is sent.
    rig.link.pushDown(makeFrame("BotAudioHold", { ms: 300 }));
    await new Promise((r) => setTimeout(r, 5));
    const cut = ms();
    rig.link.broadcast(makeFrame("Interruption", {}));
    await until(() => leg.clears === 1);
    await new Promise((r) => setTimeout(r, 400));
    assert.equal(ms(), cut, "the interruption dropped what was held");
    await task.stopWhenDone();
  });
  await task.run();
});

Deno.test("output: a send that fails later is reported; a send already done (SENT) reports nothing", async () => {
  const rig = outputRig();
  const { leg, task } = rig;
  const errors: string[] = [];
  task.onError((message) => void errors.push(message));
  let failing = false;
  leg.sendAudio = (audio) => {
    leg.sent.push({ at: performance.now(), audio });
    return failing ? Promise.reject(new Error("socket gone")) : SENT;
  };
  const chunk = () =>
    makeFrame("TtsAudio", {
      audio: { pcm: new Int16Array(160), sampleRate: 8000, numChannels: 1 },
    });
  task.onStarted(async () => {
    rig.link.pushDown(chunk());
    await until(() => leg.sent.length === 1);
    await new Promise((r) => setTimeout(r, 30));
    assert.deepEqual(errors, []);
    failing = true;
    rig.link.pushDown(chunk());
    await until(() => errors.length === 1, 2000, "the failed send reported");
    await task.stopWhenDone();
  });
  await task.run();
  assert.deepEqual(errors, ["send audio failed: socket gone"]);
});
