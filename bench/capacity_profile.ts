/**
 * Summarise a V8 `.cpuprofile` (what `deno run --cpu-prof` writes): self time per function,
 * inclusive time per function, and self time per file, as percentages of the profile's busy
 * (non-idle) time.
 *
 * ```sh
 * deno run --allow-read=. bench/capacity_profile.ts .tmp/capacity/prof-*\/CPU.*.cpuprofile
 * ```
 * @module
 */

/** The parts of a V8 CPU profile read here. */
export interface CpuProfile {
  nodes: {
    id: number;
    callFrame: { functionName: string; url: string; lineNumber: number; columnNumber: number };
    children?: number[];
  }[];
  startTime: number;
  endTime: number;
  samples: number[];
  timeDeltas: number[];
}

/** One function's share. */
export interface ProfileRow {
  fn: string;
  where: string;
  ms: number;
  /** Percent of busy time (all samples but `(idle)`). */
  pct: number;
}

/** What {@link profileSummary} reports. */
export interface ProfileSummary {
  wall_ms: number;
  busy_ms: number;
  idle_pct_of_wall: number;
  gc_pct: number;
  top_self: ProfileRow[];
  top_inclusive: ProfileRow[];
  by_file: { file: string; pct: number }[];
}

/** Shorten a module URL to a repo-relative path or a runtime label. */
export function shortUrl(url: string): string {
  if (url === "") return "(native)";
  const repo = /\/(core|server|telephony|providers|transports|bench|node_modules)\/(.+)$/.exec(url);
  if (repo) return `${repo[1]}/${repo[2]}`;
  if (url.startsWith("ext:")) return url;
  return url.replace(/^file:\/\/.*\//, "");
}

/** Summarise `profile`; `top` rows per table. */
export function profileSummary(profile: CpuProfile, top = 25): ProfileSummary {
  const byId = new Map(profile.nodes.map((n) => [n.id, n]));
  const self = new Map<number, number>();
  let wall = 0;
  for (let i = 0; i < profile.samples.length; i++) {
    const dt = profile.timeDeltas[i] ?? 0;
    wall += dt;
    self.set(profile.samples[i], (self.get(profile.samples[i]) ?? 0) + dt);
  }
  const keyOf = (id: number) => {
    const f = byId.get(id)!.callFrame;
    return `${f.functionName || "(anonymous)"}\t${shortUrl(f.url)}:${f.lineNumber + 1}`;
  };
  const selfByKey = new Map<string, number>();
  const byFile = new Map<string, number>();
  let idle = 0;
  let gc = 0;
  for (const [id, us] of self) {
    const name = byId.get(id)!.callFrame.functionName;
    if (name === "(idle)") {
      idle += us;
      continue;
    }
    if (name === "(garbage collector)") gc += us;
    const k = keyOf(id);
    selfByKey.set(k, (selfByKey.get(k) ?? 0) + us);
    const file = k.split("\t")[1].replace(/:\d+$/, "");
    byFile.set(file, (byFile.get(file) ?? 0) + us);
  }
  const busy = wall - idle;
  // Inclusive time: self time of every node below, each key counted once per stack.
  const incl = new Map<string, number>();
  const onStack = new Map<string, number>();
  const subtree = (id: number): number => {
    const n = byId.get(id)!;
    const k = keyOf(id);
    let t = n.callFrame.functionName === "(idle)" ? 0 : self.get(id) ?? 0;
    onStack.set(k, (onStack.get(k) ?? 0) + 1);
    for (const c of n.children ?? []) t += subtree(c);
    onStack.set(k, onStack.get(k)! - 1);
    if (onStack.get(k) === 0) incl.set(k, (incl.get(k) ?? 0) + t);
    return t;
  };
  const childIds = new Set(profile.nodes.flatMap((n) => n.children ?? []));
  for (const n of profile.nodes) if (!childIds.has(n.id)) subtree(n.id);
  const pct = (us: number) => Math.round((us / Math.max(1, busy)) * 1000) / 10;
  const rows = (m: Map<string, number>, keep: (k: string) => boolean) =>
    [...m].filter(([k]) => keep(k)).sort((a, b) => b[1] - a[1]).slice(0, top).map(([k, us]) => {
      const [fn, where] = k.split("\t");
      return { fn, where, ms: Math.round(us / 100) / 10, pct: pct(us) };
    });
  const structural = /^\((root|program|idle)\)/;
  return {
    wall_ms: Math.round(wall / 1000),
    busy_ms: Math.round(busy / 1000),
    idle_pct_of_wall: Math.round((idle / Math.max(1, wall)) * 1000) / 10,
    gc_pct: pct(gc),
    top_self: rows(selfByKey, () => true),
    top_inclusive: rows(incl, (k) => !structural.test(k)),
    by_file: [...byFile].sort((a, b) => b[1] - a[1]).slice(0, top)
      .map(([file, us]) => ({ file, pct: pct(us) })),
  };
}

/** Plain-text tables of a summary. */
export function formatProfile(s: ProfileSummary): string {
  const lines = [
    `wall ${s.wall_ms} ms, busy ${s.busy_ms} ms (idle ${s.idle_pct_of_wall}% of wall), ` +
    `GC ${s.gc_pct}% of busy`,
    "",
    "self time (% of busy):",
    ...s.top_self.map((r) => `  ${r.pct.toFixed(1).padStart(5)}%  ${r.fn}  ${r.where}`),
    "",
    "inclusive time (% of busy):",
    ...s.top_inclusive.map((r) => `  ${r.pct.toFixed(1).padStart(5)}%  ${r.fn}  ${r.where}`),
    "",
    "self time by file:",
    ...s.by_file.map((r) => `  ${r.pct.toFixed(1).padStart(5)}%  ${r.file}`),
  ];
  return lines.join("\n");
}

if (import.meta.main) {
  for (const path of Deno.args) {
    console.log(
      `${path}\n${formatProfile(profileSummary(JSON.parse(Deno.readTextFileSync(path))))}`,
    );
  }
}
