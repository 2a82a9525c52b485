/**
 * Silero VAD (v5 ONNX model) through `onnxruntime-web` (wasm), as a {@link VadAnalyzer}.
 *
 * Audio is resampled to 16 kHz when it comes at another rate (8 kHz telephony included; the
 * project's {@link Resampler}), scaled to float [-1, 1), and cut into 512-sample windows
 * (32 ms). Each window goes to the model prefixed with the last 64 samples of the previous
 * one (the context Silero's own wrapper adds), with the recurrent state carried forward. A
 * window counts as speech when the model's probability reaches `confidence` and its volume
 * ({@link volumeOf}) reaches `minVolume`; {@link VadStateMachine} applies startSecs/stopSecs,
 * counted in whole windows (0.2 s is six), skipping pauses of up to two windows inside the start
 * window (`startGapSecs`).
 *
 * The model file comes from, in order: `modelBytes`, `modelPath`, then the npm package
 * `@ricky0123/vad-web` (`dist/silero_vad_v5.onnx`) found through the import map or in
 * `node_modules` beside the project or the working directory. Reading it needs `--allow-read`
 * of that file (and of onnxruntime-web's wasm beside it). onnxruntime is imported only when
 * {@link SileroVad.create} runs, so importing this module costs nothing. Any module with the
 * onnxruntime API can be passed as `ort` (e.g. `onnxruntime-node`, about 6x faster).
 *
 * @example
 * ```ts
 * import { SileroVad } from "@flowcat/flowcat/audio/silero";
 * import type { FrameOf } from "@flowcat/flowcat";
 * declare const frame: FrameOf<"InputAudio">;
 * const vad = await SileroVad.create({ sampleRate: 8000 });
 * const state = await vad.analyze(frame.audio);
 * await vad.close();
 * ```
 *
 * Permissions: `--allow-read` of the model file and onnxruntime-web's wasm (none with
 * `modelBytes`).
 * @module
 */

import { type AudioFrame, DEFAULT_VAD_PARAMS, type VadParams, type VadState } from "../frames.ts";
import type { VadAnalyzer } from "../seams.ts";
import { FlowcatError } from "../errors.ts";
import { Resampler } from "./resample.ts";
import { SILERO_START_GAP_SECS, VadStateMachine, volumeOfMeanSquare } from "./vad_state.ts";

/** The part of an onnxruntime tensor this module uses. */
export interface OrtTensorLike {
  /** The tensor's values (a typed array for the outputs read here). */
  readonly data: unknown;
  /** Release the tensor's memory, when the runtime supports it. */
  dispose?(): void;
}

/** The part of an onnxruntime inference session this module uses. */
export interface OrtSessionLike {
  /** Run the model on named input tensors; resolves to the named outputs. */
  run(feeds: Record<string, OrtTensorLike>): Promise<Record<string, OrtTensorLike>>;
  /** Free the session and its model. */
  release(): Promise<void>;
}

/** The part of the onnxruntime module API this module uses (web or node flavour). */
export interface OrtLike {
  /** Runtime settings (wasm threads, log level) set before the first session. */
  env: { wasm?: { numThreads?: number }; logLevel?: string };
  /** Factory of inference sessions from model bytes. */
  InferenceSession: {
    create(model: Uint8Array, options?: Record<string, unknown>): Promise<OrtSessionLike>;
  };
  /** Tensor constructor: element type, values and shape. */
  Tensor: new (type: string, data: unknown, dims?: readonly number[]) => OrtTensorLike;
}

/** Options of {@link SileroVad.create}. */
export interface SileroVadOptions {
  /** The ONNX model itself (skips file lookup). */
  modelBytes?: Uint8Array;
  /** Path or file URL of a Silero v5/v6 ONNX model. */
  modelPath?: string | URL;
  /** Rate reported by `sampleRate()` (default 16000); frames at any rate are accepted. */
  sampleRate?: number;
  /** Start/stop parameters (default {@link DEFAULT_VAD_PARAMS}). */
  params?: VadParams;
  /**
   * Longest pause tolerated inside the start window (default {@link SILERO_START_GAP_SECS}; see
   * `VadStateOptions`).
   */
  startGapSecs?: number;
  /** An onnxruntime module to use instead of importing `onnxruntime-web`. */
  ort?: OrtLike;
}

