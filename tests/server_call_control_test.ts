/**
 * transfer_call through the agent server as operators run it: real sipp dials the server's SIP
 * trunk, presses "2", and the echo model calls its second tool, the graph's transfer_call
 * (target pinned by an enum, taken from its default). The server sends REFER, sipp accepts and
 * reports 200 in a NOTIFY, the agent hangs up with BYE, and the call ends `transferred`: in the
 * finalize report, the transcript and the `call ended` line.
 */
import assert from "node:assert/strict";
import { until } from "./_core_helpers.ts";
import { echoTransferServer, transferredRun } from "./_server_transfer.ts";
import { freeUdpPort, hasSipp, runSipp, sippArgs } from "./_sipp.ts";

const TARGET = "sip:desk@127.0.0.1:5099";

Deno.test({
  name:
    "server SIP trunk: the model's transfer_call sends REFER; NOTIFY 200 ends the call transferred",
  ignore: !hasSipp(),
  fn: async () => {
    const sipPort = freeUdpPort();
    const { app, logs } = await echoTransferServer(TARGET, sipPort);
    const sipp = runSipp(sippArgs("uac_refer_server.xml", sipPort));
    try {
      await until(() => app.sessions.get(1) !== undefined, 5000, "inbound run");
      const res = await sipp.done; // it required our BYE after its NOTIFY 200
      assert.equal(res.code, 0, res.stdout.slice(-1500) + res.stderr.slice(-1000));
      const tool = await transferredRun(app, logs);
      assert.deepEqual(tool, { ok: true, transferred: TARGET });
    } finally {
      sipp.kill();
      await sipp.done;
      await app.calls.drain(1000);
      await app.close();
    }
  },
});
