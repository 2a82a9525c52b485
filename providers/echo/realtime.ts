/**
 * EchoRealtime: a credential-free, local speech-to-speech "model". It needs no key and no
 * network, so the whole speech-to-speech path (server, playground, capacity benchmark) runs
 * anywhere. What it does, as a real model would, through the same {@link RealtimeLlm} seam:
 *
 * - greets on connect (with the local TTS when one is given, else a short chime);
 * - listens with an energy VAD; when the caller stops, it says back what it heard;
 * - raises `interrupted` when the caller talks over it (barge-in);
 * - calls a tool on a keypad press (digit N = the N-th tool offered; `#` = the end-call tool)
 *   or on a scripted cue (after the N-th caller turn);
 * - reports transcripts (it cannot transcribe, so it describes: "(you spoke for 1.4 s)") and
 *   usage in 20 ms frames heard and spoken;
 * - works at the leg's own rate ({@link EchoRealtime.audioRates}): a telephone call through it
 *   is resampled nowhere; `rates: {input: 16000, output: 24000}` is a hosted model's chain.
 *
 * Permissions: none with `{ tts: "none" }` (a chime); its local voice is eSpeak NG, which needs
 * what `./tts/espeak` states (`--allow-read` of `espeak-ng.wasm`).
 *
 * @example
 * ```ts
 * import { EchoRealtime } from "@flowcat/flowcat/realtime/echo";
 * const model = new EchoRealtime({ greeting: "Say something and I will say it back." });
 * await model.connect({ systemPrompt: "", tools: [] });
 * model.sendAudio({ pcm: new Int16Array(320), sampleRate: 16000, numChannels: 1 });
 * ```
 * @module
 */

import { Resampler } from "../../core/audio/resample.ts";
import { concatInt16 } from "../../core/audio/pcm.ts";
import { EnergyVad } from "../../core/audio/vad_energy.ts";
import { FlowcatError } from "../../core/errors.ts";
import type { AudioFrame, KeypadEntry, ToolDecl, VadParams } from "../../core/frames.ts";
import type {
  RealtimeAudioRates,
  RealtimeEvent,
  RealtimeLlm,
  RealtimeSetup,
} from "../../core/seams.ts";
import type { RealtimeFactory, RealtimeProviderOptions } from "../provider_types.ts";
import { RealtimeEventQueue } from "../realtime/_shared.ts";
import {
  checkEchoRates,
  ECHO_INPUT_RATE,
  ECHO_OUTPUT_RATE,
  echoRatesOn,
  echoRatesOption,
  EchoVoiceRate,
  spokenAt,
} from "./echo_rates.ts";

/** A scripted tool call: after the caller's `afterTurn`-th turn, call `tool`. */
export interface EchoCue {
  /** Caller turn (1-based) after which the tool is called. */
  afterTurn: number;
  /** Name of the tool to call. */
  tool: string;
  /** Arguments of the call (default `{}`). */
  args?: Record<string, unknown>;
}

/** Options of an {@link EchoRealtime}. */
export interface EchoRealtimeOptions {
  /** Local text-to-speech for the greeting and `say` lines; without it a chime plays. */
  speak?: (text: string) => Promise<AudioFrame>;
  /** What it says on connect (default: a line explaining the echo agent). */
  greeting?: string;
  /** Longest echo per turn in seconds (default 8). */
  maxTurnSecs?: number;
  /** Scripted tool calls. */
  cues?: readonly EchoCue[];
  /** Turn-taking: when the caller has started and stopped (default start 0.15 s, stop 0.6 s). */
  vad?: Partial<VadParams>;
  /** Clock in ms (tests). */
  now?: () => number;
  /**
   * `turn` (default): echo a caller's turn after they stop. `frame`: echo every frame at once,
   * with no greeting and no turn-taking (a loopback model for load tests).
   */
  mode?: "turn" | "frame";
  /**
   * Fixed rates, whatever the leg: the model takes `input` and speaks `output` (8-48 kHz).
   * Default: the leg's own rate both ways when {@link EchoRealtime.audioRates} is asked for one
   * from 8 to 48 kHz, else 16 kHz in and 24 kHz out.
   */
  rates?: RealtimeAudioRates;
}

