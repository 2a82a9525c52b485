/**
 * Small helpers of the capacity benchmark: percentiles over typed arrays, and a description of
 * the machine that degrades to `undefined` fields when the permissions to read it are missing.
 * @module
 */

/** Percentiles of a latency sample, in ms. */
export interface LatencySummary {
  p50: number;
  p99: number;
  p999: number;
  max: number;
  mean: number;
  samples: number;
}

/** Nearest-rank p-th percentile (0..100) of an ascending-sorted array. */
export function sortedPercentile(sorted: Float64Array, p: number): number {
  if (sorted.length === 0) return NaN;
  const rank = Math.ceil((p / 100) * sorted.length) - 1;
  return sorted[Math.min(sorted.length - 1, Math.max(0, rank))];
}

/** p50 / p99 / p99.9 / max / mean of `xs` (not modified), rounded to 1 µs. */
export function summarizeMs(xs: Float64Array): LatencySummary {
  const s = Float64Array.from(xs).sort();
  let sum = 0;
  for (let i = 0; i < s.length; i++) sum += s[i];
  const r = (v: number) => Math.round(v * 1000) / 1000;
  return {
    p50: r(sortedPercentile(s, 50)),
    p99: r(sortedPercentile(s, 99)),
    p999: r(sortedPercentile(s, 99.9)),
    max: r(s.length > 0 ? s[s.length - 1] : NaN),
    mean: r(s.length > 0 ? sum / s.length : NaN),
    samples: s.length,
  };
}

/** The machine a result was measured on. */
export interface MachineInfo {
  host: string;
  os: string;
  arch: string;
  cpus: number;
  cpu_model?: string;
  memory_bytes?: number;
}

/** Describe this machine; fields that need a missing permission are left out. */
export function machineInfo(): MachineInfo {
  const m: MachineInfo = {
    host: "unknown",
    os: Deno.build.os,
    arch: Deno.build.arch,
    cpus: navigator.hardwareConcurrency,
  };
  try {
    m.host = Deno.hostname();
  } catch { /* --allow-sys=hostname not granted */ }
  try {
    m.memory_bytes = Deno.systemMemoryInfo().total;
  } catch { /* --allow-sys=systemMemoryInfo not granted */ }
  try {
    const info = Deno.readTextFileSync("/proc/cpuinfo");
    const model = /^model name\s*:\s*(.+)$/m.exec(info);
    if (model) m.cpu_model = model[1].trim();
  } catch { /* not Linux, or --allow-read=/proc not granted */ }
  return m;
}
