/**
 * RNNoise noise suppression (Xiph's recurrent network) through a WebAssembly build from npm.
 *
 * RNNoise works on 48 kHz mono in frames of 480 samples (10 ms), with float samples in int16
 * scale. The default build delays its output by 960 samples (20 ms, measured).
 * {@link RnnoiseDenoiser} keeps one stream's state; {@link RnnoiseDenoiser.process} takes
 * 48 kHz int16 of any length and returns the frames it completed (so 10 ms multiples in give
 * the same count out).
 *
 * The default build is the synchronous one of `@jitsi/rnnoise-wasm@0.2.1` (Apache-2.0 wrapper,
 * BSD-3-Clause RNNoise 0.2 model): the wasm is inlined in the package's JavaScript, so loading
 * needs no file access and no network. It is imported only when {@link loadRnnoise} runs, once
 * per process, and each denoiser costs a small state in its heap. Any emscripten build with
 * the same exports can be passed instead as an {@link RnnoiseModuleLike}.
 *
 * @example
 * ```ts
 * import { RnnoiseDenoiser } from "@flowcat/flowcat/audio/rnnoise";
 * declare const noisy48k: Int16Array; // 480 samples, 10 ms at 48 kHz
 * const dn = await RnnoiseDenoiser.create();
 * const clean48k = dn.process(noisy48k); // Int16Array
 * dn.destroy();
 * ```
 *
 * Permissions: none (the WebAssembly comes with the npm package's JavaScript).
 * @module
 */

import { FlowcatError } from "../errors.ts";

/** Samples per RNNoise frame (10 ms at 48 kHz). */
export const RNNOISE_FRAME = 480;
/** The only rate RNNoise works at. */
export const RNNOISE_RATE = 48000;

/** The part of an emscripten RNNoise module this file uses. */
export interface RnnoiseModuleLike {
  /** The wasm heap as float32; re-read after allocations (it is replaced when memory grows). */
  readonly HEAPF32: Float32Array;
  /** Allocate `bytes` on the wasm heap; returns the pointer. */
  _malloc(bytes: number): number;
  /** Free memory from `_malloc`. */
  _free(ptr: number): void;
  /** Make a denoiser state; 0 selects the built-in model. */
  _rnnoise_create(model: number): number;
  /** Free a denoiser state from `_rnnoise_create`. */
  _rnnoise_destroy(state: number): void;
  /** Denoise 480 floats at `input` into `output`; returns the voice probability. */
  _rnnoise_process_frame(state: number, output: number, input: number): number;
}

let shared: Promise<RnnoiseModuleLike> | undefined;

/** Load the default RNNoise wasm build once per process (later calls share it). */
export function loadRnnoise(): Promise<RnnoiseModuleLike> {
  shared ??= (async () => {
    try {
      // A literal specifier, so that deno sees (and locks) the dependency.
      const mod = await import("npm:@jitsi/rnnoise-wasm@0.2.1/dist/rnnoise-sync.js");
      const module = (mod.default as () => RnnoiseModuleLike & { ready?: Promise<unknown> })();
      await module.ready;
      return module;
    } catch (err) {
      shared = undefined;
      throw new FlowcatError("config", `rnnoise: cannot load @jitsi/rnnoise-wasm: ${String(err)}`, {
        cause: err,
      });
    }
  })();
  return shared;
}

/** Options of {@link RnnoiseDenoiser.create}. */
export interface RnnoiseOptions {
  /** An RNNoise module to use instead of the default build. */
  module?: RnnoiseModuleLike;
}

/** One stream's RNNoise state. Not shared between streams. Call {@link destroy} when done. */
export class RnnoiseDenoiser {
  readonly #m: RnnoiseModuleLike;
  #state: number;
  #inPtr: number;
  #outPtr: number;
  /** Partial input frame, int16-scaled floats. */
  readonly #pending = new Float32Array(RNNOISE_FRAME);
  #fill = 0;
  #voice = 0;

  /** Make a denoiser on a loaded module (see {@link RnnoiseDenoiser.create}). */
  constructor(module: RnnoiseModuleLike) {
    this.#m = module;
    this.#state = module._rnnoise_create(0);
    this.#inPtr = module._malloc(RNNOISE_FRAME * 4);
    this.#outPtr = module._malloc(RNNOISE_FRAME * 4);
    if (!this.#state || !this.#inPtr || !this.#outPtr) {
      this.destroy();
      throw new FlowcatError("other", "rnnoise: out of wasm memory");
    }
  }

  /** Load the module (default build unless one is given) and make a denoiser. */
  static async create(opts: RnnoiseOptions = {}): Promise<RnnoiseDenoiser> {
    return new RnnoiseDenoiser(opts.module ?? await loadRnnoise());
  }

  /** RNNoise's voice probability for the last frame (0..1). */
  get voiceProbability(): number {
    return this.#voice;
  }

  /** Samples held back waiting for a full frame. */
  get buffered(): number {
    return this.#fill;
  }

  /**
   * Denoise one frame of 480 int16-scaled floats in place; returns the voice probability.
   * The output lags the input (20 ms with the default build).
   */
  processFrame(frame: Float32Array): number {
    if (!this.#state) throw new FlowcatError("closed", "rnnoise: denoiser destroyed");
    if (frame.length !== RNNOISE_FRAME) {
      throw new FlowcatError("other", `rnnoise: frame of ${frame.length}, need ${RNNOISE_FRAME}`);
    }
    const m = this.#m;
    m.HEAPF32.set(frame, this.#inPtr >> 2);
    this.#voice = m._rnnoise_process_frame(this.#state, this.#outPtr, this.#inPtr);
    const out = this.#outPtr >> 2;
    frame.set(m.HEAPF32.subarray(out, out + RNNOISE_FRAME));
    return this.#voice;
  }

  /**
   * Denoise the next chunk of a 48 kHz mono stream. Returns the samples of every frame
   * completed by this chunk (a multiple of 480; a remainder waits for the next call).
   */
  process(pcm: Int16Array): Int16Array {
    const total = this.#fill + pcm.length;
    const out = new Int16Array(total - (total % RNNOISE_FRAME));
    const frame = this.#pending;
    let o = 0;
    for (let i = 0; i < pcm.length;) {
      const n = Math.min(RNNOISE_FRAME - this.#fill, pcm.length - i);
      for (let k = 0; k < n; k++) frame[this.#fill + k] = pcm[i + k];
      this.#fill += n;
      i += n;
      if (this.#fill < RNNOISE_FRAME) break;
      this.processFrame(frame);
      for (let k = 0; k < RNNOISE_FRAME; k++) {
        const s = Math.round(frame[k]);
        out[o++] = s > 32767 ? 32767 : s < -32768 ? -32768 : s;
      }
      this.#fill = 0;
    }
    return out;
  }

  /** Forget the partial frame (the model's own state is kept). */
  reset(): void {
    this.#fill = 0;
  }

  /** Free the wasm state and buffers; the denoiser cannot be used afterwards. */
  destroy(): void {
    const m = this.#m;
    if (this.#state) m._rnnoise_destroy(this.#state);
    if (this.#inPtr) m._free(this.#inPtr);
    if (this.#outPtr) m._free(this.#outPtr);
    this.#state = this.#inPtr = this.#outPtr = 0;
  }
}