export { ECHO_OUTPUT_RATE };
const DEFAULT_GREETING =
  "Hello, this is the Flowcat echo agent. Say something and I will say it back.";

/** The local echo model. One instance per call. */
export class EchoRealtime implements RealtimeLlm {
  readonly #q = new RealtimeEventQueue();
  readonly #opts: EchoRealtimeOptions;
  readonly #now: () => number;
  #maxSamples = 0;
  #vad!: EnergyVad;
  /** The rates it takes and speaks (Hz; 16 and 24 kHz until told the leg's), its voice between. */
  #inRate = ECHO_INPUT_RATE;
  #outRate = ECHO_OUTPUT_RATE;
  #voice!: EchoVoiceRate;
  #up: Resampler | undefined;
  #captured: Int16Array[] = [];
  #capturedLen = 0;
  #preroll: Int16Array[] = [];
  #capturing = false;
  #speakingUntil = 0;
  #turns = 0;
  #calls = 0;
  #tools: ToolDecl[] = [];
  #prompt = "";
  #connected = false;
  #closed = false;
  #heardFrames = 0;

  /** A fresh echo model. */
  constructor(opts: EchoRealtimeOptions = {}) {
    this.#opts = opts;
    this.#now = opts.now ?? (() => performance.now());
    this.#setRates(opts.rates === undefined ? echoRatesOn(0) : checkEchoRates(opts.rates));
  }

