/**
 * `deno task wasm`: assembles the SIMD kernels (core/audio/fir.wat, the resampler's,
 * core/audio/aec.wat, the echo canceller's, and core/audio/fft.wat, the real FFT's) with wabt and
 * writes each as a module of bytes the runtime imports (core/audio/fir_wasm.ts,
 * core/audio/aec_wasm.ts, core/audio/fft_wasm.ts: no file read, no network at run time). It also
 * copies the Opus codec's WebAssembly out of the pinned npm package `opusscript` (deno.json) into
 * core/audio/opus_wasm.ts, gzip-compressed, for the same reason. `--check` only compares and exits 1 when a committed module is stale.
 * @module
 */

import { ToolInputError } from "./tool_error.ts";

/** Source and generated module, relative to the repository root. */
export const FIR_WAT = "core/audio/fir.wat";
/** The generated module holding the kernel's bytes. */
export const FIR_MODULE = "core/audio/fir_wasm.ts";

/** One WebAssembly text source and the module that carries its bytes. */
export interface WatKernel {
  /** The .wat source, relative to the repository root. */
  wat: string;
  /** The generated TypeScript module. */
  module: string;
  /** The exported constant holding the base64 bytes. */
  constant: string;
  /** What the kernel is, for the module's doc line ("The resampler's FIR kernel"). */
  title: string;
}

/** Every kernel `deno task wasm` assembles. */
export const WAT_KERNELS: readonly WatKernel[] = [
  {
    wat: FIR_WAT,
    module: FIR_MODULE,
    constant: "FIR_WASM_BASE64",
    title: "The resampler's FIR kernel",
  },
  {
    wat: "core/audio/aec.wat",
    module: "core/audio/aec_wasm.ts",
    constant: "AEC_WASM_BASE64",
    title: "The echo canceller's partitioned filter kernel",
  },
  {
    wat: "core/audio/fft.wat",
    module: "core/audio/fft_wasm.ts",
    constant: "FFT_WASM_BASE64",
    title: "The real FFT kernel",
  },
];

/** The generated module holding the Opus codec's bytes (gzip, base64). */
export const OPUS_MODULE = "core/audio/opus_wasm.ts";
/** The import-map name of the npm package the Opus bytes come from. */
export const OPUS_PACKAGE = "opusscript";
/** Path of the WebAssembly file inside that package. */
export const OPUS_PACKAGE_WASM = "build/opusscript_native_wasm.wasm";

/**
 * `name@version` of the Opus package pinned in deno.json's imports (`npm:opusscript@0.1.1`).
 * Throws a {@link ToolInputError} when the entry is missing or not an exact version.
 */
export async function opusPackage(denoJson = "deno.json"): Promise<string> {
  const config = JSON.parse(await Deno.readTextFile(denoJson)) as {
    imports?: Record<string, string>;
  };
  const spec = config.imports?.[OPUS_PACKAGE] ?? "";
  const m = /^npm:(opusscript@\d+\.\d+\.\d+)$/.exec(spec);
  if (!m) {
    throw new ToolInputError(`${denoJson}: imports.${OPUS_PACKAGE} must pin an exact npm version`);
  }
  return m[1];
}

/** Where the Opus package is installed under node_modules (`deno install`). */
function opusPackageDir(pkg: string): string {
  return `node_modules/.deno/${pkg}/node_modules/${OPUS_PACKAGE}`;
}

/** The Opus package's WebAssembly as installed under node_modules (`deno install`). */
export async function readOpusWasm(pkg: string): Promise<Uint8Array<ArrayBuffer>> {
  const path = `${opusPackageDir(pkg)}/${OPUS_PACKAGE_WASM}`;
  try {
    return await Deno.readFile(path);
  } catch (err) {
    if (!(err instanceof Deno.errors.NotFound)) throw err;
    throw new ToolInputError(`${path} is missing: run deno install`);
  }
}

/** Lower-case hex SHA-256 of `bytes`. */
export async function sha256Hex(bytes: Uint8Array<ArrayBuffer>): Promise<string> {
  const digest = new Uint8Array(await crypto.subtle.digest("SHA-256", bytes));
  return Array.from(digest, (b) => b.toString(16).padStart(2, "0")).join("");
}

async function gzip(bytes: Uint8Array<ArrayBuffer>): Promise<Uint8Array> {
  const stream = new Blob([bytes]).stream().pipeThrough(new CompressionStream("gzip"));
  return new Uint8Array(await new Response(stream).arrayBuffer());
}

