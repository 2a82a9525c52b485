/**
 * buildS2sTask end to end with no key: a local WebSocket client speaking Twilio framing ->
 * WsMediaTransport -> buildS2sTask(EchoRealtime, GraphBrain, MemorySessionSource).
 */
import assert from "node:assert/strict";
import { rms, sine } from "../core/audio/pcm.ts";
import { visibleLength } from "../core/heard_text.ts";
import type { Finalize } from "../core/seams.ts";
import { EchoRealtime } from "../providers/echo/realtime.ts";
import type { MemorySessionSource } from "../server/session_store.ts";
import type { TwilioCall } from "./_twilio_client.ts";
import { sleep, until } from "./_core_helpers.ts";
import { s2sTwilioCall } from "./_s2s_twilio.ts";

interface Harness {
  call: TwilioCall;
  finished: Promise<Finalize>;
  echo: EchoRealtime;
  sessions: MemorySessionSource;
}

async function harness(
  echo = new EchoRealtime({ greeting: "hi", vad: { stopSecs: 0.3 } }),
): Promise<Harness> {
  const { call, finished, sessions } = await s2sTwilioCall(echo, { model: "echo" });
  return { call, finished, echo, sessions };
}

Deno.test("s2s echo call: greeting, echo, dtmf transition, hang-up finalizes once", async () => {
  const h = await harness();
  // The greeting (a chime: no TTS given) plays as 8 kHz mu-law.
  await until(() => h.call.media().length >= 10, 3000, "greeting audio");
  await sleep(500);
  const before = h.call.media().length;
  // Caller speaks 0.6 s of a 300 Hz tone, then silence: the model echoes it.
  const tone = sine({ freq: 300, sampleRate: 8000, samples: 4800, amplitude: 9000 });
  await h.call.speak(tone);
  await h.call.speak(new Int16Array(4800));
  await until(() => h.call.media().length >= before + 25, 4000, "echoed audio");
  const echoed = h.call.decode(h.call.media().slice(before));
  assert.ok(rms(echoed) > 1000, `echo has energy: ${rms(echoed)}`);

  // Key 1 calls the node's first tool (go_on): the brain moves, the model gets the new prompt.
  await h.call.dtmf("1");
  await until(() => h.echo.systemPrompt.includes("Second step, talk to Sam"), 3000, "transition");
  assert.deepEqual(h.echo.tools.map((t) => t.name), ["finish", "end_call"]);

  await h.call.hangup();
  const report = await h.finished;
  assert.equal(report.usage.endedBy, "end: caller hung up");
  assert.equal(report.usage.model, "echo");
  assert.ok(typeof report.recordingUrl === "string", "recording uploaded");
  assert.ok(typeof report.transcriptUrl === "string", "transcript uploaded");
  const run = h.sessions.get(1)!;
  assert.deepEqual(run.finalize, report, "complete called with the same report");
  const wav = h.sessions.memoryArtifact("run-1-recording.wav")!;
  assert.equal(new TextDecoder().decode(wav.subarray(0, 4)), "RIFF");
  assert.equal(new TextDecoder().decode(wav.subarray(8, 12)), "WAVE");
  const doc = JSON.parse(
    new TextDecoder().decode(h.sessions.memoryArtifact("run-1-transcript.json")),
  );
  const roles = new Set(doc.lines.map((l: { role: string }) => l.role));
  assert.ok(roles.has("user") && roles.has("bot") && roles.has("node"), JSON.stringify(doc.lines));
  await h.call.close();
});

Deno.test("s2s echo call: barge-in clears the carrier's playback", async () => {
  const h = await harness();
  await until(() => h.call.media().length >= 5, 3000, "greeting audio");
  await sleep(400);
  // A long caller turn, then silence: a long echo starts playing.
  const tone = sine({ freq: 250, sampleRate: 8000, samples: 16000, amplitude: 9000 });
  await h.call.speak(tone);
  await h.call.speak(new Int16Array(3200));
  const start = h.call.media().length;
  await until(() => h.call.media().length >= start + 10, 4000, "echo playing");
  // Talk over it: the model raises interrupted, the transport sends Twilio's clear.
  await h.call.speak(tone.subarray(0, 4000));
  await until(() => h.call.got.some((m) => m.event === "clear"), 3000, "clear");
  assert.deepEqual(h.call.got.find((m) => m.event === "clear"), {
    event: "clear",
    streamSid: "MZ1",
  });
  await h.call.hangup();
  await h.finished;
  await h.call.close();
});

Deno.test("s2s echo call: a barge-in cuts the bot's transcript line to what was heard", async () => {
  // A greeting of 40 letters spoken over 2 s: its words are placed by the share of audio played.
  const greeting = "One two three four five six seven eight nine ten.";
  const h = await harness(
    new EchoRealtime({
      greeting,
      vad: { stopSecs: 0.3 },
      speak: () =>
        Promise.resolve({
          pcm: sine({ freq: 440, sampleRate: 24000, samples: 48000, amplitude: 6000 }),
          sampleRate: 24000,
          numChannels: 1,
        }),
    }),
  );
  // About 1 s into the greeting the caller talks over it: the model raises interrupted.
  await until(() => h.call.media().length >= 50, 4000, "greeting half played");
  await h.call.speak(sine({ freq: 250, sampleRate: 8000, samples: 4000, amplitude: 9000 }));
  await until(() => h.call.got.some((m) => m.event === "clear"), 3000, "clear");
  const sentShare = (h.call.media().length * 20) / 2000;
  await h.call.hangup();
  await h.finished;
  const doc = JSON.parse(
    new TextDecoder().decode(h.sessions.memoryArtifact("run-1-transcript.json")),
  );
  const line = doc.lines[0];
  assert.equal(line.role, "bot");
  assert.equal(line.interrupted, true, JSON.stringify(doc.lines));
  // Whole words from the start, about as many letters as the audio that had played (a word
  // being spoken at the cut is left out: up to 5 letters fewer).
  assert.ok(greeting.startsWith(line.text) && line.text.length < greeting.length, line.text);
  const letters = visibleLength(line.text);
  assert.ok(sentShare > 0.5 && sentShare < 1, `${sentShare} of the greeting sent`);
  assert.ok(
    letters <= sentShare * 40 && letters >= sentShare * 40 - 12,
    `${line.text} at ${sentShare}`,
  );
  await h.call.close();
});