  /** On a leg of `legRate` Hz: the leg's own rate both ways (8-48 kHz), or the fixed `rates`. */
  audioRates(legRate: number): RealtimeAudioRates {
    this.#setRates(echoRatesOn(legRate, this.#opts.rates));
    return { input: this.#inRate, output: this.#outRate };
  }

  #setRates(rates: RealtimeAudioRates): void {
    this.#inRate = rates.input;
    this.#outRate = rates.output;
    this.#up = undefined;
    const opts = this.#opts;
    this.#voice = new EchoVoiceRate(rates, opts.mode === "frame");
    this.#maxSamples = Math.round((opts.maxTurnSecs ?? 8) * rates.input);
    this.#vad = new EnergyVad({
      sampleRate: rates.input,
      params: {
        confidence: 0.7,
        startSecs: opts.vad?.startSecs ?? 0.15,
        stopSecs: opts.vad?.stopSecs ?? 0.6,
        minVolume: opts.vad?.minVolume ?? 0.5,
      },
    });
  }

  /** The system prompt in force (tests). */
  get systemPrompt(): string {
    return this.#prompt;
  }

  /** The tools offered (tests). */
  get tools(): readonly ToolDecl[] {
    return this.#tools;
  }

  /** Remembers prompt and tools, then greets. */
  async connect(setup: RealtimeSetup): Promise<void> {
    if (this.#closed) throw new FlowcatError("closed", "echo: closed");
    this.#prompt = setup.systemPrompt;
    this.#tools = [...setup.tools];
    this.#connected = true;
    if (this.#opts.mode === "frame") return;
    await this.#speak(this.#opts.greeting ?? DEFAULT_GREETING);
  }

  /** Caller audio (at its input rate, see {@link EchoRealtime.audioRates}; others are resampled). */
  sendAudio(audio: AudioFrame): void {
    if (!this.#connected || this.#closed) return;
    const rate = this.#inRate;
    let pcm = audio.pcm;
    if (audio.sampleRate !== rate) {
      if (this.#up === undefined || this.#up.inRate !== audio.sampleRate) {
        this.#up = new Resampler(audio.sampleRate, rate);
      }
      pcm = this.#up.process(pcm);
    }
    if (this.#opts.mode === "frame") {
      // At one rate both ways the caller's samples go back as they are: a frame's samples are
      // never written to by whoever keeps them (docs/decisions.md, "A frame owns its samples").
      const out = { pcm: this.#voice.convert(pcm), sampleRate: this.#outRate, numChannels: 1 };
      this.#q.push({ type: "audio_out", audio: out });
      return;
    }
    this.#heardFrames++;
    const state = this.#vad.analyze({ pcm, sampleRate: rate, numChannels: 1 });
    const voiced = state !== "quiet";
    if (voiced && !this.#capturing) {
      this.#capturing = true;
      // Keep what came just before the detector fired: the start of the first word.
      for (const p of this.#preroll) this.#keep(p);
      this.#preroll = [];
    }
    if (this.#capturing) {
      this.#keep(pcm);
      if (state === "speaking" && this.#now() < this.#speakingUntil) {
        this.#speakingUntil = 0;
        this.#q.push({ type: "interrupted" });
      }
      if (state === "quiet") this.#endTurn();
    } else {
      this.#preroll.push(pcm.slice());
      if (this.#preroll.length > 10) this.#preroll.shift();
    }
  }

  /** A keypad press: digit N calls the N-th tool, `#` the end-call tool. */
  sendDtmf(key: KeypadEntry): void {
    if (!this.#connected || this.#closed) return;
    const tool = key === "#"
      ? this.#tools.find((t) => t.name === "end_call")
      : /^[1-9]$/.test(key)
      ? this.#tools[Number(key) - 1]
      : undefined;
    this.#q.push({ type: "user_text", text: `(pressed ${key})`, final: true });
    if (tool === undefined) {
      this.#q.push({ type: "bot_text", text: `(no tool on key ${key})`, final: true });
      this.#q.push({ type: "turn_complete" });
      return;
    }
    this.#callTool(tool.name, {});
  }

  /** New prompt and tools (a brain transition). */
  updateSystem(prompt: string, tools: ToolDecl[]): Promise<void> {
    this.#prompt = prompt;
    this.#tools = [...tools];
    return Promise.resolve();
  }

  /** Acknowledges a tool result in the transcript. */
  sendToolResult(id: string, result: unknown): Promise<void> {
    if (!this.#closed) {
      const text = JSON.stringify(result) ?? "null";
      this.#q.push({ type: "bot_text", text: `(tool ${id} answered ${text})`, final: true });
      this.#q.push({ type: "turn_complete" });
    }
    return Promise.resolve();
  }

  /** Speak a line now. */
  say(text: string): Promise<void> {
    return this.#speak(text);
  }

  /** Next event; `undefined` once closed. */
  nextEvent(): Promise<RealtimeEvent | undefined> {
    return this.#q.next();
  }

  /** Push mode: every event to `deliver` as it arrives, `undefined` once closed. */
  listen(deliver: (ev: RealtimeEvent | undefined) => void): void {
    this.#q.listen(deliver);
  }

  /** Idempotent. Reports the frames heard since the last turn as final usage. */
  close(): Promise<void> {
    if (!this.#closed && this.#heardFrames > 0) {
      const heard = this.#heardFrames;
      this.#heardFrames = 0;
      this.#q.push({
        type: "usage",
        usage: { promptTokens: heard, completionTokens: 0, totalTokens: heard },
      });
    }
    this.#closed = true;
    this.#q.close("closed by client");
    return Promise.resolve();
  }

  #keep(pcm: Int16Array): void {
    if (this.#capturedLen >= this.#maxSamples) return;
    const room = this.#maxSamples - this.#capturedLen;
    const part = pcm.length <= room ? pcm.slice() : pcm.slice(0, room);
    this.#captured.push(part);
    this.#capturedLen += part.length;
  }

  #endTurn(): void {
    this.#capturing = false;
    const heard = concatInt16(this.#captured);
    this.#captured = [];
    this.#capturedLen = 0;
    this.#turns++;
    const secs = (heard.length / this.#inRate).toFixed(1);
    this.#q.push({ type: "user_text", text: `(you spoke for ${secs} s)`, final: true });
    const cue = this.#opts.cues?.find((c) => c.afterTurn === this.#turns);
    if (cue !== undefined && this.#tools.some((t) => t.name === cue.tool)) {
      this.#callTool(cue.tool, cue.args ?? {});
      return;
    }
    this.#q.push({ type: "bot_text", text: `(echoing ${secs} s)`, final: true });
    this.#emitAudio(this.#voice.convert(heard));
    this.#usage(Math.round((heard.length * 50) / this.#inRate)); // 20 ms frames
  }

  #callTool(name: string, args: Record<string, unknown>): void {
    this.#q.push({ type: "tool_call", id: `echo-call-${++this.#calls}`, name, args });
  }

  async #speak(text: string): Promise<void> {
    let audio: AudioFrame | undefined;
    if (this.#opts.speak !== undefined) {
      try {
        audio = await this.#opts.speak(text);
      } catch {
        audio = undefined; // a broken TTS must not break the call: chime instead
      }
    }
    if (this.#closed) return;
    this.#q.push({ type: "bot_text", text, final: true });
    this.#emitAudio(spokenAt(audio, this.#outRate));
    this.#usage(0);
  }

  #emitAudio(pcm: Int16Array): void {
    // Real providers stream ~40-100 ms chunks; do the same so playback starts at once.
    const rate = this.#outRate;
    const n = rate / 10;
    for (let i = 0; i < pcm.length; i += n) {
      this.#q.push({
        type: "audio_out",
        audio: {
          pcm: pcm.subarray(i, Math.min(pcm.length, i + n)),
          sampleRate: rate,
          numChannels: 1,
        },
      });
    }
    const start = Math.max(this.#now(), this.#speakingUntil);
    this.#speakingUntil = start + (pcm.length * 1000) / rate;
  }

  #usage(spokenFrames: number): void {
    const heard = this.#heardFrames;
    this.#heardFrames = 0;
    this.#q.push({
      type: "usage",
      usage: {
        promptTokens: heard,
        completionTokens: spokenFrames,
        totalTokens: heard + spokenFrames,
      },
    });
    this.#q.push({ type: "turn_complete" });
  }
}