const MODEL_RATE = 16000;
const WINDOW = 512;
const CONTEXT = 64;
const STATE_SIZE = 2 * 1 * 128;
const MODEL_FILE = "@ricky0123/vad-web/dist/silero_vad_v5.onnx";

/** Where the default model may live, best first. */
function modelCandidates(): (string | URL)[] {
  const out: (string | URL)[] = [];
  try {
    out.push(new URL(import.meta.resolve(MODEL_FILE)));
  } catch {
    // No import-map entry for the package: fall through to node_modules lookups.
  }
  if (import.meta.url.startsWith("file:")) {
    out.push(new URL(`../../node_modules/${MODEL_FILE}`, import.meta.url));
  }
  try {
    out.push(`${Deno.cwd()}/node_modules/${MODEL_FILE}`);
  } catch {
    // cwd not readable without --allow-read; skip.
  }
  return out;
}

/** Read the Silero v5 model: from `path` when given, else from the npm package. */
export async function loadSileroModel(path?: string | URL): Promise<Uint8Array> {
  const tried: string[] = [];
  for (const p of path !== undefined ? [path] : modelCandidates()) {
    try {
      return await Deno.readFile(p);
    } catch (err) {
      if (err instanceof Deno.errors.NotCapable || err instanceof Deno.errors.PermissionDenied) {
        throw new FlowcatError("config", `silero: no read permission for ${p}`, { cause: err });
      }
      tried.push(String(p));
    }
  }
  throw new FlowcatError(
    "config",
    `silero: model not found (tried ${tried.join(", ")}); pass modelBytes or modelPath`,
  );
}

/** Silero voice-activity analyzer for one stream. Not shared between calls: it holds state. */
export class SileroVad implements VadAnalyzer {
  readonly #ort: OrtLike;
  readonly #session: OrtSessionLike;
  readonly #rate: number;
  readonly #sm: VadStateMachine;
  readonly #sr: OrtTensorLike;
  /** Context (64) + window (512) samples, as the model takes them. */
  readonly #input = new Float32Array(CONTEXT + WINDOW);
  #state: OrtTensorLike;
  #fill = 0;
  #sumSq = 0;
  #resampler: Resampler | undefined;
  #scratch = new Int16Array(0);
  #confidence: number;
  #minVolume: number;
  #prob = 0;
  #queue: Promise<unknown> = Promise.resolve();
  #closed = false;

