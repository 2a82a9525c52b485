/**
 * Local, credential-free text-to-speech: eSpeak NG compiled to WebAssembly (npm `espeak-ng`).
 *
 * The package is the espeak-ng command-line program built with Emscripten; its 18 MB wasm
 * embeds all voice data, so nothing is fetched at run time.
 *
 * Permissions: `--allow-read` of that one wasm file, `espeak-ng.wasm` (under node_modules, or
 * Deno's npm cache when the package came from a registry; the error on first use names the path).
 *
 * Why the engine is driven the way it is: the package exports no library API, only `main`,
 * and a fresh instance costs ~170 ms (the embedded files are unpacked into the in-memory file
 * system in JavaScript). So one instance is loaded per process, its linear memory is
 * snapshotted right after start-up, and every synthesis restores that snapshot (~2 ms for
 * 32 MiB) and calls `main` again with `-w /out.wav -f /in.txt`. Restoring the memory resets
 * everything the C program keeps between runs (getopt state, the malloc heap, eSpeak's
 * globals), so each call behaves exactly like a first run. A call runs synchronously on the
 * calling thread (about 7 ms for a short sentence), which also makes calls serial by
 * construction: no two syntheses can interleave.
 *
 * @example
 * ```ts
 * import { espeakSynthesize } from "@flowcat/flowcat/tts/espeak";
 * const audio = await espeakSynthesize("Hello world", { voice: "en-us", rate: 175 });
 * audio.sampleRate; // 22050
 * ```
 * @module
 */

import ESpeakNg from "npm:espeak-ng@1.0.2";
import { FlowcatError } from "../../core/errors.ts";
import {
  type AudioFrame,
  type Frame,
  makeFrame,
  type StartParams,
  ttsAudio,
} from "../../core/frames.ts";
import type { TtsService } from "../../core/seams.ts";
import { decodeWav } from "../../core/audio/wav.ts";
import { Resampler } from "../../core/audio/resample.ts";
import { ttsUsageFrame } from "../tts/_shared.ts";

/** eSpeak NG's native output rate (it has no other without MBROLA or Klatt, both left out). */
export const ESPEAK_SAMPLE_RATE = 22050;
/** Longest text one call accepts; longer text is a caller bug, not something to speak. */
export const ESPEAK_MAX_CHARS = 2000;
/** Default voice. */
export const ESPEAK_DEFAULT_VOICE = "en-us";

/** Options of one synthesis. */
export interface EspeakVoiceOptions {
  /** eSpeak voice, optionally with a variant: `en-us`, `en-gb`, `de`, `en-us+f3`. */
  voice?: string;
  /** Words per minute, 80..450 (eSpeak's default is 175). */
  rate?: number;
  /** Base pitch, 0..99 (default 50). */
  pitch?: number;
}

/** The slice of the Emscripten module object this wrapper uses. */
interface EmModule {
  FS: {
    writeFile(path: string, data: string | Uint8Array): void;
    readFile(path: string): Uint8Array;
    unlink(path: string): void;
    close(stream: unknown): void;
    streams: ({ fd: number } | null | undefined)[];
  };
}

/** The raw wasm exports used to run `main` again. */
interface EmExports {
  memory: WebAssembly.Memory;
  stackSave(): number;
  stackRestore(sp: number): void;
  stackAlloc(bytes: number): number;
  __main_argc_argv(argc: number, argv: number): number;
}

type EmFactory = (opts: Record<string, unknown>) => Promise<EmModule>;

/** Thrown by Emscripten's `exit()`; carries the program's exit status. */
interface ExitStatusLike {
  name: "ExitStatus";
  status: number;
}

function isExitStatus(err: unknown): err is ExitStatusLike {
  return typeof err === "object" && err !== null &&
    (err as { name?: unknown }).name === "ExitStatus";
}

/** One loaded engine: the module, its exports and the pristine memory image. */
interface Engine {
  module: EmModule;
  exports: EmExports;
  snapshot: Uint8Array;
  /** stderr lines of the current run (error messages). */
  stderr: string[];
}

let engine: Promise<Engine> | undefined;

async function loadEngine(): Promise<Engine> {
  const stderr: string[] = [];
  let wasmPath = "";
  let exports: EmExports | undefined;
  // A failed instantiation never settles the factory's promise, so it is raced against this.
  let instantiateFailed: (err: unknown) => void = () => {};
  const failure = new Promise<never>((_, reject) => (instantiateFailed = reject));
  const factory = (ESpeakNg as unknown as EmFactory)({
    noInitialRun: true,
    // Emscripten's default quit sets process.exitCode, which would leak into the host process.
    quit: (_status: number, toThrow: unknown) => {
      throw toThrow;
    },
    print: () => {},
    printErr: (line: string) => stderr.push(line),
    locateFile: (file: string, dir: string) => (wasmPath = dir + file),
    // Instantiate ourselves to get the raw exports (stackAlloc, main) the module hides.
    instantiateWasm: (
      imports: WebAssembly.Imports,
      done: (instance: WebAssembly.Instance) => void,
    ) => {
      Deno.readFile(wasmPath)
        .then((bytes) => WebAssembly.instantiate(bytes, imports))
        .then(({ instance }) => {
          exports = instance.exports as unknown as EmExports;
          done(instance);
        }, instantiateFailed);
      return {};
    },
  });
  const module = await Promise.race([factory, failure]).catch((err: unknown) => {
    throw new FlowcatError(
      "config",
      `espeak: engine failed to load (it needs read access to ${
        wasmPath || "the espeak-ng wasm"
      }): ${err instanceof Error ? err.message : String(err)}`,
      { cause: err },
    );
  });
  if (!exports) throw new FlowcatError("other", "espeak: engine loaded without wasm exports");
  return { module, exports, snapshot: new Uint8Array(exports.memory.buffer).slice(), stderr };
}

