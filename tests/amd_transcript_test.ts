/**
 * Answering-machine detection with the first transcript: espeak-ng greetings and openings the
 * test makes, and a scripted transcript source that hands the detector each one's words when an
 * STT would (600 ms after the speech ends, or as a greeting's pauses cut it into pieces). The
 * cases the audio alone gets wrong (a short "leave a message", a person who answers with a
 * sentence) come out right with the words; decision times are reported. In a pipeline, the tap
 * after the transcriber settles the graph's move.
 */

import assert from "node:assert/strict";
import { type AmdEvent, AnsweringMachineDetector } from "../core/audio/amd.ts";
import { judgeGreetingText } from "../core/audio/amd_transcript.ts";
import { concatInt16 } from "../core/audio/pcm.ts";
import { GraphBrain, parseGraphSpec } from "../core/agent/mod.ts";
import { parseConfigText } from "../server/config.ts";
import { silentLogger } from "../core/log.ts";
import { FrameProcessor, type Link } from "../core/processor.ts";
import {
  type AmdProcessor,
  AmdTranscriptTap,
  placeAnsweringMachine,
} from "../core/processors/amd.ts";
import { BrainProcessor } from "../core/processors/brain.ts";
import { TransportInput, TransportOutput } from "../core/processors/transport.ts";
import { type Direction, type Frame, makeFrame, Pipeline, PipelineTask } from "../mod.ts";
import { until } from "./_core_helpers.ts";
import { FakeLeg } from "./_fake_leg.ts";
import { AMD_GRAPH, HELLO_BYE_GRAPH } from "./_graph_fixture.ts";
import { mixHiss, RATE, silence, voiceMaker } from "./_voice_audio.ts";

const { soxBeep, speak } = voiceMaker(
  await Deno.makeTempDir({ dir: "/tmp", prefix: "flowcat-amd-words-" }),
);
const ms = (samples: number) => (samples * 1000) / RATE;
/** How long after the speech ends the scripted STT hands over its words. */
const STT_LATENCY_MS = 600;
const WAIT_MS = 2000;

Deno.test("judgeGreetingText: voicemail phrases and monologues, a person's phrases, else nothing", () => {
  for (
    const t of [
      "Leave a message.",
      "Hi, it's Sam. I'm not available right now.",
      "Please record your message after the beep",
      "You’ve reached the voicemail of Dana",
      "The number you have dialed is not in service.",
      "Sorry I can't come to the phone, I'll get back to you",
      "one two three four five six seven eight nine ten eleven twelve thirteen fourteen fifteen",
    ]
  ) assert.equal(judgeGreetingText(t), "machine", t);
  for (const t of ["Acme support, Mary speaking, how can I help?", "Hello, who is this?"]) {
    assert.equal(judgeGreetingText(t), "human", t);
  }
  for (const t of ["Hello?", "Hi, this is John.", "Yes?", ""]) {
    assert.equal(judgeGreetingText(t), undefined, t);
  }
});

interface Case {
  name: string;
  machine: boolean;
  pcm: Int16Array;
  /** The words, and when (ms of call audio) the scripted STT hands each piece over. */
  words: { text: string; atMs: number }[];
}

/** The last sample of `pcm` above a whisper: where the speech ends. */
function speechEnd(pcm: Int16Array): number {
  let i = pcm.length - 1;
  while (i > 0 && Math.abs(pcm[i]) < 400) i--;
  return i + 1;
}

/** A case: `lead` ms of silence, then each spoken piece (with 500 ms between), then the rest. */
async function makeCase(
  name: string,
  machine: boolean,
  pieces: string[],
  voice: [string, number],
  lead: number,
  tail: Int16Array[] = [silence(4000)],
): Promise<Case> {
  const parts: Int16Array[] = [silence(lead)];
  const words: Case["words"] = [];
  let at = lead;
  for (const [i, text] of pieces.entries()) {
    if (i > 0) {
      parts.push(silence(500));
      at += 500;
    }
    const pcm = await speak(text, voice[0], voice[1]);
    parts.push(pcm);
    words.push({ text, atMs: at + ms(speechEnd(pcm)) + STT_LATENCY_MS });
    at += ms(pcm.length);
  }
  return { name, machine, pcm: mixHiss(concatInt16([...parts, ...tail])), words };
}

