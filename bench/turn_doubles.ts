/**
 * What the turn-taking and barge-in benchmarks (bench/turns.ts, bench/bargein.ts) drive a call
 * with: doubles for the two network services (a transcriber that hears exactly the pieces of the
 * utterance whose voice has ended, a model that answers "Okay."), a brain with no tools, and the
 * caller's end of a Twilio media stream, paced in real time.
 * @module
 */

import { ulawDecode, ulawEncode } from "../core/audio/g711.ts";
import { rms } from "../core/audio/pcm.ts";
import {
  type AgentBrain,
  type AudioFrame,
  type Frame,
  type LlmContext,
  type LlmService,
  makeFrame,
  type SttService,
} from "../mod.ts";
import { SPEECH_RATE } from "./turn_speech.ts";

const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));

/** When each piece of the caller's utterance ended, on this process's clock. */
export interface Heard {
  text: string;
  endAt: number;
}

/** A transcriber double: on each end of speech, the pieces whose voice has ended since. */
export class OracleStt implements SttService {
  #plan: Heard[] = [];
  /**
   * `delayMs` before each transcript; `stopEveryPiece` ends every piece with a full stop, as a
   * batch transcriber (Whisper) does with each segment it is sent alone.
   */
  constructor(readonly delayMs = 0, readonly stopEveryPiece = false) {}
  /** The pieces of the utterance now being spoken. */
  plan(pieces: Heard[]): void {
    this.#plan = [...pieces];
  }
  name(): string {
    return "oracle-stt";
  }
  start(): Promise<void> {
    return Promise.resolve();
  }
  runStt(_audio: AudioFrame): Promise<Frame[]> {
    return Promise.resolve([]);
  }
  setMuted(): void {}
  speechStarted(): void {}
  async speechStopped(): Promise<Frame[]> {
    const now = performance.now();
    const heard: string[] = [];
    while (this.#plan.length > 0 && this.#plan[0].endAt <= now) {
      heard.push(this.#plan.shift()!.text);
    }
    if (this.delayMs > 0) await sleep(this.delayMs);
    if (heard.length === 0) return [];
    let text = heard.join(" ");
    if (this.stopEveryPiece && !/[.?!]$/.test(text)) text += ".";
    return [makeFrame("Transcription", { text, userId: "user", final: true })];
  }
}

/** A model that answers "Okay." after `ttfbMs`, and stops when aborted. */
export class OkayLlm implements LlmService {
  requests = 0;
  constructor(readonly ttfbMs = 0) {}
  name(): string {
    return "okay-llm";
  }
  start(): Promise<void> {
    return Promise.resolve();
  }
  setTools(): void {}
  async *runLlm(_context: LlmContext, signal?: AbortSignal): AsyncIterable<Frame> {
    this.requests++;
    yield makeFrame("LlmResponseStart", {});
    if (this.ttfbMs > 0) await sleep(this.ttfbMs);
    if (signal?.aborted) return;
    yield makeFrame("LlmText", { text: "Okay." });
    yield makeFrame("LlmResponseEnd", {});
  }
}

/** A brain with no tools. */
export const quietBrain: AgentBrain = {
  systemPrompt: () => "Answer briefly.",
  tools: () => [],
  currentNodeId: () => "main",
  onToolCall: () => ({ type: "stay", result: {} }),
  isFinished: () => false,
  collectedVars: () => ({}),
};

/** The caller's end of a Twilio media stream. */
export interface Caller {
  received: { at: number; voiced: boolean }[];
  lastAt(): number;
  say(pcm: Int16Array, t0: number): Promise<void>;
  /** Send silence (real time) until `done` or `maxMs`. */
  silence(done: () => boolean, maxMs: number): Promise<void>;
  /** Send silence until no audio came for `quietMs`. */
  quiet(quietMs: number, maxMs: number): Promise<void>;
  hangUp(): Promise<void>;
}

/** Dial `url` as Twilio's media stream (connected, start), ready to talk in real time. */
export async function dial(url: string): Promise<Caller> {
  const ws = new WebSocket(url);
  await new Promise((resolve, reject) => {
    ws.onopen = resolve;
    ws.onerror = reject;
  });
  const received: Caller["received"] = [];
  ws.onmessage = (e) => {
    const m = JSON.parse(String(e.data));
    if (m.event !== "media") return;
    const pcm = ulawDecode(Uint8Array.fromBase64(m.media.payload));
    received.push({ at: performance.now(), voiced: rms(pcm) > 300 });
  };
  const send = (o: unknown) => ws.send(JSON.stringify(o));
  send({ event: "connected", protocol: "Call", version: "1.0.0" });
  send({
    event: "start",
    streamSid: "MZ1",
    start: {
      streamSid: "MZ1",
      callSid: "CA1",
      customParameters: {},
      mediaFormat: { encoding: "audio/x-mulaw", sampleRate: 8000, channels: 1 },
    },
  });
  const FRAME = SPEECH_RATE / 50;
  const silentFrame = ulawEncode(new Int16Array(FRAME)).toBase64();
  // Frames go out when they are whole (each 20 ms after the one before, on an absolute
  // schedule, so timer lateness does not pile up).
  let next = performance.now();
  const frame = async (payload: string, at: number) => {
    const wait = at - performance.now();
    if (wait > 1) await sleep(wait);
    send({ event: "media", streamSid: "MZ1", media: { track: "inbound", payload } });
  };
  const lastAt = () => received.at(-1)?.at ?? 0;
  const silence = async (done: () => boolean, maxMs: number) => {
    const end = performance.now() + maxMs;
    while (!done() && performance.now() < end) {
      next = Math.max(next + 20, performance.now() - 20);
      await frame(silentFrame, next);
    }
  };
  return {
    received,
    lastAt,
    async say(pcm, t0) {
      const mu = ulawEncode(pcm);
      for (let i = 0; i < mu.length; i += FRAME) {
        const part = new Uint8Array(FRAME).fill(0xff);
        part.set(mu.subarray(i, Math.min(mu.length, i + FRAME)));
        next = t0 + ((i + FRAME) * 1000) / SPEECH_RATE;
        await frame(part.toBase64(), next);
      }
    },
    silence,
    quiet: (quietMs, maxMs) =>
      silence(() => received.length > 0 && performance.now() - lastAt() >= quietMs, maxMs),
    async hangUp() {
      send({ event: "stop", streamSid: "MZ1", stop: { callSid: "CA1" } });
      await sleep(50);
      ws.close();
    },
  };
}
