/**
 * The carrier leg's own work per 20 ms frame, in one process: a Twilio media message through
 * `WsMediaTransport` (push mode) and `TransportInput` (mu-law decode, 8 -> 16 kHz) to a sink, and
 * a 24 kHz reply frame through `sendAudio` (24 -> 8 kHz, mu-law, base64, the JSON text) to a fake
 * socket. No sockets, no event loop: what is left is our CPU and the garbage it makes.
 *
 * With `--compare DIR` (another checkout of the repository, e.g. a `git archive` of the commit
 * before a change) it loads both versions into this process and times them in alternating rounds,
 * so the ratio of each pair is measured seconds apart on the same (shared) machine. It also
 * reports the bytes each version allocates per frame (needs `--expose-gc`), which the machine's
 * load does not move.
 *
 * ```sh
 * deno run --v8-flags=--expose-gc,--min-semi-space-size=64,--max-semi-space-size=64 \
 *   --allow-read=. --allow-write=./bench/results --allow-sys=hostname,loadavg,systemMemoryInfo \
 *   bench/carrier_path.ts [--compare .tmp/base] [--frames 50000] [--rounds 8] [--out file]
 * ```
 * @module
 */

import { parseArgs } from "node:util";
import { machineInfo } from "./capacity_stats.ts";
import type * as Flowcat from "../mod.ts";

/**
 * V8 heap bytes allocated per frame, one way of the leg. Array buffer stores (320 bytes for 160
 * samples) are off the heap and not in this figure; Deno's `external` does not count them.
 */
interface Allocation {
  heap: number;
}

const gc = (globalThis as { gc?: () => void }).gc;

/**
 * Bytes `run` allocates per frame: heap growth over a short batch after a forced
 * GC, with a young generation large enough that no collection runs inside the batch (then the
 * growth is what was allocated). Deterministic, unlike time on a shared machine.
 */
function allocationPerFrame(run: (frames: number) => unknown, frames = 5000): Allocation {
  if (gc === undefined) return { heap: NaN };
  const samples: Allocation[] = [];
  for (let k = 0; k < 5; k++) {
    gc();
    const m0 = Deno.memoryUsage();
    run(frames);
    const m1 = Deno.memoryUsage();
    samples.push({ heap: (m1.heapUsed - m0.heapUsed) / frames });
  }
  // A batch that a collection interrupted reads low; the median of five ignores one or two.
  return { heap: median(samples.map((s) => s.heap)) };
}

interface Version {
  /** Nanoseconds per inbound message, one value per round. */
  inbound: number[];
  /** Nanoseconds per outbound frame, one value per round. */
  outbound: number[];
}

/** The inbound and outbound legs of one checkout, ready to be driven. */
interface Rig {
  inbound(frames: number): number;
  outbound(frames: number): number;
  stop(): void;
}

