/**
 * `deno task wasm`: assembles core/audio/fir.wat (the resampler's SIMD kernel) with wabt and
 * writes core/audio/fir_wasm.ts, the bytes as a module the runtime imports (no file read, no
 * network at run time). `--check` only compares and exits 1 when the committed module is stale.
 * @module
 */

import { ToolInputError } from "./tool_error.ts";

/** Source and generated module, relative to the repository root. */
export const FIR_WAT = "core/audio/fir.wat";
/** The generated module holding the kernel's bytes. */
export const FIR_MODULE = "core/audio/fir_wasm.ts";

/** Assemble WebAssembly text (SIMD and saturating conversions on) into a module's bytes. */
export async function assembleWat(name: string, text: string): Promise<Uint8Array> {
  const { default: initWabt } = await import("wabt");
  const wabt = await initWabt();
  let mod;
  try {
    mod = wabt.parseWat(name, text, { simd: true, sat_float_to_int: true });
  } catch (err) {
    throw new ToolInputError(`${name}: ${err instanceof Error ? err.message : String(err)}`);
  }
  try {
    mod.validate();
    return mod.toBinary({ log: false, write_debug_names: false }).buffer;
  } finally {
    mod.destroy();
  }
}

/** The TypeScript module that carries `bytes`. */
export function wasmModuleSource(bytes: Uint8Array): string {
  const b64 = bytes.toBase64();
  const lines: string[] = [];
  for (let i = 0; i < b64.length; i += 92) lines.push(`  "${b64.slice(i, i + 92)}"`);
  return [
    "/**",
    ` * The resampler's FIR kernel as WebAssembly bytes (${bytes.length} bytes), assembled from`,
    " * ./fir.wat by `deno task wasm`. Generated: edit the .wat, not this file.",
    " * @module",
    " */",
    "",
    "/** Base64 of the kernel module. */",
    "export const FIR_WASM_BASE64: string =",
    lines.join(" +\n") + ";",
    "",
  ].join("\n");
}

if (import.meta.main) {
  try {
    const bytes = await assembleWat(FIR_WAT, await Deno.readTextFile(FIR_WAT));
    const source = wasmModuleSource(bytes);
    if (Deno.args.includes("--check")) {
      const current = await Deno.readTextFile(FIR_MODULE).catch(() => "");
      if (current !== source) {
        console.error(`${FIR_MODULE} is stale: run deno task wasm`);
        Deno.exit(1);
      }
      console.log(`${FIR_MODULE} matches ${FIR_WAT}`);
    } else {
      await Deno.writeTextFile(FIR_MODULE, source);
      console.log(`wrote ${FIR_MODULE} (${bytes.length} bytes of WebAssembly)`);
    }
  } catch (err) {
    if (!(err instanceof ToolInputError)) throw err;
    console.error(`wasm: ${err.message}`);
    Deno.exit(2);
  }
}
