import assert from "node:assert/strict";
import {
  audioFrame,
  classOf,
  cloneFrame,
  customFrame,
  FRAME_KINDS,
  frameMeta,
  inputAudio,
  isUninterruptible,
  makeFrame,
  nextFrameId,
  stopReasonOf,
} from "../mod.ts";

Deno.test("frame classes follow the documented tables", () => {
  const system = [
    "Start",
    "Cancel",
    "Error",
    "Interruption",
    "InputAudio",
    "UserAudio",
    "InputText",
    "InputDtmf",
    "UserStartedSpeaking",
    "UserStoppedSpeaking",
    "UserSpeaking",
    "BotStartedSpeaking",
    "BotStoppedSpeaking",
    "BotSpeaking",
    "VadUserStartedSpeaking",
    "VadUserStoppedSpeaking",
    "SttMute",
    "Metrics",
    "TransportMessage",
    "ClientConnected",
    "BotConnected",
    "FunctionCallsStarted",
    "FunctionCallInProgress",
    "FunctionCallCancel",
    "SpokenText",
    "BotInterrupted",
    "BotAudioHold",
    "TransferResult",
    "AnsweringMachine",
  ];
  const data = [
    "OutputAudio",
    "TtsAudio",
    "Text",
    "LlmText",
    "Transcription",
    "InterimTranscription",
    "TtsSpeak",
    "TtsText",
    "FunctionCallResult",
    "LlmRun",
    "LlmContext",
    "OutputDtmf",
    "TransferCall",
  ];
  const control = [
    "End",
    "Stop",
    "LlmResponseStart",
    "LlmResponseEnd",
    "TtsStarted",
    "TtsStopped",
    "UpdateSettings",
    "SpeechControlParams",
    "Heartbeat",
    "LlmDraftSettled",
    "OutputTransportReady",
  ];
  assert.deepEqual([...FRAME_KINDS].sort(), [...system, ...data, ...control].sort());
  // deno-lint-ignore no-explicit-any
  const cls = (k: string) => classOf({ kind: k, id: 0 } as any);
  for (const k of system) assert.equal(cls(k), "system", k);
  for (const k of data) assert.equal(cls(k), "data", k);
  for (const k of control) assert.equal(cls(k), "control", k);
});

Deno.test("exactly End, Stop, FunctionCallResult, UpdateSettings, OutputDtmf, TransferCall are uninterruptible", () => {
  // deno-lint-ignore no-explicit-any
  const un = FRAME_KINDS.filter((k) => isUninterruptible({ kind: k, id: 0 } as any));
  assert.deepEqual([...un].sort(), [
    "End",
    "FunctionCallResult",
    "OutputDtmf",
    "Stop",
    "TransferCall",
    "UpdateSettings",
  ]);
});

Deno.test("custom frames supply their own class and interruptibility", () => {
  const a = customFrame({ type: "ImageFrame", frameClass: "data" });
  const b = customFrame({ type: "Pause", frameClass: "system", uninterruptible: true });
  assert.equal(classOf(a), "data");
  assert.equal(isUninterruptible(a), false);
  assert.equal(classOf(b), "system");
  assert.equal(isUninterruptible(b), true);
});

Deno.test("frame ids are unique and monotonic", () => {
  const ids = [
    makeFrame("Text", { text: "a" }).id,
    nextFrameId(),
    inputAudio(audioFrame(new Int16Array(1), 8000)).id,
  ];
  assert.ok(ids[0] < ids[1] && ids[1] < ids[2]);
});

Deno.test("cloning shares PCM and gives a fresh id", () => {
  const pcm = new Int16Array([1, 2, 3]);
  const f = inputAudio(audioFrame(pcm, 16000));
  const c = cloneFrame(f);
  assert.notEqual(c.id, f.id);
  assert.equal(c.audio.pcm, pcm);
  assert.equal(c.audio.pcm.buffer, pcm.buffer);
});

Deno.test("frameMeta exposes the meta fields that are set", () => {
  const f = makeFrame("Text", { text: "hi" });
  f.pts = 42;
  f.transportSource = "carrier";
  f.extra = { a: 1 };
  assert.deepEqual(frameMeta(f), {
    id: f.id,
    name: "Text",
    pts: 42,
    extra: { a: 1 },
    transportSource: "carrier",
  });
  assert.equal(frameMeta(customFrame({ type: "Sprite", frameClass: "data" })).name, "Sprite");
});

Deno.test("stop reasons derive from terminal frames", () => {
  assert.deepEqual(stopReasonOf(makeFrame("End", { reason: "bye" })), {
    kind: "end",
    reason: "bye",
  });
  assert.deepEqual(stopReasonOf(makeFrame("Stop", {})), { kind: "stop" });
  assert.deepEqual(stopReasonOf(makeFrame("Cancel", {})), { kind: "cancel" });
});