/** Feed `c` in 20 ms frames, handing over its words on time when `withWords`. */
function run(c: Case, withWords: boolean): AmdEvent | undefined {
  const amd = new AnsweringMachineDetector({
    sampleRate: RATE,
    ...(withWords ? { transcriptWaitMs: WAIT_MS } : {}),
  });
  const words = withWords ? [...c.words] : [];
  for (let i = 0; i < c.pcm.length; i += 160) {
    const events = [...amd.process(c.pcm.subarray(i, i + 160))];
    while (words.length > 0 && words[0].atMs <= ms(i + 160)) {
      events.push(...amd.transcript(words.shift()!.text));
    }
    const d = events.find((e) => e.type === "decision");
    if (d !== undefined) return d;
  }
  return undefined;
}

const VOICES: [string, number][] = [["en-us", 170], ["en-gb", 180], ["en-us+f3", 165]];

async function makeSet(): Promise<Case[]> {
  const cases: Case[] = [];
  let k = 0;
  const lead = () => 300 + (k++ % 3) * 250;
  for (const v of VOICES) {
    // Short recordings the cadence takes for a person.
    cases.push(await makeCase("machine: leave a message", true, ["Leave a message."], v, lead()));
    cases.push(
      await makeCase("machine: not available", true, ["Sam is not available."], v, lead()),
    );
    // A recording with pauses: the STT hands over the pieces as they end.
    cases.push(
      await makeCase(
        "machine: reached, pause, message",
        true,
        ["Hi, you have reached Dana.", "Please leave your message after the tone."],
        v,
        lead(),
        [await soxBeep(1000, 0.4), silence(3000)],
      ),
    );
    cases.push(
      await makeCase(
        "machine: announcement",
        true,
        ["The number you have dialed is not in service."],
        v,
        lead(),
      ),
    );
    // People: a sentence the cadence takes for a recording, and plain openings.
    cases.push(
      await makeCase("human: support desk", false, ["Acme support, how can I help?"], v, lead()),
    );
    cases.push(await makeCase("human: speaking", false, ["Yes, Mary speaking."], v, lead()));
    cases.push(await makeCase("human: hello", false, ["Hello?"], v, lead()));
    cases.push(await makeCase("human: this is", false, ["Hi, this is John."], v, lead()));
  }
  return cases;
}

Deno.test("amd with the first transcript: the words settle what the cadence gets wrong", async () => {
  const cases = await makeSet();
  let right = 0;
  let rightAudio = 0;
  const wrong: string[] = [];
  const times: Record<"human" | "machine", number[]> = { human: [], machine: [] };
  for (const c of cases) {
    const d = run(c, true);
    assert.ok(d?.type === "decision", `${c.name}: no decision`);
    if ((d.verdict === "machine") === c.machine) {
      right++;
      times[d.verdict].push(d.atMs);
    } else wrong.push(`${c.name} -> ${d.verdict} (${d.reason})`);
    const audio = run(c, false);
    if (audio?.type === "decision" && (audio.verdict === "machine") === c.machine) rightAudio++;
  }
  const stat = (xs: number[]) =>
    `mean ${Math.round(xs.reduce((a, b) => a + b, 0) / xs.length)} ms, max ${Math.max(...xs)} ms`;
  console.log(
    `amd with words: ${right}/${cases.length} right (audio alone: ${rightAudio}/${cases.length});` +
      ` decision after the answer: human ${stat(times.human)}, machine ${stat(times.machine)}`,
  );
  assert.ok(right / cases.length >= 0.95, wrong.join("; "));
  assert.ok(
    rightAudio <= cases.length - 6,
    `the set has cases the audio gets wrong (${rightAudio})`,
  );
  assert.ok(Math.max(...times.human) <= 4000, "people decided within 4 s");
});

Deno.test("amd with words: none come, and the audio decides once the wait is over", async () => {
  const c = await makeCase("human: hello", false, ["Hello?"], ["en-us", 170], 300);
  const alone = run(c, false)!;
  const d = run({ ...c, words: [] }, true)!;
  assert.equal(d.type, "decision");
  if (d.type !== "decision" || alone.type !== "decision") return;
  assert.deepEqual([d.verdict, d.reason], ["human", "short_greeting"]);
  assert.equal(d.atMs - alone.atMs, WAIT_MS, "decided once the wait was over");
  // A beep needs no words: it decides at once.
  const beep = await soxBeep(1000, 0.4);
  const amd = new AnsweringMachineDetector({ sampleRate: RATE, transcriptWaitMs: WAIT_MS });
  const pcm = mixHiss(concatInt16([silence(500), beep, silence(500)]));
  const events: AmdEvent[] = [];
  for (let i = 0; i < pcm.length; i += 160) events.push(...amd.process(pcm.subarray(i, i + 160)));
  assert.deepEqual(events.map((e) => e.type === "decision" ? e.reason : `ready:${e.reason}`), [
    "beep",
    "ready:beep",
  ]);
});

