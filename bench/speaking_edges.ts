/**
 * How often the output transport stops and restarts the bot's speech when its audio arrives at
 * real time, as an echo's does in the capacity bench: `--calls` outputs, each fed one 20 ms chunk
 * every 20 ms by one timer (with up to 6 ms of busy work per tick, as a loaded thread adds), for
 * `--ms`; counts the BotStartedSpeaking frames per chunk. Each one is a stop and a start broadcast
 * through the whole pipeline. `--compare DIR` runs another checkout's output the same way (e.g.
 * `git archive <commit> | tar -x -C .tmp/base`).
 *
 * ```sh
 * deno run --allow-read=. bench/speaking_edges.ts --compare .tmp/base
 * ```
 * @module
 */

import { parseArgs } from "node:util";
import { resolve } from "node:path";
import { pathToFileURL } from "node:url";

/** What one run counted. */
export interface EdgeCount {
  /** Chunks fed to all outputs. */
  chunks: number;
  /** BotStartedSpeaking frames that reached the sink. */
  starts: number;
}

/** Feed `calls` outputs of the checkout at `root` (a file URL ending in /) for `ms`. */
export async function countEdges(root: string, calls: number, ms: number): Promise<EdgeCount> {
  const { makeFrame } = await import(`${root}core/frames.ts`);
  const { FrameProcessor } = await import(`${root}core/processor.ts`);
  const { Pipeline } = await import(`${root}core/pipeline.ts`);
  const { PipelineTask } = await import(`${root}core/task.ts`);
  const { TransportOutput } = await import(`${root}core/processors/transport.ts`);
  const { silentLogger } = await import(`${root}core/log.ts`);
  const leg = () => ({
    recv: () => new Promise<undefined>(() => {}),
    sendAudio: () => Promise.resolve(),
    sendClear: () => Promise.resolve(),
    carrierRate: () => 8000,
  });
  // deno-lint-ignore no-explicit-any
  const links: any[] = [];
  // deno-lint-ignore no-explicit-any
  const tasks: any[] = [];
  const count: EdgeCount = { chunks: 0, starts: 0 };
  for (let c = 0; c < calls; c++) {
    class Driver extends FrameProcessor {
      // deno-lint-ignore no-explicit-any
      start(_s: unknown, _p: unknown, link: any) {
        links.push(link);
      }
    }
    const task = new PipelineTask(new Pipeline([new Driver(), new TransportOutput(leg())]), {
      idleTimeoutMs: null,
      logger: silentLogger,
    });
    task.onFrameReachedDownstream(["BotStartedSpeaking"], () => void count.starts++);
    tasks.push(task);
    void task.run();
  }
  while (links.length < calls) await new Promise((r) => setTimeout(r, 10));
  const t0 = performance.now();
  await new Promise<void>((done) => {
    const timer = setInterval(() => {
      for (const link of links) {
        const audio = { pcm: new Int16Array(160), sampleRate: 8000, numChannels: 1 };
        link.pushDown(makeFrame("TtsAudio", { audio }));
        count.chunks++;
      }
      const busyUntil = performance.now() + Math.random() * 6;
      while (performance.now() < busyUntil) { /* a loaded thread */ }
      if (performance.now() - t0 >= ms) {
        clearInterval(timer);
        done();
      }
    }, 20);
  });
  for (const task of tasks) await task.cancel();
  return count;
}

if (import.meta.main) {
  const { values } = parseArgs({
    args: Deno.args,
    options: {
      calls: { type: "string", default: "50" },
      ms: { type: "string", default: "4000" },
      compare: { type: "string" },
    },
  });
  const calls = Number(values.calls);
  const ms = Number(values.ms);
  const roots: [string, string][] = [["this checkout", new URL("../", import.meta.url).href]];
  if (values.compare !== undefined) {
    roots.push([values.compare, pathToFileURL(resolve(values.compare) + "/").href]);
  }
  for (const [name, root] of roots) {
    const c = await countEdges(root, calls, ms);
    console.log(
      `${name}: ${c.chunks} chunks, ${c.starts} BotStartedSpeaking ` +
        `(${(c.starts / c.chunks).toFixed(3)} per chunk)`,
    );
  }
  Deno.exit(0);
}
