import assert from "node:assert/strict";
import { spawnServer, writeBenchConfig } from "../bench/capacity_child.ts";
import { diffTallies, measureIdleHeap, tallyHeap } from "../bench/capacity_heap.ts";
import { closeCalls, type LoadCall, openCalls } from "../bench/capacity_load.ts";

/** A hand-made snapshot: two Foo objects, one closure, and a Generator suspended in `run`. */
function snapshot(foos: number): string {
  const strings = ["", "Foo", "cb", "Generator", "function", "run", "context"];
  const nodeFields = ["type", "name", "id", "self_size", "edge_count"];
  const types = ["hidden", "object", "closure", "string"];
  const nodes: number[] = [];
  const edges: number[] = [];
  for (let i = 0; i < foos; i++) nodes.push(1, 1, 10 + i, 40, 0);
  nodes.push(2, 2, 90, 32, 0); // closure "cb" (node index foos * 5)
  const closureAt = foos * nodeFields.length;
  nodes.push(2, 5, 91, 32, 0); // closure "run"
  nodes.push(1, 3, 92, 104, 1); // Generator with an internal "function" edge to "run"
  edges.push(1, 4, closureAt + nodeFields.length);
  return JSON.stringify({
    snapshot: {
      meta: {
        node_fields: nodeFields,
        node_types: [types],
        edge_fields: ["type", "name_or_index", "to_node"],
        edge_types: [["context", "internal"]],
      },
    },
    nodes,
    edges,
    strings,
  });
}

Deno.test("capacity heap: tallies bytes and counts per kind and suspended functions by name", () => {
  const t = tallyHeap(snapshot(2));
  assert.equal(t.bytes.get("Foo"), 80);
  assert.equal(t.count.get("Foo"), 2);
  assert.equal(t.bytes.get("closure cb"), 32);
  assert.equal(t.bytes.get("Generator"), 104);
  assert.deepEqual([...t.suspended], [["run", 1]]);
  const diff = diffTallies(t.bytes, tallyHeap(snapshot(12)).bytes, 10);
  assert.deepEqual(diff[0], ["Foo", 40], "ten more Foo of 40 bytes: 40 bytes per added unit");
  assert.ok(diff.slice(1).every(([, v]) => v === 0));
});

/** Suspended functions with a name are ours; Deno's internals show as `(anonymous)`. */
const ours = (name: string) => name !== "(anonymous)" && name !== "?";

Deno.test({
  name: "capacity heap: an idle carrier call keeps no function of ours suspended",
  // The server child and its snapshots: a few seconds.
  sanitizeResources: false,
  sanitizeOps: false,
  fn: async () => {
    const dir = "./.tmp/capacity_heap_test";
    const config = await writeBenchConfig(dir, 40);
    const child = await spawnServer({ configPath: config, writeDir: dir });
    const calls: LoadCall[] = [];
    try {
      const snap = async (n: number) => {
        calls.push(...(await openCalls([child.port], n - calls.length)).calls);
        await new Promise((r) => setTimeout(r, 300));
        await child.heap(`${dir}/${n}.heapsnapshot`);
        return tallyHeap(await Deno.readTextFile(`${dir}/${n}.heapsnapshot`)).suspended;
      };
      const a = await snap(10);
      const b = await snap(30);
      const perCall = diffTallies(a, b, 20).filter(([name, n]) => n >= 0.5 && ours(name));
      // Nothing of ours waits on an idle call: not the socket handler, CallManager.run or
      // PipelineTask.run (each a coroutine frame held for the call's minutes), not a parked
      // processor loop, not a model reader (the echo model pushes its events).
      assert.deepEqual(perCall, [], "suspended functions of ours per idle call");
    } finally {
      await closeCalls(calls);
      await child.stop();
    }
  },
});

Deno.test({
  name: "capacity heap: an idle carrier call costs less than 24 KB of V8 heap",
  // A server child and 100 calls: a few seconds.
  sanitizeResources: false,
  sanitizeOps: false,
  fn: async () => {
    // Calls 40 to 100 on a fresh server (the first ones pay one-time costs); about 17 KB on the
    // development VM, so the bound catches a regression of 40%, not the noise of a busy box.
    const r = await measureIdleHeap(40, 100, {
      dir: "./.tmp/capacity_heap_bound",
      snapshots: false,
    });
    const kb = (r.heap_used_bytes_per_call / 1024).toFixed(1);
    assert.ok(r.heap_used_bytes_per_call < 24 * 1024, `heap per idle call: ${kb} KB`);
    // A measurement that does not see the calls at all (no GC, calls not started) is no pass.
    assert.ok(r.heap_used_bytes_per_call > 4 * 1024, `heap per idle call: ${kb} KB`);
  },
});