/** The process-wide engine, loaded on first use; a failed load is retried on the next call. */
function getEngine(): Promise<Engine> {
  engine ??= loadEngine().catch((err) => {
    engine = undefined;
    throw err;
  });
  return engine;
}

/** Load the engine now (about 0.25 s) so the first synthesis does not pay for it. */
export async function preloadEspeak(): Promise<void> {
  await getEngine();
}

const VOICE_RE = /^[A-Za-z0-9_-]{1,32}(\+[A-Za-z0-9_-]{1,32})?$/;

function checkOptions(text: string, opts: EspeakVoiceOptions): string[] {
  if (text.length > ESPEAK_MAX_CHARS) {
    throw new FlowcatError(
      "config",
      `espeak: text of ${text.length} chars exceeds the limit of ${ESPEAK_MAX_CHARS}`,
    );
  }
  const voice = opts.voice ?? ESPEAK_DEFAULT_VOICE;
  if (!VOICE_RE.test(voice)) {
    throw new FlowcatError("config", `espeak: invalid voice name ${JSON.stringify(voice)}`);
  }
  const args = ["-v", voice];
  if (opts.rate !== undefined) {
    if (!(Number.isFinite(opts.rate) && opts.rate >= 80 && opts.rate <= 450)) {
      throw new FlowcatError("config", `espeak: rate ${opts.rate} wpm outside 80..450`);
    }
    args.push("-s", String(Math.round(opts.rate)));
  }
  if (opts.pitch !== undefined) {
    if (!(Number.isFinite(opts.pitch) && opts.pitch >= 0 && opts.pitch <= 99)) {
      throw new FlowcatError("config", `espeak: pitch ${opts.pitch} outside 0..99`);
    }
    args.push("-p", String(Math.round(opts.pitch)));
  }
  return args;
}

const utf8 = new TextEncoder();

/** Run `espeak-ng <args> -w /out.wav -f /in.txt` on a freshly restored memory image. */
function runMain(e: Engine, text: string, args: string[]): Uint8Array {
  const { FS } = e.module;
  const ex = e.exports;
  new Uint8Array(ex.memory.buffer).set(e.snapshot);
  e.stderr.length = 0;
  // Text goes through a file, never argv: a leading "-" would otherwise parse as an option.
  FS.writeFile("/in.txt", text);
  const argv = ["espeak-ng", ...args, "-w", "/out.wav", "-f", "/in.txt"];
  const sp = ex.stackSave();
  let status = 0;
  try {
    const ptrs = argv.map((arg) => {
      const bytes = utf8.encode(arg + "\0");
      const at = ex.stackAlloc(bytes.length);
      new Uint8Array(ex.memory.buffer).set(bytes, at);
      return at;
    });
    const table = ex.stackAlloc(4 * (ptrs.length + 1));
    const view = new Uint32Array(ex.memory.buffer, table, ptrs.length + 1);
    view.set(ptrs);
    view[ptrs.length] = 0;
    status = ex.__main_argc_argv(argv.length, table);
  } catch (err) {
    if (!isExitStatus(err)) throw err;
    status = err.status;
  } finally {
    ex.stackRestore(sp);
    // Streams the C side left open would otherwise outlive the memory restore.
    for (const stream of FS.streams) if (stream && stream.fd > 2) FS.close(stream);
  }
  let wav: Uint8Array | undefined;
  try {
    wav = FS.readFile("/out.wav");
    FS.unlink("/out.wav");
  } catch {
    wav = undefined;
  }
  FS.unlink("/in.txt");
  if (status !== 0 || !wav) {
    const why = e.stderr.find((l) => l.startsWith("Error")) ?? e.stderr[0] ?? "no output";
    throw new FlowcatError("config", `espeak: synthesis failed (exit ${status}): ${why}`);
  }
  return wav;
}

/**
 * Synthesize `text` to mono 16-bit PCM at {@link ESPEAK_SAMPLE_RATE}. Loads the engine on first
 * use. Throws a `config` {@link FlowcatError} for text over {@link ESPEAK_MAX_CHARS}, an
 * unknown voice, or a rate/pitch out of range. Empty text gives an empty frame.
 */
