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
  ulawDecode,
  ulawEncode,
} from "../mod.ts";
import { TransportInput, TransportOutput } from "../core/processors/transport.ts";
import { createTwilioSerializer } from "../telephony/serializers/twilio.ts";
import { socketFromWebSocket, WsMediaTransport } from "../telephony/ws_transport.ts";
import { silentLogger } from "../core/log.ts";
import { until } from "./_core_helpers.ts";

/** Echoes caller audio; on a Text "barge" it broadcasts an Interruption. */
class Echo extends FrameProcessor {
  override processFrame(f: Frame, d: Direction, link: Link) {
    if (f.kind === "InputAudio") link.pushDown(outputAudio(f.audio));
    else link.push(f, d);
  }
}

const b64 = (bytes: Uint8Array) => btoa(String.fromCharCode(...bytes));
const unb64 = (s: string) => Uint8Array.from(atob(s), (c) => c.charCodeAt(0));

Deno.test("Twilio-framed client: audio echoed, clear on interruption, stop ends the task", async () => {
  let task!: PipelineTask;
  let echoLink!: Link;
  class Tap extends FrameProcessor {
    override start(_s: unknown, _p: unknown, l: Link) {
      echoLink = l;
    }
  }
  const finished = Promise.withResolvers<StopReason>();
  const server = Deno.serve({ hostname: "127.0.0.1", port: 0, onListen: () => {} }, (req) => {
    const { socket, response } = Deno.upgradeWebSocket(req);
    const transport = new WsMediaTransport(socketFromWebSocket(socket), createTwilioSerializer());
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
    return response;
  });
  const ws = new WebSocket(`ws://127.0.0.1:${server.addr.port}/telephony/ws/twilio/1`);
  const client = socketFromWebSocket(ws);
  await client.opened;
  const got: Record<string, unknown>[] = [];
  (async () => {
    for (;;) {
      const m = await client.recv();
      if (m === undefined || m.type === "close") break;
      if (m.type === "text") got.push(JSON.parse(m.data));
    }
  })();
  const send = (o: unknown) => client.sendText(JSON.stringify(o));
  await send({ event: "connected", protocol: "Call", version: "1.0.0" });
  await send({
    event: "start",
    sequenceNumber: "1",
    streamSid: "MZ0001",
    start: {
      streamSid: "MZ0001",
      accountSid: "AC0001",
      callSid: "CA0001",
      tracks: ["inbound"],
      customParameters: { token: "t" },
      mediaFormat: { encoding: "audio/x-mulaw", sampleRate: 8000, channels: 1 },
    },
  });
  // 10 frames of a 400 Hz tone, 20 ms of mu-law each.
  const tone = new Int16Array(1600);
  for (let i = 0; i < tone.length; i++) {
    tone[i] = Math.round(8000 * Math.sin((2 * Math.PI * 400 * i) / 8000));
  }
  const sent = ulawEncode(tone);
  for (let k = 0; k < 10; k++) {
    await send({
      event: "media",
      sequenceNumber: String(k + 2),
      streamSid: "MZ0001",
      media: {
        track: "inbound",
        chunk: String(k + 1),
        timestamp: String(k * 20),
        payload: b64(sent.subarray(k * 160, (k + 1) * 160)),
      },
    });
  }
  await until(() => got.filter((m) => m.event === "media").length >= 10, 3000, "echoed media");
  const media = got.filter((m) => m.event === "media");
  assert.ok(media.every((m) => m.streamSid === "MZ0001"), "outbound media carries the streamSid");
  const echoed = ulawDecode(
    Uint8Array.from(media.flatMap((m) => [...unb64((m.media as { payload: string }).payload)])),
  );
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
  assert.deepEqual(got.find((m) => m.event === "clear"), { event: "clear", streamSid: "MZ0001" });

  await send({
    event: "stop",
    sequenceNumber: "40",
    streamSid: "MZ0001",
    stop: { accountSid: "AC0001", callSid: "CA0001" },
  });
  const reason = await finished.promise;
  assert.deepEqual(reason, { kind: "end", reason: "caller hung up" });
  ws.close();
  await server.shutdown();
});