/** Utterances kept: the greeting comes back every call, and espeak blocks while it speaks. */
const SPOKEN_CACHE = 8;
const spoken = new Map<string, AudioFrame>();

/**
 * Speaks with the local espeak-ng engine, loaded on first use. Synthesis runs synchronously on
 * this thread (about 1.5 ms per character), so recent texts are kept: the greeting, warmed at
 * start, then costs nothing in a call.
 */
async function espeakSpeak(text: string): Promise<AudioFrame> {
  const hit = spoken.get(text);
  if (hit !== undefined) return hit;
  const { espeakSynthesize } = await import("../espeak/tts.ts");
  const frame = await espeakSynthesize(text);
  spoken.set(text, frame);
  if (spoken.size > SPOKEN_CACHE) spoken.delete(spoken.keys().next().value!);
  return frame;
}

/**
 * Load the espeak-ng engine and speak the greeting (or a word), unless `tts` is `"none"`: the
 * engine's WebAssembly compiles and runs for the first time here instead of in the middle of
 * the first call, and a fixed greeting is ready before any call.
 */
export async function warmEchoRealtime(opts: RealtimeProviderOptions): Promise<void> {
  if (opts.options?.tts === "none") return;
  const greeting = opts.options?.greeting;
  await espeakSpeak(typeof greeting === "string" && greeting !== "" ? greeting : "ok");
}

/**
 * Registry factory. Options: `greeting`, `max_turn_secs`, `cues`, `mode` (`turn` or `frame`),
 * `rates` (`leg`, the default, or `IN/OUT` in Hz: see {@link echoRatesOption}), and `tts`:
 * `"espeak"` (the local engine; default) or `"none"` (a chime, nothing loaded).
 */
export const createEchoRealtime: RealtimeFactory = (opts): RealtimeLlm => {
  const o = opts.options ?? {};
  const cues = Array.isArray(o.cues) ? (o.cues as EchoCue[]) : undefined;
  const rates = echoRatesOption(o.rates);
  return new EchoRealtime({
    greeting: typeof o.greeting === "string" ? o.greeting : undefined,
    maxTurnSecs: typeof o.max_turn_secs === "number" ? o.max_turn_secs : undefined,
    cues,
    mode: o.mode === "frame" ? "frame" : "turn",
    speak: o.tts === "none" ? undefined : espeakSpeak,
    ...(rates !== undefined ? { rates } : {}),
  });
};
