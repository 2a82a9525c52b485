/**
 * Where an idle call's memory goes: starts the capacity server child, opens `--from` idle calls
 * (answer webhook, media socket, Twilio `connected` and `start` sent, so each call's pipeline
 * has started; no audio), takes a V8 heap snapshot, opens more up to `--to`, takes another, and
 * prints per call added: the V8 `heapUsed` difference after forced GC (the headline figure), the
 * snapshot difference per object kind, and with `--owners` per owner (the nearest dominating
 * instance of a named class, bench/heap_owners.ts); plus the suspended async functions per call.
 * `--runs N` repeats it on fresh server children and reports the median; `--out` writes JSON.
 *
 * ```sh
 * deno run --allow-run=deno --allow-net=127.0.0.1 --allow-read=. \
 *   --allow-write=./.tmp,./bench/results bench/capacity_heap.ts --from 400 --to 700 --runs 3 \
 *   --owners --out bench/results/idle-heap-vm.json
 * ```
 * @module
 */

import { parseArgs } from "node:util";
import { spawnServer, writeBenchConfig } from "./capacity_child.ts";
import { closeCalls, type LoadCall, openCalls } from "./capacity_load.ts";
import { ownerBytes } from "./heap_owners.ts";

/** Bytes and counts per object kind in one snapshot; Generator objects also by function. */
export interface HeapTally {
  bytes: Map<string, number>;
  count: Map<string, number>;
  suspended: Map<string, number>;
}

interface Snapshot {
  snapshot: { meta: { node_fields: string[]; node_types: [string[]]; edge_fields: string[] } };
  nodes: number[];
  edges: number[];
  strings: string[];
}

const NAMED = new Set(["object", "closure", "native", "hidden", "code"]);

/** Tally a heap snapshot's nodes by kind (constructor or closure name, else the node type). */
export function tallyHeap(json: string): HeapTally {
  const d = JSON.parse(json) as Snapshot;
  const nf = d.snapshot.meta.node_fields;
  const types = d.snapshot.meta.node_types[0];
  const ef = d.snapshot.meta.edge_fields;
  const [T, N, S, E] = ["type", "name", "self_size", "edge_count"].map((f) => nf.indexOf(f));
  const [ET, EN, ETO] = ["type", "name_or_index", "to_node"].map((f) => ef.indexOf(f));
  const edgeTypes = (d.snapshot.meta as unknown as { edge_types: [string[]] }).edge_types[0];
  const out: HeapTally = { bytes: new Map(), count: new Map(), suspended: new Map() };
  const add = (m: Map<string, number>, k: string, v: number) => m.set(k, (m.get(k) ?? 0) + v);
  let edge = 0;
  for (let i = 0; i < d.nodes.length; i += nf.length) {
    const type = types[d.nodes[i + T]];
    const name = d.strings[d.nodes[i + N]];
    const key = NAMED.has(type) ? (type === "closure" ? `closure ${name}` : name) : type;
    add(out.bytes, key.slice(0, 70), d.nodes[i + S]);
    add(out.count, key.slice(0, 70), 1);
    const edges = d.nodes[i + E];
    if (type === "object" && name === "Generator") {
      let fn = "?";
      for (let j = edge; j < edge + edges * ef.length; j += ef.length) {
        const et = edgeTypes[d.edges[j + ET]];
        if (et === "internal" && d.strings[d.edges[j + EN]] === "function") {
          fn = d.strings[d.nodes[d.edges[j + ETO] + N]] || "(anonymous)";
        }
      }
      add(out.suspended, fn, 1);
    }
    edge += edges * ef.length;
  }
  return out;
}

/** `b - a` per kind, divided by `per`, largest first. */
export function diffTallies(
  a: Map<string, number>,
  b: Map<string, number>,
  per: number,
): [string, number][] {
  return [...b].map(([k, v]) => [k, (v - (a.get(k) ?? 0)) / per] as [string, number])
    .sort((x, y) => y[1] - x[1]);
}

/** One measurement of {@link measureIdleHeap}: bytes per idle call added. */
export interface IdleHeapRun {
  /** V8 heapUsed after forced GC (the server child's `stats`), difference per call. */
  heap_used_bytes_per_call: number;
  /** Sum of the snapshot's self sizes, difference per call (NaN without snapshots). */
  snapshot_bytes_per_call: number;
  /** Largest kinds (constructor, closure or V8 type): [kind, bytes, count] per call. */
  kinds: [string, number, number][];
  /** Largest owners (with `owners`): [owner, bytes, count] per call. */
  owners?: [string, number, number][];
  /** Suspended async functions per call, by name. */
  suspended: [string, number][];
}

const round1 = (x: number) => Math.round(x * 10) / 10;

const emptyTally = (): HeapTally => ({ bytes: new Map(), count: new Map(), suspended: new Map() });

/** Rows of `b - a` per call, largest first, with counts, `top` of them. */
function rows(
  a: { bytes: Map<string, number>; count: Map<string, number> },
  b: { bytes: Map<string, number>; count: Map<string, number> },
  per: number,
  top: number,
): [string, number, number][] {
  const counts = new Map(diffTallies(a.count, b.count, per));
  return diffTallies(a.bytes, b.bytes, per).slice(0, top)
    .map(([k, v]) => [k, Math.round(v), round1(counts.get(k) ?? 0)]);
}

