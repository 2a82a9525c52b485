import assert from "node:assert/strict";
import { benchAgentConfig, benchEchoCancel, benchEchoRates } from "../bench/capacity_child.ts";
import { parseConfig } from "../server/config.ts";

Deno.test("capacity child: the bench config states the echo canceller and the server takes it", async () => {
  for (const echoCancel of ["on", "off"] as const) {
    const doc = benchAgentConfig(10, "leg", echoCancel);
    assert.deepEqual(doc.audio, { echo_cancel: echoCancel });
    Deno.env.set("TWILIO_AUTH_TOKEN", "bench-token");
    const config = await parseConfig(doc);
    assert.equal(config.audio.echoCancel, echoCancel);
  }
  // Unset flags keep the bench's defaults: the leg's rate, no canceller.
  assert.deepEqual(benchAgentConfig(10).audio, { echo_cancel: "off" });
});

Deno.test("capacity child: bad --echo-cancel and --echo-rates values are named", () => {
  assert.equal(benchEchoCancel(undefined), "off");
  assert.equal(benchEchoCancel("on"), "on");
  assert.throws(() => benchEchoCancel("yes"), /--echo-cancel must be on or off \(got yes\)/);
  assert.equal(benchEchoRates(undefined), "leg");
  assert.throws(() => benchEchoRates("8000"), /--echo-rates must be leg or 16000\/24000/);
});
