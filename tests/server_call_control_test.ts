/**
 * transfer_call through the agent server as operators run it: real sipp dials the server's SIP
 * trunk, presses "2", and the echo model calls its second tool, the graph's transfer_call
 * (target pinned by an enum, taken from its default). The server sends REFER, sipp accepts and
 * reports 200 in a NOTIFY, the agent hangs up with BYE, and the call ends `transferred`: in the
 * finalize report, the transcript and the `call ended` line.
 */
import assert from "node:assert/strict";
import { memoryLogger } from "../core/log.ts";
import { createAgentServer } from "../server/app.ts";
import { parseConfigText } from "../server/config.ts";
import { until } from "./_core_helpers.ts";
import { pinnedTransferGraph } from "./_graph_fixture.ts";
import { echoSipTrunkConfig, freeUdpPort, hasSipp, runSipp, sippArgs } from "./_sipp.ts";

const TARGET = "sip:desk@127.0.0.1:5099";

Deno.test({
  name:
    "server SIP trunk: the model's transfer_call sends REFER; NOTIFY 200 ends the call transferred",
  ignore: !hasSipp(),
  fn: async () => {
    const sipPort = freeUdpPort();
    const graph = pinnedTransferGraph(TARGET);
    const config = echoSipTrunkConfig(graph, sipPort);
    const r = await parseConfigText(JSON.stringify(config), "json", ".");
    if (!r.ok) throw new Error(JSON.stringify(r.problems));
    const logger = memoryLogger();
    const app = await createAgentServer({
      config: r.config,
      env: (n) => (n === "SIP_PASSWORD" ? "trunk-pass" : undefined),
      logger,
      sipBindHost: "127.0.0.1",
    });
    const sipp = runSipp(sippArgs("uac_refer_server.xml", sipPort));
    try {
      await until(() => app.sessions.get(1) !== undefined, 5000, "inbound run");
      const run = app.sessions.get(1)!;
      const res = await sipp.done; // it required our BYE after its NOTIFY 200
      assert.equal(res.code, 0, res.stdout.slice(-1500) + res.stderr.slice(-1000));
      await until(() => run.finalize !== undefined, 5000, "finalized");
      assert.equal(run.finalize!.usage.endedBy, "end: brain: transferred");
      assert.equal(run.finalize!.disposition, "transferred");
      const ended = logger.records.find((l) => l.message === "call ended");
      assert.equal(ended?.fields?.reason, "transferred", JSON.stringify(ended));
      const bytes = app.sessions.memoryArtifact("run-1-transcript.json")!;
      const lines = JSON.parse(new TextDecoder().decode(bytes)).lines as {
        role: string;
        text: string;
        tool?: string;
      }[];
      const tool = lines.find((l) => l.role === "tool" && l.tool === "transfer_call");
      assert.deepEqual(JSON.parse(tool?.text ?? "null"), { ok: true, transferred: TARGET });
    } finally {
      sipp.kill();
      await sipp.done;
      await app.calls.drain(1000);
      await app.close();
    }
  },
});
