/**
 * The output's stop hold-off: BotStoppedSpeaking comes only once the far end has been silent for
 * `stopHoldOffMs`, so a gap between two bursts of the bot's audio is not a stop and a new start
 * (each of which crosses the whole pipeline); a barge-in and the end of the call do not wait.
 */
import assert from "node:assert/strict";
import { makeFrame } from "../core/frames.ts";
import { FrameProcessor, type Link } from "../core/processor.ts";
import { Pipeline } from "../core/pipeline.ts";
import { PipelineTask } from "../core/task.ts";
import { TransportOutput, type TransportOutputOptions } from "../core/processors/transport.ts";
import { playoutClockMembers } from "../core/playout_clock.ts";
import { silentLogger } from "../core/log.ts";
import { sleep, until } from "./_core_helpers.ts";
import { FakeLeg } from "./_fake_leg.ts";

interface Edge {
  kind: string;
  at: number;
}

interface Rig {
  leg: FakeLeg;
  edges: Edge[];
  /** Queue `chunks` 20 ms chunks of 8 kHz audio. */
  say(chunks: number): void;
  /** A barge-in, as the turn-taking broadcasts it. */
  interrupt(): void;
  /** When the far end will have played the last chunk sent (performance.now() ms). */
  playedAt(): number;
}

/** A TransportOutput on a fake leg, fed by a driver; `body` runs once started, then End. */
async function withOutput(
  options: TransportOutputOptions,
  body: (rig: Rig) => Promise<void>,
): Promise<{ edges: Edge[]; endedAt: number }> {
  const leg = new FakeLeg();
  let link: Link | undefined;
  class Driver extends FrameProcessor {
    override start(_s: unknown, _p: unknown, l: Link) {
      link = l;
    }
  }
  const task = new PipelineTask(
    new Pipeline([new Driver(), new TransportOutput(leg, options)]),
    { idleTimeoutMs: null, logger: silentLogger },
  );
  const edges: Edge[] = [];
  // The downstream copies: the upstream ones stop at the driver once End has passed it.
  task.onFrameReachedDownstream(
    ["BotStartedSpeaking", "BotStoppedSpeaking"],
    (f) => void edges.push({ kind: f.kind, at: performance.now() }),
  );
  const rig: Rig = {
    leg,
    edges,
    say(chunks) {
      const audio = {
        pcm: new Int16Array(160 * chunks).fill(100),
        sampleRate: 8000,
        numChannels: 1,
      };
      link!.pushDown(makeFrame("TtsAudio", { audio }));
    },
    interrupt() {
      link!.pushDown(makeFrame("Interruption", {}));
    },
    playedAt() {
      // Chunks go out at most the 40 ms lead ahead of their playout; the last one ends 20 ms
      // after it starts, so the far end is done no later than this.
      return leg.sent[leg.sent.length - 1].at + 40 + 20;
    },
  };
  let failure: unknown;
  task.onStarted(async () => {
    try {
      await body(rig);
    } catch (err) {
      failure = err;
    }
    await task.stopWhenDone();
  });
  await task.run();
  const endedAt = performance.now();
  if (failure !== undefined) throw failure;
  return { edges, endedAt };
}

const kinds = (edges: Edge[]) => edges.map((e) => e.kind);

Deno.test("a gap shorter than the hold-off is one speech; the stop comes after the hold-off", async () => {
  let lastPlayed = 0;
  const { edges } = await withOutput({ stopHoldOffMs: 1000 }, async (rig) => {
    rig.say(2);
    await until(() => rig.leg.sent.length === 2, 2000, "first burst sent");
    // The far end runs dry for about 300 ms (longer than the 200 ms catch-up: the next burst
    // starts a new timeline, so when it ends is known), then the next burst comes.
    await sleep(rig.playedAt() + 300 - performance.now());
    rig.say(3);
    await until(() => rig.leg.sent.length === 5, 2000, "second burst sent");
    // Its first chunk went out as it came, at the start of the new timeline: 60 ms of audio.
    lastPlayed = rig.leg.sent[2].at + 60;
    await until(() => rig.edges.length === 2, 3000, "bot stopped speaking");
  });
  assert.deepEqual(kinds(edges), ["BotStartedSpeaking", "BotStoppedSpeaking"]);
  const silentFor = edges[1].at - lastPlayed;
  assert.ok(silentFor >= 1000 - 5, `stopped ${silentFor.toFixed(0)} ms after the audio ended`);
  assert.equal(playoutClockMembers(), 0, "off the playout clock after the hold-off");
});

Deno.test("without a hold-off the same gap stops and restarts the speech", async () => {
  const { edges } = await withOutput({ stopHoldOffMs: 0 }, async (rig) => {
    rig.say(2);
    await until(() => rig.leg.sent.length === 2, 2000, "first burst sent");
    await sleep(rig.playedAt() + 150 - performance.now());
    rig.say(3);
    await until(() => rig.edges.length === 4, 3000, "second speech over");
  });
  assert.deepEqual(kinds(edges), [
    "BotStartedSpeaking",
    "BotStoppedSpeaking",
    "BotStartedSpeaking",
    "BotStoppedSpeaking",
  ]);
});

Deno.test("the default hold-off keeps a 100 ms gap in one speech", async () => {
  const { edges } = await withOutput({}, async (rig) => {
    rig.say(1);
    await until(() => rig.leg.sent.length === 1, 2000, "first chunk sent");
    await sleep(rig.playedAt() + 100 - performance.now());
    rig.say(1);
    await until(() => rig.edges.length === 2, 3000, "bot stopped speaking");
  });
  assert.deepEqual(kinds(edges), ["BotStartedSpeaking", "BotStoppedSpeaking"]);
});

Deno.test("a barge-in during the hold-off stops the speech at once", async () => {
  let interruptedAt = 0;
  const { edges } = await withOutput({ stopHoldOffMs: 5000 }, async (rig) => {
    rig.say(2);
    await until(() => rig.leg.sent.length === 2, 2000, "audio sent");
    await sleep(rig.playedAt() + 50 - performance.now());
    assert.equal(rig.edges.length, 1, "still speaking in the hold-off");
    interruptedAt = performance.now();
    rig.interrupt();
    await until(() => rig.edges.length === 2, 2000, "bot stopped speaking");
  });
  assert.deepEqual(kinds(edges), ["BotStartedSpeaking", "BotStoppedSpeaking"]);
  assert.ok(edges[1].at - interruptedAt < 2000);
});

Deno.test("the end of the call plays out and does not wait for the hold-off", async () => {
  let saidAt = 0;
  const { edges, endedAt } = await withOutput({ stopHoldOffMs: 5000 }, (rig) => {
    rig.say(10);
    saidAt = performance.now();
    return Promise.resolve();
  });
  // 200 ms of audio played out, then the call ends: far sooner than the 5 s hold-off.
  assert.ok(endedAt - saidAt >= 150, `ended ${(endedAt - saidAt).toFixed(0)} ms after`);
  assert.ok(endedAt - saidAt < 3000, `ended ${(endedAt - saidAt).toFixed(0)} ms after`);
  assert.deepEqual(kinds(edges), ["BotStartedSpeaking", "BotStoppedSpeaking"]);
});