async function rigFor(root: string): Promise<Rig> {
  const base = new URL(root.endsWith("/") ? root : root + "/", `file://${Deno.cwd()}/`);
  const mod: typeof Flowcat = await import(new URL("mod.ts", base).href);
  const { TransportInput } = await import(new URL("core/processors/transport.ts", base).href);
  const { WsMediaTransport } = await import(new URL("telephony/ws_transport.ts", base).href);
  const { createSerializer } = await import(new URL("telephony/serializers/mod.ts", base).href);
  const { ulawEncode } = await import(new URL("core/audio/g711.ts", base).href);

  let push: ((m: unknown) => void) | undefined;
  let sentChars = 0;
  const socket = {
    recv: () => new Promise(() => {}),
    listen(fn: (m: unknown) => void) {
      push = fn;
    },
    sendText(t: string) {
      sentChars += t.length;
      return Promise.resolve();
    },
    sendBinary: () => Promise.resolve(),
  };
  const start = JSON.stringify({
    event: "start",
    streamSid: "MZ1",
    start: { callSid: "CA1", streamSid: "MZ1" },
  });
  const inbox = [{ type: "text", data: start }];
  // Messages arrive back to back here: a clock that moves 20 ms per message keeps them real time.
  let clock = 0;
  const t = new WsMediaTransport(
    { ...socket, recv: () => Promise.resolve(inbox.shift()) },
    createSerializer("twilio"),
    { now: () => (clock += 20) },
  );
  await t.waitForStart();
  let received = 0;
  class Sink extends mod.FrameProcessor {
    override processFrame(f: Flowcat.Frame, d: Flowcat.Direction, l: Flowcat.Link): void {
      if (f.kind === "InputAudio") received++;
      else l.push(f, d);
    }
  }
  const task = new mod.PipelineTask(new mod.Pipeline([new TransportInput(t), new Sink("sink")]), {
    idleTimeoutMs: null,
  });
  const running = task.run();
  // TransportInput listens one macrotask after Start.
  while (push === undefined) await new Promise((r) => setTimeout(r, 1));

  // A voice-like level, so mu-law codes vary.
  const pcm = new Int16Array(160);
  for (let i = 0; i < pcm.length; i++) pcm[i] = Math.round(8000 * Math.sin(i / 3));
  const payload = ulawEncode(pcm).toBase64();
  const media = {
    type: "text",
    data: `{"event":"media","sequenceNumber":"1","media":{"track":"inbound","chunk":"1",` +
      `"timestamp":"20","payload":"${payload}"},"streamSid":"MZ1"}`,
  };
  const reply = new Int16Array(480);
  for (let i = 0; i < reply.length; i++) reply[i] = Math.round(6000 * Math.sin(i / 5));

  return {
    inbound(frames: number): number {
      const before = received;
      const t0 = performance.now();
      for (let i = 0; i < frames; i++) push!(media);
      const ns = ((performance.now() - t0) * 1e6) / frames;
      if (received - before !== frames) throw new Error(`${root}: ${received - before} frames`);
      return ns;
    },
    outbound(frames: number): number {
      const t0 = performance.now();
      for (let i = 0; i < frames; i++) {
        t.sendAudio({ pcm: reply.slice(), sampleRate: 24000, numChannels: 1 });
      }
      const ns = ((performance.now() - t0) * 1e6) / frames;
      if (sentChars === 0) throw new Error(`${root}: nothing sent`);
      return ns;
    },
    stop() {
      push!({ type: "text", data: '{"event":"stop"}' });
      void running;
    },
  };
}

function median(v: number[]): number {
  const s = [...v].sort((a, b) => a - b);
  return s.length % 2 ? s[s.length >> 1] : (s[s.length / 2 - 1] + s[s.length / 2]) / 2;
}

const args = parseArgs({
  args: Deno.args,
  options: {
    compare: { type: "string" },
    frames: { type: "string", default: "50000" },
    rounds: { type: "string", default: "8" },
    out: { type: "string" },
  },
});
const frames = Number(args.values.frames);
const rounds = Number(args.values.rounds);
const roots = args.values.compare === undefined ? ["."] : [args.values.compare, "."];
const rigs = await Promise.all(roots.map(rigFor));
const results: Version[] = roots.map(() => ({ inbound: [], outbound: [] }));
for (const rig of rigs) rig.inbound(frames), rig.outbound(frames); // warm-up
const load: number[] = [];
for (let r = 0; r < rounds; r++) {
  load.push(Deno.loadavg()[0]);
  // Alternate which version goes first, so a drift within a round favours neither.
  const order = r % 2 === 0 ? rigs.map((_, i) => i) : rigs.map((_, i) => rigs.length - 1 - i);
  for (const i of order) {
    results[i].inbound.push(rigs[i].inbound(frames));
    results[i].outbound.push(rigs[i].outbound(frames));
  }
}

const allocation = rigs.map((rig) => ({
  inbound_bytes_per_frame: allocationPerFrame((n) => rig.inbound(n)),
  outbound_bytes_per_frame: allocationPerFrame((n) => rig.outbound(n)),
}));
for (const rig of rigs) rig.stop();

const summary = roots.map((root, i) => ({
  root,
  ...allocation[i],
  inbound_ns_per_frame: { median: median(results[i].inbound), values: results[i].inbound },
  outbound_ns_per_frame: { median: median(results[i].outbound), values: results[i].outbound },
}));
const ratios = rigs.length === 2
  ? {
    inbound_new_over_base: median(results[1].inbound.map((v, k) => v / results[0].inbound[k])),
    outbound_new_over_base: median(results[1].outbound.map((v, k) => v / results[0].outbound[k])),
  }
  : undefined;
const report = {
  command: `deno run ... bench/carrier_path.ts ${Deno.args.join(" ")}`,
  machine: machineInfo(),
  deno: Deno.version.deno,
  date: new Date().toISOString(),
  load_average_1m: load,
  frames_per_round: frames,
  rounds,
  versions: summary,
  ratios_median_of_pairs: ratios,
};
console.log(JSON.stringify(report, null, 2));
if (args.values.out !== undefined) {
  await Deno.writeTextFile(args.values.out, JSON.stringify(report, null, 2) + "\n");
}
Deno.exit(0);