export async function espeakSynthesize(
  text: string,
  opts: EspeakVoiceOptions = {},
): Promise<AudioFrame> {
  const args = checkOptions(text, opts);
  if (text.trim() === "") {
    return { pcm: new Int16Array(0), sampleRate: ESPEAK_SAMPLE_RATE, numChannels: 1 };
  }
  const e = await getEngine();
  let wav: Uint8Array;
  try {
    wav = runMain(e, text, args);
  } catch (err) {
    // A trap leaves the JS side of the runtime in an unknown state: start over next time.
    if (!(err instanceof FlowcatError) && engine) engine = undefined;
    throw err;
  }
  return decodeWav(wav);
}

/**
 * Split text into sentence-sized pieces (at most `max` chars), so that the first audio comes
 * after one sentence's synthesis and no single synchronous run blocks the event loop for long.
 */
export function splitForSpeech(text: string, max = 300): string[] {
  const pieces: string[] = [];
  for (const sentence of text.split(/(?<=[.!?;:\n])\s+/)) {
    let rest = sentence.trim();
    while (rest.length > max) {
      const cut = Math.max(rest.lastIndexOf(", ", max), rest.lastIndexOf(" ", max));
      const at = cut > max / 3 ? cut + 1 : max;
      pieces.push(rest.slice(0, at).trim());
      rest = rest.slice(at).trim();
    }
    if (rest) pieces.push(rest);
  }
  return pieces;
}

/** Options of {@link EspeakTts}. */
export interface EspeakTtsOptions extends EspeakVoiceOptions {
  /** Output rate; audio is resampled from 22050 Hz when it differs (default 22050). */
  sampleRate?: number;
  /** Duration of each TtsAudio frame in milliseconds (default 40). */
  chunkMs?: number;
}

/** The eSpeak NG text-to-speech service: local, offline, no credentials. */
export class EspeakTts implements TtsService {
  readonly #opts: EspeakVoiceOptions;
  readonly #rate: number;
  readonly #chunkMs: number;

  /** Make the service; options are checked here so a bad config fails at startup. */
  constructor(opts: EspeakTtsOptions = {}) {
    checkOptions("", opts);
    this.#opts = { voice: opts.voice, rate: opts.rate, pitch: opts.pitch };
    this.#rate = opts.sampleRate ?? ESPEAK_SAMPLE_RATE;
    this.#chunkMs = opts.chunkMs ?? 40;
    if (!(this.#chunkMs >= 5 && this.#chunkMs <= 1000)) {
      throw new FlowcatError("config", `espeak: chunkMs ${this.#chunkMs} outside 5..1000`);
    }
    // Validates the rate (throws a config error for unusable ones).
    new Resampler(ESPEAK_SAMPLE_RATE, this.#rate);
  }

  /** Provider name. */
  name(): string {
    return "espeak";
  }

  /** Rate of the audio {@link runTts} yields. */
  sampleRate(): number {
    return this.#rate;
  }

  /** Loads the engine, so the first utterance is not delayed by it. */
  async start(_params: StartParams): Promise<void> {
    await getEngine();
  }

  /**
   * TtsStarted, TtsAudio chunks, a `tts_usage` Metrics frame, TtsStopped. Synthesis goes sentence by sentence; `signal` is
   * checked before each sentence and each chunk, and an abort ends the stream at once (no
   * TtsStopped: the interruption owns the cleanup). Over-long text throws before TtsStarted.
   */
  async *runTts(text: string, signal?: AbortSignal): AsyncGenerator<Frame> {
    checkOptions(text, this.#opts);
    if (signal?.aborted) return;
    const contextId = crypto.randomUUID();
    yield makeFrame("TtsStarted", { contextId });
    const resampler = this.#rate === ESPEAK_SAMPLE_RATE
      ? undefined
      : new Resampler(ESPEAK_SAMPLE_RATE, this.#rate);
    const chunk = Math.max(1, Math.round((this.#rate * this.#chunkMs) / 1000));
    for (const piece of splitForSpeech(text)) {
      if (signal?.aborted) return;
      const audio = await espeakSynthesize(piece, this.#opts);
      const pcm = resampler ? resampler.process(audio.pcm) : audio.pcm;
      for (let at = 0; at < pcm.length; at += chunk) {
        if (signal?.aborted) return;
        const part = pcm.slice(at, Math.min(at + chunk, pcm.length));
        yield ttsAudio({ pcm: part, sampleRate: this.#rate, numChannels: 1 }, contextId);
      }
    }
    // Characters are what hosted engines bill by; reported the same way, so usage dashboards
    // read one metric whatever the engine.
    if (text.trim() !== "") {
      yield ttsUsageFrame("espeak", this.#opts.voice ?? ESPEAK_DEFAULT_VOICE, text.length);
    }
    yield makeFrame("TtsStopped", { contextId });
  }
}

/** Make an {@link EspeakTts}. */
export const createEspeakTts = (opts: EspeakTtsOptions = {}): EspeakTts => new EspeakTts(opts);