/** Open `from` then `to` idle calls on a fresh server child and measure the calls added. */
export async function measureIdleHeap(
  from: number,
  to: number,
  opts: { owners?: boolean; dir?: string; snapshots?: boolean } = {},
): Promise<IdleHeapRun> {
  const dir = opts.dir ?? "./.tmp/capacity_heap";
  const config = await writeBenchConfig(dir, to + 10);
  const child = await spawnServer({ configPath: config, writeDir: dir });
  const calls: LoadCall[] = [];
  try {
    const snap = async (n: number) => {
      const opened = await openCalls([child.port], n - calls.length);
      calls.push(...opened.calls);
      if (calls.length !== n) throw new Error(`capacity_heap: only ${calls.length} of ${n} calls`);
      // Every call past its start (its pipeline running) before the heap is read.
      for (let i = 0; i < 100 && (await child.stats()).activeCalls < n; i++) {
        await new Promise((r) => setTimeout(r, 50));
      }
      await new Promise((r) => setTimeout(r, 300));
      const stats = await child.stats();
      if (!stats.gc) throw new Error("capacity_heap: the server child cannot force GC");
      if (opts.snapshots === false) {
        return { heapUsed: stats.heapUsed, kinds: emptyTally(), owners: undefined };
      }
      const path = `${dir}/${n}.heapsnapshot`;
      console.error(`capacity_heap: ${calls.length} idle calls, snapshot ${path}`);
      await child.heap(path);
      const json = await Deno.readTextFile(path);
      return {
        heapUsed: stats.heapUsed,
        kinds: tallyHeap(json),
        owners: opts.owners ? ownerBytes(json) : undefined,
      };
    };
    const a = await snap(from);
    const b = await snap(to);
    const per = to - from;
    const bytes = diffTallies(a.kinds.bytes, b.kinds.bytes, per);
    return {
      heap_used_bytes_per_call: Math.round((b.heapUsed - a.heapUsed) / per),
      snapshot_bytes_per_call: opts.snapshots === false
        ? NaN
        : Math.round(bytes.reduce((s, [, v]) => s + v, 0)),
      kinds: rows(a.kinds, b.kinds, per, 25),
      ...(a.owners && b.owners ? { owners: rows(a.owners, b.owners, per, 40) } : {}),
      suspended: diffTallies(a.kinds.suspended, b.kinds.suspended, per)
        .filter(([, v]) => v > 0.05).map(([k, v]) => [k, round1(v)]),
    };
  } finally {
    await closeCalls(calls);
    await child.stop();
  }
}

if (import.meta.main) {
  const { values } = parseArgs({
    args: Deno.args,
    options: {
      from: { type: "string", default: "100" },
      to: { type: "string", default: "400" },
      runs: { type: "string", default: "1" },
      owners: { type: "boolean", default: false },
      out: { type: "string" },
    },
  });
  const from = Number(values.from);
  const to = Number(values.to);
  const runs = Number(values.runs);
  if (!(Number.isInteger(from) && Number.isInteger(to) && from > 0 && to > from)) {
    console.error("capacity_heap: --from and --to must be whole numbers with 0 < from < to");
    Deno.exit(2);
  }
  if (!(Number.isInteger(runs) && runs >= 1)) {
    console.error("capacity_heap: --runs must be a whole number of at least 1");
    Deno.exit(2);
  }
  const results: IdleHeapRun[] = [];
  for (let i = 0; i < runs; i++) results.push(await measureIdleHeap(from, to, values));
  const median = (xs: number[]) => [...xs].sort((x, y) => x - y)[Math.floor(xs.length / 2)];
  const heapUsed = results.map((r) => r.heap_used_bytes_per_call);
  const snapshot = results.map((r) => r.snapshot_bytes_per_call);
  const last = results[results.length - 1];
  console.log(
    `heap per idle call (${from} -> ${to} calls, ${runs} run(s)): heapUsed median ` +
      `${median(heapUsed)} B [${heapUsed.join(", ")}], snapshot median ${median(snapshot)} B`,
  );
  for (const [k, v, n] of last.kinds) console.log(`${String(v).padStart(7)} B  ${n}x  ${k}`);
  if (last.owners) {
    console.log("by owner (nearest dominating named-class instance):");
    for (const [k, v, n] of last.owners) console.log(`${String(v).padStart(7)} B  ${n}x  ${k}`);
  }
  console.log("suspended async functions per call:");
  for (const [k, v] of last.suspended) console.log(`  ${v.toFixed(2)}  ${k}`);
  if (values.out !== undefined) {
    const result = {
      bench: "idle call heap (bench/capacity_heap.ts)",
      command: `deno run --allow-run=deno --allow-net=127.0.0.1 --allow-read=. ` +
        `--allow-write=./.tmp,./bench/results bench/capacity_heap.ts ${Deno.args.join(" ")}`,
      date: new Date().toISOString(),
      deno: Deno.version,
      definition: "a carrier call: signed answer webhook, media WebSocket, Twilio connected and " +
        "start sent, its pipeline started (the server counts it active), no audio; forced GC; " +
        `V8 heapUsed with ${to} calls minus with ${from}, divided by ${to - from}`,
      from,
      to,
      runs,
      heap_used_bytes_per_call: { median: median(heapUsed), all: heapUsed },
      snapshot_bytes_per_call: { median: median(snapshot), all: snapshot },
      last_run: last,
    };
    await Deno.writeTextFile(values.out, JSON.stringify(result, null, 2) + "\n");
  }
}
