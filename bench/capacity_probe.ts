/**
 * SO_REUSEPORT probe: can two agent-server processes share one port (`Deno.serve` with
 * `reusePort: true`), and what happens to carrier calls when they do? The answer webhook
 * creates the run (and its call token) in the memory of whichever process answered; the media
 * socket is a new TCP connection the kernel may hand to the other process, which does not know
 * the token and refuses it with 401.
 * @module
 */

import { type ServerChild, spawnServer } from "./capacity_child.ts";
import { closeCalls, openCalls } from "./capacity_load.ts";

/** What the probe found. */
export interface ReusePortProbe {
  processes: number;
  both_listening: boolean;
  port?: number;
  calls: number;
  opened: number;
  refused: number;
  refusals: Record<string, number>;
  /** Calls each process ended up serving. */
  active_per_process: number[];
  note: string;
}

/** Start `processes` children on one port with SO_REUSEPORT and open `calls` calls. */
export async function probeReusePort(
  configPath: string,
  calls: number,
  processes = 2,
): Promise<ReusePortProbe> {
  const children: ServerChild[] = [];
  try {
    const first = await spawnServer({ configPath, port: 0, reusePort: true });
    children.push(first);
    for (let i = 1; i < processes; i++) {
      children.push(await spawnServer({ configPath, port: first.port, reusePort: true }));
    }
    const { calls: open, refused } = await openCalls([first.port], calls, 4);
    await new Promise((r) => setTimeout(r, 300));
    const stats = await Promise.all(children.map((c) => c.stats()));
    await closeCalls(open);
    const refusals: Record<string, number> = {};
    for (const r of refused) refusals[r] = (refusals[r] ?? 0) + 1;
    return {
      processes,
      both_listening: children.every((c) => c.port === first.port),
      port: first.port,
      calls,
      opened: open.length,
      refused: refused.length,
      refusals,
      active_per_process: stats.map((s) => s.activeCalls),
      note: "runs and call tokens live in one process's memory: a media socket the kernel " +
        "hands to another process is refused (401). Sharing a port needs stateless call " +
        "tokens (telephony/security.ts signCallToken / verifyCallToken) and a run record any " +
        "process can rebuild from the token.",
    };
  } finally {
    for (const c of children) await c.stop();
  }
}
