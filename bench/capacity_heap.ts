/**
 * Where an idle call's memory goes: starts the capacity server child, opens `--from` idle calls
 * (Twilio `start` sent, no audio), takes a V8 heap snapshot, opens more up to `--to`, takes
 * another, and prints the difference per object kind divided by the calls added (the numbers
 * docs/performance.md quotes under "Memory and tasks per idle call"), plus the suspended async
 * functions per call by name.
 *
 * ```sh
 * deno run --allow-run=deno --allow-net=127.0.0.1 --allow-read=. --allow-write=./.tmp \
 *   bench/capacity_heap.ts --from 100 --to 400
 * ```
 * @module
 */

import { parseArgs } from "node:util";
import { spawnServer, writeBenchConfig } from "./capacity_child.ts";
import { closeCalls, type LoadCall, openCalls } from "./capacity_load.ts";

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

if (import.meta.main) {
  const { values } = parseArgs({
    args: Deno.args,
    options: { from: { type: "string", default: "100" }, to: { type: "string", default: "400" } },
  });
  const from = Number(values.from);
  const to = Number(values.to);
  if (!(Number.isInteger(from) && Number.isInteger(to) && from > 0 && to > from)) {
    console.error("capacity_heap: --from and --to must be whole numbers with 0 < from < to");
    Deno.exit(2);
  }
  const config = await writeBenchConfig("./.tmp/capacity_heap", to + 10);
  const child = await spawnServer({ configPath: config, writeDir: "./.tmp/capacity_heap" });
  const calls: LoadCall[] = [];
  const snap = async (n: number) => {
    const opened = await openCalls([child.port], n - calls.length);
    calls.push(...opened.calls);
    await new Promise((r) => setTimeout(r, 500));
    const path = `./.tmp/capacity_heap/${n}.heapsnapshot`;
    console.error(`capacity_heap: ${calls.length} idle calls, snapshot ${path}`);
    await child.heap(path);
    return tallyHeap(await Deno.readTextFile(path));
  };
  const a = await snap(from);
  const b = await snap(to);
  await closeCalls(calls);
  await child.stop();
  const per = to - from;
  const bytes = diffTallies(a.bytes, b.bytes, per);
  const total = bytes.reduce((s, [, v]) => s + v, 0);
  console.log(`heap per idle call: ${Math.round(total)} B (snapshot diff, ${from} -> ${to} calls)`);
  const counts = new Map(diffTallies(a.count, b.count, per));
  for (const [k, v] of bytes.slice(0, 25)) {
    console.log(`${Math.round(v).toString().padStart(7)} B  ${counts.get(k)?.toFixed(1)}x  ${k}`);
  }
  console.log("suspended async functions per call:");
  for (const [k, v] of diffTallies(a.suspended, b.suspended, per).filter(([, v]) => v > 0.05)) {
    console.log(`  ${v.toFixed(2)}  ${k}`);
  }
}