/** A scripted transcriber: once it has heard `atMs` of audio, the caller's words go down. */
class ScriptedStt extends FrameProcessor {
  #heardMs = 0;
  #sent = false;
  constructor(readonly text: string, readonly atMs: number) {
    super("ScriptedStt");
  }
  override processFrame(frame: Frame, dir: Direction, link: Link): void {
    link.push(frame, dir);
    if (dir !== "downstream" || frame.kind !== "InputAudio" || this.#sent) return;
    this.#heardMs += (frame.audio.pcm.length * 1000) / frame.audio.sampleRate;
    if (this.#heardMs < this.atMs) return;
    this.#sent = true;
    link.pushDown(makeFrame("Transcription", { text: this.text, userId: "user", final: true }));
  }
}

Deno.test("amd in a call with a transcriber: a short 'leave a message' moves the graph to voicemail", async () => {
  const c = await makeCase("machine", true, ["Leave a message."], ["en-gb", 180], 400);
  const leg = new FakeLeg();
  const parsed = parseGraphSpec(JSON.stringify(AMD_GRAPH));
  assert.ok(parsed.ok, JSON.stringify(parsed));
  const brain = new GraphBrain(parsed.spec);
  const stt = new ScriptedStt(c.words[0].text, c.words[0].atMs);
  const input = new TransportInput(leg);
  const processors: FrameProcessor[] = [input, stt, new BrainProcessor(brain)];
  placeAnsweringMachine(processors, {}, { input: 1, words: stt, wordsByDefault: true });
  assert.deepEqual(processors.map((p) => p.constructor.name), [
    "TransportInput",
    "AmdProcessor",
    "ScriptedStt",
    "AmdTranscriptTap",
    "BrainProcessor",
    "VoicemailGate",
  ]);
  const amd = processors[1] as AmdProcessor;
  assert.ok(processors[3] instanceof AmdTranscriptTap);
  const task = new PipelineTask(new Pipeline([...processors, new TransportOutput(leg)]), {
    idleTimeoutMs: null,
    logger: silentLogger,
  });
  task.onStarted(async () => {
    leg.feed({ type: "start", callId: "out-1" });
    for (let i = 0; i < c.pcm.length; i += 160) {
      leg.feed({
        type: "audio",
        audio: { pcm: c.pcm.slice(i, i + 160), sampleRate: RATE, numChannels: 1 },
      });
    }
    await until(() => brain.currentNodeId() !== "dial", 5000, "a move");
    leg.feed(undefined);
  });
  await task.run();
  assert.equal(brain.currentNodeId(), "voicemail");
  assert.equal(amd.verdict, "machine");
  // The same audio without the words: the cadence alone says a person.
  const alone = run(c, false);
  assert.equal(alone?.type === "decision" ? alone.verdict : "", "human");
});

Deno.test("config: telephony.answering_machine.use_transcript", async () => {
  const doc = (amd: unknown) =>
    JSON.stringify({
      agent: { graph: HELLO_BYE_GRAPH },
      pipeline: "s2s",
      providers: { realtime: { name: "echo" } },
      telephony: { answering_machine: amd },
    });
  const on = await parseConfigText(doc({ enabled: true, use_transcript: true }), "json", ".");
  assert.ok(on.ok, JSON.stringify(on));
  assert.deepEqual(on.config.telephony.answeringMachine, {
    enabled: true,
    waitForBeep: true,
    useTranscript: true,
  });
  const auto = await parseConfigText(doc({ enabled: true }), "json", ".");
  assert.ok(auto.ok);
  assert.equal(auto.config.telephony.answeringMachine.useTranscript, undefined);
  const bad = await parseConfigText(doc({ use_transcript: "yes" }), "json", ".");
  assert.equal(bad.ok, false);
});
