/** Test helpers: an agent server that transfers calls, and what a transferred call left behind. */

import assert from "node:assert/strict";
import { type LogRecord, memoryLogger } from "../core/log.ts";
import { type AgentServer, createAgentServer } from "../server/app.ts";
import { parseConfigText } from "../server/config.ts";
import { until } from "./_core_helpers.ts";
import { pinnedTransferGraph } from "./_graph_fixture.ts";
import { echoSipTrunkConfig } from "./_sipp.ts";

/**
 * An agent server with the echo model behind a SIP trunk on 127.0.0.1:`sipPort`, running a
 * graph whose transfer_call is pinned to `target`, with `extra` top-level config sections; its
 * logs go to `logs`.
 */
export async function echoTransferServer(
  target: string,
  sipPort: number,
  extra: Record<string, unknown> = {},
): Promise<{ app: AgentServer; logs: LogRecord[] }> {
  const config = { ...echoSipTrunkConfig(pinnedTransferGraph(target), sipPort), ...extra };
  const r = await parseConfigText(JSON.stringify(config), "json", ".");
  if (!r.ok) throw new Error(JSON.stringify(r.problems));
  const logger = memoryLogger();
  const app = await createAgentServer({
    config: r.config,
    env: (n) => (n === "SIP_PASSWORD" ? "trunk-pass" : undefined),
    logger,
    sipBindHost: "127.0.0.1",
  });
  return { app, logs: logger.records };
}

/** An artifact of `app`'s runs (`run-1-transcript.json`): in memory, or in `dir` when recording. */
export function artifact(app: AgentServer, name: string, dir?: string): Uint8Array {
  const bytes = app.sessions.memoryArtifact(name) ??
    (dir === undefined ? undefined : Deno.readFileSync(`${dir}/${name}`));
  assert.ok(bytes !== undefined, `no artifact ${name}`);
  return bytes;
}

/**
 * Check that run 1 of `app` ended `transferred` (finalize report and `call ended` line) and
 * return what its transcript's transfer_call tool line said. `dir`: the recording directory.
 */
export async function transferredRun(
  app: AgentServer,
  logs: LogRecord[],
  dir?: string,
): Promise<unknown> {
  const run = app.sessions.get(1)!;
  await until(() => run.finalize !== undefined, 5000, "finalized");
  assert.equal(run.finalize!.usage.endedBy, "end: brain: transferred");
  assert.equal(run.finalize!.disposition, "transferred");
  const ended = logs.find((l) => l.message === "call ended");
  assert.equal(ended?.fields?.reason, "transferred", JSON.stringify(ended));
  const bytes = artifact(app, "run-1-transcript.json", dir);
  const lines = JSON.parse(new TextDecoder().decode(bytes)).lines as {
    role: string;
    text: string;
    tool?: string;
  }[];
  const tool = lines.find((l) => l.role === "tool" && l.tool === "transfer_call");
  return JSON.parse(tool?.text ?? "null");
}
