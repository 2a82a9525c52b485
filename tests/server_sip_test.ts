/**
 * A SIP call into the agent server, no softswitch: real sipp (UAC) dials the server's SIP trunk,
 * the server answers with the echo model behind buildS2sTask, sipp's tone and keypad press reach
 * the pipeline, and sipp's BYE ends and finalizes the call.
 */
import assert from "node:assert/strict";
import { memoryLogger } from "../core/log.ts";
import { createAgentServer } from "../server/app.ts";
import { parseConfigText } from "../server/config.ts";
import { until } from "./_core_helpers.ts";
import {
  echoSipTrunkConfig,
  freeUdpPort,
  hasSipp,
  pcmuPcap,
  runSipp,
  sine8k,
  sippArgs,
} from "./_sipp.ts";

const PASSWORD = "trunk-pass-4f9c";

Deno.test({
  name: "server SIP trunk: sipp calls in, the echo agent answers, BYE finalizes the call",
  ignore: !hasSipp(),
  fn: async () => {
    const sipPort = freeUdpPort();
    const graph = {
      version: 1,
      start: "a",
      nodes: [
        {
          id: "a",
          prompt: "First.",
          transitions: [{ name: "next", description: "Go on.", target: "b" }],
        },
        {
          id: "b",
          prompt: "Second.",
          transitions: [{ name: "done", description: "Done.", target: "c" }],
        },
        { id: "c", prompt: "Bye.", terminal: true },
      ],
    };
    const config = echoSipTrunkConfig(graph, sipPort);
    const r = await parseConfigText(JSON.stringify(config), "json", ".");
    if (!r.ok) throw new Error(JSON.stringify(r.problems));
    const logger = memoryLogger();
    const app = await createAgentServer({
      config: r.config,
      env: (n) => (n === "SIP_PASSWORD" ? PASSWORD : undefined),
      logger,
      sipBindHost: "127.0.0.1",
    });
    const dir = `./.tmp/server-sip-${crypto.randomUUID()}`;
    Deno.mkdirSync(dir, { recursive: true });
    Deno.writeFileSync(`${dir}/tone.pcap`, pcmuPcap(sine8k(8000 * 0.6, 440)));
    const sipp = runSipp(sippArgs("uac_media.xml", sipPort), dir);
    try {
      await until(() => app.sessions.get(1) !== undefined, 5000, "inbound run");
      const run = app.sessions.get(1)!;
      assert.equal(run.origin, "sip");
      const res = await sipp.done;
      assert.equal(res.code, 0, res.stdout.slice(-1500));
      await until(() => run.finalize !== undefined, 5000, "finalized");
      assert.equal(run.finalize!.usage.endedBy, "end: caller hung up");
      const bytes = app.sessions.memoryArtifact("run-1-transcript.json")!;
      const doc = JSON.parse(new TextDecoder().decode(bytes));
      const lines = doc.lines as { role: string; text: string }[];
      // sipp's RFC 4733 "1" reached the model, which took the first transition.
      assert.ok(
        lines.some((l) => l.role === "user" && l.text === "(pressed 1)"),
        JSON.stringify(lines),
      );
      assert.ok(lines.some((l) => l.role === "node" && l.text === "b"), JSON.stringify(lines));
      // The tone reached the model (it counts the 20 ms frames it heard).
      assert.ok(
        Number(run.finalize!.usage.promptTokens) >= 20,
        JSON.stringify(run.finalize!.usage),
      );
      assert.ok(!JSON.stringify(logger.records).includes(PASSWORD), "password in a log line");
    } finally {
      sipp.kill();
      await sipp.done;
      await app.calls.drain(1000);
      await app.close();
      Deno.removeSync(dir, { recursive: true });
    }
  },
});
