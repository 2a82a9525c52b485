/**
 * End to end over a real loopback WebSocket: a client speaking Twilio's media-stream framing
 * drives TransportInput -> Echo -> TransportOutput through WsMediaTransport + TwilioSerializer.
 */
import assert from "node:assert/strict";
import {
  type Direction,
  type Frame,
  FrameProcessor,
  type Link,
  makeFrame,
  outputAudio,
  Pipeline,
  PipelineTask,
  type StopReason,
} from "../mod.ts";
import { TransportInput, TransportOutput } from "../core/processors/transport.ts";
import { silentLogger } from "../core/log.ts";
import { until } from "./_core_helpers.ts";
import { twilioCall } from "./_twilio_client.ts";

/** Echoes caller audio; on a Text "barge" it broadcasts an Interruption. */
class Echo extends FrameProcessor {
  override processFrame(f: Frame, d: Direction, link: Link) {
    if (f.kind === "InputAudio") link.pushDown(outputAudio(f.audio));
    else link.push(f, d);
  }
}

Deno.test("Twilio-framed client: audio echoed, clear on interruption, stop ends the task", async () => {
  let task!: PipelineTask;
  let echoLink!: Link;
  class Tap extends FrameProcessor {
    override start(_s: unknown, _p: unknown, l: Link) {
      echoLink = l;
    }
  }
  const finished = Promise.withResolvers<StopReason>();
  const call = await twilioCall((transport) => {
    task = new PipelineTask(
      new Pipeline([
        new TransportInput(transport),
        new Echo(),
        new Tap("tap"),
        new TransportOutput(transport),
      ]),
      { idleTimeoutMs: null, logger: silentLogger, audioInSampleRate: 16000 },
    );
    task.run().then(finished.resolve, finished.reject);
  });
  const got = call.got;
  // 10 frames of a 400 Hz tone, 20 ms of mu-law each.
  const tone = new Int16Array(1600);
  for (let i = 0; i < tone.length; i++) {
    tone[i] = Math.round(8000 * Math.sin((2 * Math.PI * 400 * i) / 8000));
  }
  await call.speak(tone, 0);
  await until(() => got.filter((m) => m.event === "media").length >= 10, 3000, "echoed media");
  const media = call.media();
  assert.ok(media.every((m) => m.streamSid === "MZ1"), "outbound media carries the streamSid");
  const echoed = call.decode(media);
  assert.equal(echoed.length, 1600, "8 kHz in, 16 kHz pipeline, 8 kHz out: same length");
  // Resampled twice, delayed by the filters: the echo is the same tone (correlate at best lag).
  let best = 0;
  for (let lag = 0; lag < 80; lag++) {
    let num = 0, a = 0, b = 0;
    for (let i = 200; i < 1400; i++) {
      num += tone[i] * echoed[i + lag];
      a += tone[i] ** 2;
      b += echoed[i + lag] ** 2;
    }
    best = Math.max(best, num / Math.sqrt(a * b));
  }
  assert.ok(best > 0.98, `echo correlates with the tone: ${best}`);

  echoLink.broadcast(makeFrame("Interruption", {}));
  await until(() => got.some((m) => m.event === "clear"), 2000, "clear");
  assert.deepEqual(got.find((m) => m.event === "clear"), { event: "clear", streamSid: "MZ1" });

  await call.hangup();
  const reason = await finished.promise;
  assert.deepEqual(reason, { kind: "end", reason: "caller hung up" });
  await call.close();
});