/** The TypeScript module that carries the Opus package's WebAssembly `bytes`. */
export async function opusModuleSource(
  pkg: string,
  bytes: Uint8Array<ArrayBuffer>,
): Promise<string> {
  // The binary is redistributed: both licences ask for their notices to travel with it.
  const notices: string[] = [];
  for (const file of ["LICENSE", "build/COPYING.libopus"]) {
    const text = await Deno.readTextFile(`${opusPackageDir(pkg)}/${file}`);
    notices.push(` * --- ${pkg}/${file} ---`, " *");
    for (const line of text.trimEnd().split(/\r?\n/)) {
      notices.push(` * ${line.replaceAll("*/", "* /")}`.trimEnd());
    }
    notices.push(" *");
  }
  notices.pop(); // no blank comment line before the close
  const b64 = (await gzip(bytes)).toBase64();
  const lines: string[] = [];
  for (let i = 0; i < b64.length; i += 92) lines.push(`  "${b64.slice(i, i + 92)}",`);
  return [
    "/**",
    " * libopus as WebAssembly, gzip-compressed: the file below of the npm package below (MIT;",
    " * libopus itself is BSD-3-Clause), copied by `deno task wasm` so that loading the codec reads",
    " * no file. Generated: do not edit.",
    " *",
    ` * - package: ${pkg}`,
    ` * - file: ${OPUS_PACKAGE_WASM} (${bytes.length} bytes)`,
    " * @module",
    " */",
    "",
    "/*",
    " * Licence notices of what the bytes are built from (opusscript's binding, libopus):",
    " *",
    ...notices,
    " */",
    "",
    "/** The npm package (name@version) the bytes come from. */",
    `export const OPUS_WASM_PACKAGE: string = "${pkg}";`,
    "",
    "/** Lower-case hex SHA-256 of the uncompressed bytes. */",
    "export const OPUS_WASM_SHA256: string =",
    `  "${await sha256Hex(bytes)}";`,
    "",
    "/** Base64 of the gzip-compressed bytes. */",
    "export const OPUS_WASM_GZIP_BASE64: string = [",
    ...lines,
    '].join("");',
    "",
  ].join("\n");
}

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

/** The TypeScript module that carries `bytes` of `kernel` (the resampler's by default). */
export function wasmModuleSource(bytes: Uint8Array, kernel: WatKernel = WAT_KERNELS[0]): string {
  const b64 = bytes.toBase64();
  const lines: string[] = [];
  for (let i = 0; i < b64.length; i += 92) lines.push(`  "${b64.slice(i, i + 92)}"`);
  return [
    "/**",
    ` * ${kernel.title} as WebAssembly bytes (${bytes.length} bytes), assembled from`,
    ` * ./${
      kernel.wat.split("/").pop()
    } by \`deno task wasm\`. Generated: edit the .wat, not this file.`,
    " * @module",
    " */",
    "",
    "/** Base64 of the kernel module. */",
    `export const ${kernel.constant}: string =`,
    lines.join(" +\n") + ";",
    "",
  ].join("\n");
}

/** The SHA-256 and package recorded in the committed Opus module, or undefined. */
async function committedOpus(): Promise<{ pkg: string; sha: string } | undefined> {
  const text = await Deno.readTextFile(OPUS_MODULE).catch(() => "");
  const pkg = /OPUS_WASM_PACKAGE: string = "([^"]+)"/.exec(text)?.[1];
  const sha = /OPUS_WASM_SHA256: string =\s*"([0-9a-f]+)"/.exec(text)?.[1];
  return pkg && sha ? { pkg, sha } : undefined;
}

if (import.meta.main) {
  try {
    const kernels = [];
    for (const kernel of WAT_KERNELS) {
      const bytes = await assembleWat(kernel.wat, await Deno.readTextFile(kernel.wat));
      kernels.push({ kernel, bytes, source: wasmModuleSource(bytes, kernel) });
    }
    const pkg = await opusPackage();
    const opus = await readOpusWasm(pkg);
    if (Deno.args.includes("--check")) {
      let stale = false;
      for (const { kernel, source } of kernels) {
        const current = await Deno.readTextFile(kernel.module).catch(() => "");
        if (current !== source) {
          console.error(`${kernel.module} is stale: run deno task wasm`);
          stale = true;
        } else console.log(`${kernel.module} matches ${kernel.wat}`);
      }
      // The gzip stream may differ between Deno versions: compare what it decompresses to.
      const committed = await committedOpus();
      if (committed?.pkg !== pkg || committed.sha !== await sha256Hex(opus)) {
        console.error(`${OPUS_MODULE} is stale: run deno task wasm`);
        stale = true;
      } else console.log(`${OPUS_MODULE} matches ${pkg}`);
      if (stale) Deno.exit(1);
    } else {
      for (const { kernel, bytes, source } of kernels) {
        await Deno.writeTextFile(kernel.module, source);
        console.log(`wrote ${kernel.module} (${bytes.length} bytes of WebAssembly)`);
      }
      await Deno.writeTextFile(OPUS_MODULE, await opusModuleSource(pkg, opus));
      console.log(`wrote ${OPUS_MODULE} (${opus.length} bytes of WebAssembly from ${pkg})`);
    }
  } catch (err) {
    if (!(err instanceof ToolInputError)) throw err;
    console.error(`wasm: ${err.message}`);
    Deno.exit(2);
  }
}
