/**
 * `audio.echo_cancel` in the agent server: whether a call gets the echo canceller, per transport
 * and per setting, seen from what the speech-to-speech model hears. The canceller, with nothing
 * played yet, passes the caller's audio through 16 ms late; without it the audio is not delayed.
 */
import assert from "node:assert/strict";
import { silentLogger } from "../core/log.ts";
import type { AudioFrame, RealtimeEvent, RealtimeLlm } from "../mod.ts";
import { RealtimeEventQueue } from "../providers/realtime/_shared.ts";
import { sine } from "../core/audio/pcm.ts";
import { createAgentServer } from "../server/app.ts";
import type { RunOrigin } from "../server/session_store.ts";
import { until } from "./_core_helpers.ts";
import { FakeLeg } from "./_fake_leg.ts";
import { parse } from "./_server_config_helpers.ts";

/** A model that records the caller's audio it is sent and says nothing. */
class ListeningModel implements RealtimeLlm {
  readonly #q = new RealtimeEventQueue();
  heard: number[] = [];
  rate = 0;
  connect(): Promise<void> {
    return Promise.resolve();
  }
  sendAudio(audio: AudioFrame): void {
    this.rate = audio.sampleRate;
    for (const s of audio.pcm) this.heard.push(s);
  }
  updateSystem(): Promise<void> {
    return Promise.resolve();
  }
  sendToolResult(): Promise<void> {
    return Promise.resolve();
  }
  nextEvent(): Promise<RealtimeEvent | undefined> {
    return this.#q.next();
  }
  close(): Promise<void> {
    this.#q.close();
    return Promise.resolve();
  }
}

/** Milliseconds before the model first hears the caller's tone, on a call from `origin`. */
async function delayHeard(setting: string | undefined, origin: RunOrigin): Promise<number> {
  const audio = setting === undefined ? "" : `\naudio: { echo_cancel: ${setting} }`;
  const res = await parse(`agent: { graph: graph.yaml }
providers: { realtime: { name: echo } }${audio}`);
  if (!res.ok) throw new Error(JSON.stringify(res.problems));
  const model = new ListeningModel();
  const app = await createAgentServer({
    config: res.config,
    env: () => undefined,
    logger: silentLogger,
    realtimeFactory: () => model,
    warm: false,
  });
  const leg = new FakeLeg();
  const run = await app.sessions.createRun(origin);
  const report = app.calls.run(leg, run);
  try {
    // A tone from the first sample on, 20 ms a frame, at the leg's 8 kHz.
    const tone = sine({ freq: 400, sampleRate: 8000, samples: 8000, amplitude: 8000 });
    for (let i = 0; i < tone.length; i += 160) {
      leg.feed({
        type: "audio",
        audio: { pcm: tone.subarray(i, i + 160), sampleRate: 8000, numChannels: 1 },
      });
    }
    await until(
      () => model.rate > 0 && model.heard.length >= model.rate * 0.5,
      10_000,
      "half a second heard",
    );
    const first = model.heard.findIndex((s) => Math.abs(s) > 2000);
    return (first * 1000) / model.rate;
  } finally {
    leg.feed(undefined);
    await report;
    await app.calls.drain(1000);
    await app.close();
  }
}

Deno.test("server: audio.echo_cancel per transport — on, off, auto, and unset (telephone legs on)", async () => {
  const plain = await delayHeard("off", "carrier");
  assert.ok(plain < 5, `without the canceller the tone is heard at once (${plain} ms)`);
  const cases: [string | undefined, RunOrigin, boolean][] = [
    ["on", "browser", true],
    ["off", "sip", false],
    ["auto", "carrier", true],
    ["auto", "sip", true],
    ["auto", "outbound", true],
    ["auto", "browser", false],
    [undefined, "carrier", true],
    [undefined, "sip", true],
    [undefined, "outbound", true],
    [undefined, "browser", false],
  ];
  for (const [setting, origin, cancelled] of cases) {
    const ms = await delayHeard(setting, origin);
    const late = ms - plain;
    if (cancelled) assert.ok(Math.abs(late - 16) < 2, `${setting} on ${origin}: ${late} ms late`);
    else assert.ok(Math.abs(late) < 2, `${setting ?? "unset"} on ${origin}: ${late} ms late`);
  }
});
