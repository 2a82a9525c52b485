/**
 * In-band keypad tones and barge-in on a carrier leg (a Twilio media stream, which has no key
 * command): the caller talking over a send_dtmf holds and then interrupts the bot, which drops
 * its queued speech, but every key the model was told it pressed still leaves in full. Our own
 * Goertzel detector decodes the mu-law the carrier was sent.
 */

import assert from "node:assert/strict";
import { type Frame, makeFrame } from "../mod.ts";
import { ulawEncode } from "../core/audio/g711.ts";
import { noise, sine } from "../core/audio/pcm.ts";
import { createSerializer } from "../telephony/serializers/mod.ts";
import { WsMediaTransport } from "../telephony/ws_transport.ts";
import { until } from "./_core_helpers.ts";
import { callControlRig, callsFrame, decodeKeys } from "./_call_control_rig.ts";
import { MemorySocket, twilioSentPcm, twilioStart } from "./_memory_socket.ts";

/** The caller talks: `ms` of loud noise as Twilio inbound media, paced at real time. */
async function callerTalks(socket: MemorySocket, ms: number): Promise<void> {
  const voice = noise(8 * ms, 9000, 7);
  for (let i = 0; i < voice.length; i += 160) {
    const payload = btoa(String.fromCharCode(...ulawEncode(voice.subarray(i, i + 160))));
    socket.text({
      event: "media",
      streamSid: "MZ1",
      media: { track: "inbound", chunk: String(i / 160 + 1), timestamp: String(i / 8), payload },
    });
    await new Promise((r) => setTimeout(r, 20));
  }
}

/** The bot's speech: `ms` of a 300 Hz hum at 8 kHz (no keypad frequency in it). */
function speech(ms: number): Frame {
  const pcm = sine({ freq: 300, sampleRate: 8000, samples: 8 * ms, amplitude: 6000 });
  return makeFrame("TtsAudio", { audio: { pcm, sampleRate: 8000, numChannels: 1 } });
}

const media = (socket: MemorySocket) => socket.out.filter((m) => m.includes('"media"'));

Deno.test("send_dtmf on a carrier leg: a barge-in drops the bot's speech but not the keys", async () => {
  const socket = new MemorySocket();
  const leg = new WsMediaTransport(socket, createSerializer("twilio"));
  twilioStart(socket);
  const { task, model, results } = callControlRig(leg, undefined, { bargeIn: true });
  const interrupted = () =>
    model.frames.find((s) => s.frame.kind === "BotInterrupted")?.frame as
      | Extract<Frame, { kind: "BotInterrupted" }>
      | undefined;
  task.onStarted(async () => {
    // The model presses four keys (800 ms of tones), then starts a 3 s sentence.
    await task.queueFrame(callsFrame("send_dtmf", { keys: "3058" }));
    await task.queueFrame(speech(3000));
    // The caller talks over the first key's tone, until the bot is interrupted.
    await until(() => media(socket).length >= 3, 5000, "first tone sent");
    await callerTalks(socket, 700);
    await until(() => interrupted() !== undefined, 5000, "barge-in");
    // Every tone (800 ms) leaves, and then nothing more: the speech was dropped.
    await until(() => media(socket).length >= 40, 5000, "tones sent");
    await new Promise((r) => setTimeout(r, 300));
    socket.text({ event: "stop", streamSid: "MZ1", stop: { callSid: "CA1" } });
  });
  await task.run();
  assert.deepEqual(results(), [{ ok: true, sent: "3058" }]);
  assert.ok((interrupted()?.droppedFrames ?? 0) > 0, "the queued speech was dropped");
  const sent = twilioSentPcm(socket.out);
  assert.deepEqual(decodeKeys(sent), ["3", "0", "5", "8"], "every key the model was told of");
  // 800 ms of tones and at most the speech that went out before the barge-in, never all 3 s.
  const sentMs = sent.length / 8;
  assert.ok(sentMs < 800 + 1500, `sent ${sentMs} ms`);
});
