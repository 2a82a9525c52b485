/**
 * Who holds an idle call's bytes: builds a V8 heap snapshot's dominator tree (weak edges left
 * out) and charges every node's own size to its nearest dominator that is an instance of a named
 * class (a constructor other than the generic built-ins), so that a `WebSocket`'s listener arrays
 * and a `PipelineTask`'s options object count as theirs; what a GC root holds with no named class
 * on the way is charged to the top object, as `(top) <type> <name>`. {@link ownerBytes} tallies
 * one snapshot; `bench/capacity_heap.ts --owners` prints the difference per call between two.
 * @module
 */

interface Snapshot {
  snapshot: {
    meta: {
      node_fields: string[];
      node_types: [string[]];
      edge_fields: string[];
      edge_types: [string[]];
    };
  };
  nodes: number[];
  edges: number[];
  strings: string[];
}

/** Constructors too generic to name an owner: their bytes go to whoever dominates them. */
const GENERIC = new Set([
  "Object",
  "Array",
  "Map",
  "Set",
  "Promise",
  "Function",
  "Generator",
  "WeakMap",
  "WeakSet",
  "WeakRef",
  "Error",
  "DOMException",
  "ArrayBuffer",
  "Uint8Array",
  "Int16Array",
  "Float32Array",
  "Float64Array",
  "Int32Array",
  "Uint32Array",
]);

/** Bytes and node counts per owner, for one snapshot. */
export interface OwnerTally {
  bytes: Map<string, number>;
  count: Map<string, number>;
}

/** Immediate dominators of a graph given as CSR successor lists (node 0 is the root). */
export function dominators(n: number, firstEdge: Int32Array, targets: Int32Array): Int32Array {
  // Reverse postorder by iterative DFS.
  const order = new Int32Array(n).fill(-1); // node -> rpo index
  const post: number[] = [];
  const stack: number[] = [0];
  const next = new Int32Array(n);
  const seen = new Uint8Array(n);
  seen[0] = 1;
  for (let i = 0; i < n; i++) next[i] = firstEdge[i];
  while (stack.length > 0) {
    const v = stack[stack.length - 1];
    if (next[v] < firstEdge[v + 1]) {
      const w = targets[next[v]++];
      if (!seen[w]) {
        seen[w] = 1;
        stack.push(w);
      }
    } else {
      post.push(stack.pop()!);
    }
  }
  const rpo = post.reverse();
  rpo.forEach((v, i) => order[v] = i);
  // Predecessors of reachable nodes.
  const predCount = new Int32Array(n + 1);
  for (let v = 0; v < n; v++) {
    if (order[v] < 0) continue;
    for (let e = firstEdge[v]; e < firstEdge[v + 1]; e++) predCount[targets[e] + 1]++;
  }
  for (let i = 0; i < n; i++) predCount[i + 1] += predCount[i];
  const preds = new Int32Array(predCount[n]);
  const fill = predCount.slice(0, n);
  for (let v = 0; v < n; v++) {
    if (order[v] < 0) continue;
    for (let e = firstEdge[v]; e < firstEdge[v + 1]; e++) preds[fill[targets[e]]++] = v;
  }
  // Cooper, Harvey and Kennedy's iteration over the reverse postorder.
  const idom = new Int32Array(n).fill(-1);
  idom[0] = 0;
  const intersect = (a: number, b: number) => {
    while (a !== b) {
      while (order[a] > order[b]) a = idom[a];
      while (order[b] > order[a]) b = idom[b];
    }
    return a;
  };
  for (let changed = true; changed;) {
    changed = false;
    for (let i = 1; i < rpo.length; i++) {
      const v = rpo[i];
      let d = -1;
      for (let p = predCount[v]; p < predCount[v + 1]; p++) {
        const u = preds[p];
        if (idom[u] < 0) continue;
        d = d < 0 ? u : intersect(u, d);
      }
      if (d >= 0 && idom[v] !== d) {
        idom[v] = d;
        changed = true;
      }
    }
  }
  return idom;
}

/** Tally a heap snapshot's self sizes by owner: the nearest dominating named-class instance. */
export function ownerBytes(json: string): OwnerTally {
  const d = JSON.parse(json) as Snapshot;
  const meta = d.snapshot.meta;
  const nf = meta.node_fields.length;
  const ef = meta.edge_fields.length;
  const [T, N, S, E] = ["type", "name", "self_size", "edge_count"].map((f) =>
    meta.node_fields.indexOf(f)
  );
  const [ET, ETO] = ["type", "to_node"].map((f) => meta.edge_fields.indexOf(f));
  const types = meta.node_types[0];
  const weak = meta.edge_types[0].indexOf("weak");
  const n = d.nodes.length / nf;
  const firstEdge = new Int32Array(n + 1);
  const kept: number[] = [];
  let edge = 0;
  for (let v = 0; v < n; v++) {
    firstEdge[v] = kept.length;
    const count = d.nodes[v * nf + E];
    for (let j = 0; j < count; j++, edge += ef) {
      if (d.edges[edge + ET] !== weak) kept.push(d.edges[edge + ETO] / nf);
    }
  }
  firstEdge[n] = kept.length;
  const idom = dominators(n, firstEdge, Int32Array.from(kept));
  const label = new Array<string | undefined>(n);
  const named = (v: number): string | undefined => {
    if (types[d.nodes[v * nf + T]] !== "object") return undefined;
    const name = d.strings[d.nodes[v * nf + N]];
    if (GENERIC.has(name) || !/^[A-Z]/.test(name) || name.startsWith("system")) return undefined;
    return name;
  };
  // Held from a GC root with no named class on the way (module scopes, the runtime's own
  // tables): named by that top object, without the snapshot-specific `@id` of scopes.
  const topLabel = (u: number) =>
    `(top) ${types[d.nodes[u * nf + T]]} ${
      d.strings[d.nodes[u * nf + N]].replace(/ @\d+$/, "").slice(0, 60)
    }`;
  const ownerOf = (v: number): string => {
    const path: number[] = [];
    let u = v;
    while (label[u] === undefined) {
      const own = named(u);
      if (
        own !== undefined || u === 0 || idom[u] < 0 ||
        types[d.nodes[idom[u] * nf + T]] === "synthetic"
      ) {
        label[u] = own ?? (idom[u] < 0 ? "(unreachable)" : u === 0 ? "(root)" : topLabel(u));
        break;
      }
      path.push(u);
      u = idom[u];
    }
    for (const p of path) label[p] = label[u];
    return label[u]!;
  };
  const out: OwnerTally = { bytes: new Map(), count: new Map() };
  for (let v = 0; v < n; v++) {
    const own = ownerOf(v);
    out.bytes.set(own, (out.bytes.get(own) ?? 0) + d.nodes[v * nf + S]);
    out.count.set(own, (out.count.get(own) ?? 0) + 1);
  }
  return out;
}