  private constructor(ort: OrtLike, session: OrtSessionLike, opts: SileroVadOptions) {
    this.#ort = ort;
    this.#session = session;
    this.#rate = opts.sampleRate ?? MODEL_RATE;
    const params = opts.params ?? DEFAULT_VAD_PARAMS;
    this.#sm = new VadStateMachine(params, {
      startGapSecs: opts.startGapSecs ?? SILERO_START_GAP_SECS,
    });
    this.#confidence = params.confidence;
    this.#minVolume = params.minVolume;
    this.#sr = new ort.Tensor("int64", BigInt64Array.from([BigInt(MODEL_RATE)]), []);
    this.#state = this.#zeroState();
  }

  /** Load the model and make an analyzer (see {@link SileroVadOptions}). */
  static async create(opts: SileroVadOptions = {}): Promise<SileroVad> {
    const bytes = opts.modelBytes ?? await loadSileroModel(opts.modelPath);
    let ort = opts.ort;
    if (!ort) {
      const mod = await import("npm:onnxruntime-web@1.30.0") as unknown as OrtLike & {
        default?: OrtLike;
      };
      ort = mod.default ?? mod;
      // One wasm thread per process: worker threads would need more permissions and cores.
      if (ort.env.wasm) ort.env.wasm.numThreads = 1;
      ort.env.logLevel = "error";
    }
    let session: OrtSessionLike;
    try {
      session = await ort.InferenceSession.create(
        bytes,
        opts.ort ? {} : { executionProviders: ["wasm"] },
      );
    } catch (err) {
      throw new FlowcatError("config", `silero: cannot load model: ${String(err)}`, { cause: err });
    }
    return new SileroVad(ort, session, opts);
  }

  /** The rate this analyzer was configured for. */
  sampleRate(): number {
    return this.#rate;
  }

  /** Speech probability of the last window analysed. */
  get probability(): number {
    return this.#prob;
  }

  /** Current state without analysing anything. */
  get state(): VadState {
    return this.#sm.state;
  }

  /**
   * Analyse one mono frame (any rate); resolves to the state after every complete window in
   * it. Calls are serialised, so frames may be passed without awaiting each one.
   */
  analyze(audio: AudioFrame): Promise<VadState> {
    const next = this.#queue.then(() => this.#analyze(audio));
    this.#queue = next.catch(() => undefined);
    return next;
  }

  /** Replace the start/stop parameters. */
  setParams(params: VadParams): void {
    this.#sm.setParams(params);
    this.#confidence = params.confidence;
    this.#minVolume = params.minVolume;
  }

  /** Forget model state, context, partial window and speech state (start of a new stream). */
  reset(): void {
    this.#state = this.#zeroState();
    this.#input.fill(0);
    this.#fill = 0;
    this.#sumSq = 0;
    this.#resampler?.reset();
    this.#sm.reset();
    this.#prob = 0;
  }

  /** Release the inference session; the analyzer cannot be used afterwards. */
  async close(): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    await this.#queue;
    await this.#session.release();
  }

  #zeroState(): OrtTensorLike {
    return new this.#ort.Tensor("float32", new Float32Array(STATE_SIZE), [2, 1, 128]);
  }

  async #analyze(audio: AudioFrame): Promise<VadState> {
    if (this.#closed) throw new FlowcatError("closed", "silero: analyzer closed");
    if (audio.numChannels !== 1) {
      throw new FlowcatError(
        "protocol",
        `silero: mono audio only (got ${audio.numChannels} channels)`,
      );
    }
    let pcm = audio.pcm;
    if (audio.sampleRate !== MODEL_RATE) {
      if (this.#resampler?.inRate !== audio.sampleRate) {
        this.#resampler = new Resampler(audio.sampleRate, MODEL_RATE);
      }
      const n = this.#resampler.outputLength(pcm.length);
      if (this.#scratch.length < n) this.#scratch = new Int16Array(n);
      pcm = this.#resampler.process(pcm, this.#scratch);
    }
    const buf = this.#input;
    for (let i = 0; i < pcm.length; i++) {
      const s = pcm[i];
      buf[CONTEXT + this.#fill++] = s / 32768;
      this.#sumSq += s * s;
      if (this.#fill === WINDOW) await this.#runWindow();
    }
    return this.#sm.state;
  }

  async #runWindow(): Promise<void> {
    const ort = this.#ort;
    // The tensor wraps the buffer; run() copies it in, and we refill only after it resolves.
    const input = new ort.Tensor("float32", this.#input, [1, CONTEXT + WINDOW]);
    const out = await this.#session.run({ input, state: this.#state, sr: this.#sr });
    const prob = (out.output?.data as Float32Array | undefined)?.[0];
    const next = out.stateN;
    if (typeof prob !== "number" || !next) {
      throw new FlowcatError("protocol", "silero: model gave no output/stateN (not a v5 model?)");
    }
    this.#state.dispose?.();
    input.dispose?.();
    this.#state = next;
    this.#prob = prob;
    const volume = volumeOfMeanSquare(this.#sumSq / WINDOW);
    this.#sm.update(prob >= this.#confidence && volume >= this.#minVolume, WINDOW / MODEL_RATE);
    // The last 64 samples become the next window's context.
    this.#input.copyWithin(0, WINDOW, WINDOW + CONTEXT);
    this.#fill = 0;
    this.#sumSq = 0;
  }
}
