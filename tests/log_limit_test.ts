/**
 * core/log_limit.ts: a flood of one message is one line per interval with a count; end to end,
 * the agent server refusing a flood of unsigned carrier webhooks.
 */
import assert from "node:assert/strict";
import { rateLimitedLogger } from "../core/log_limit.ts";
import { memoryLogger } from "../core/log.ts";
import { createAgentServer } from "../server/app.ts";
import { parse, yaml } from "./_server_config_helpers.ts";
import { sleep } from "./_core_helpers.ts";

Deno.test("log limit: 2000 records in a second are one line, then one line with the count", () => {
  const mem = memoryLogger();
  let t = 0;
  const log = rateLimitedLogger(mem, { intervalMs: 10_000, now: () => t });
  for (let i = 0; i < 2000; i++) {
    t = i * 0.5;
    log.warn("answer webhook refused", { carrier: "twilio", n: i });
  }
  assert.deepEqual(mem.records, [
    { level: "warn", message: "answer webhook refused", fields: { carrier: "twilio", n: 0 } },
  ]);
  t = 1000;
  log.close();
  assert.equal(mem.records.length, 2);
  assert.deepEqual(mem.records[1], {
    level: "warn",
    message: "answer webhook refused (1999 more in the last 1 s)",
    fields: { carrier: "twilio", n: 1999, suppressed: 1999, intervalSeconds: 1 },
  });
});

Deno.test("log limit: messages are limited apart; a quiet interval lets the next one through", () => {
  const mem = memoryLogger();
  let t = 0;
  const log = rateLimitedLogger(mem, { intervalMs: 1000, now: () => t });
  log.warn("a");
  log.warn("b");
  log.error("a");
  assert.equal(mem.records.length, 3, "another message, or another level, is its own flood");
  t = 1500; // the interval passed with nothing counted
  log.warn("a");
  assert.equal(mem.records.length, 4);
  assert.equal(mem.records[3].message, "a");
  // A flood going on: one summary per interval, nothing else.
  for (; t < 5500; t += 10) log.warn("a");
  const lines = mem.records.slice(4).map((r) => r.message);
  assert.deepEqual(lines, [
    "a (100 more in the last 1 s)",
    "a (100 more in the last 1 s)",
    "a (100 more in the last 1 s)",
  ]);
  log.close();
  assert.equal(mem.records.at(-1)!.fields!.suppressed, 100);
});

Deno.test("log limit: the count is said when the interval ends, by its own timer", async () => {
  const mem = memoryLogger();
  const log = rateLimitedLogger(mem, { intervalMs: 50 });
  log.info("scrape refused");
  log.info("scrape refused");
  log.info("scrape refused");
  assert.equal(mem.records.length, 1);
  await sleep(120);
  assert.equal(mem.records.length, 2);
  assert.match(mem.records[1].message, /^scrape refused \(2 more in the last 0\.\d s\)$/);
  assert.equal(mem.records[1].fields!.suppressed, 2);
  log.close();
});

Deno.test("log limit: a flood of unsigned answer webhooks is one line, then one with the count", async () => {
  const r = await parse(
    yaml('telephony: { public_url: "https://agent.example.com", carriers: [twilio] }'),
  );
  if (!r.ok) throw new Error(JSON.stringify(r.problems));
  const log = memoryLogger();
  const app = await createAgentServer({
    config: r.config,
    env: (n) => (n === "TWILIO_AUTH_TOKEN" ? "secret" : undefined),
    logger: log,
  });
  const server = Deno.serve({ hostname: "127.0.0.1", port: 0, onListen: () => {} }, app.handler);
  const url = `http://127.0.0.1:${server.addr.port}/telephony/answer/twilio`;
  try {
    const total = 400;
    for (let sent = 0; sent < total; sent += 50) {
      await Promise.all(
        Array.from({ length: 50 }, async (_, i) => {
          const res = await fetch(url, {
            method: "POST",
            headers: { "content-type": "application/x-www-form-urlencoded" },
            body: `CallSid=CA${sent + i}`,
          });
          assert.equal(res.status, 403);
          await res.body?.cancel();
        }),
      );
    }
    const refusals = () =>
      log.records.filter((x) => x.message.startsWith("answer webhook refused"));
    assert.equal(refusals().length, 1, "the first refusal is said at once, the rest counted");
    assert.equal(refusals()[0].level, "warn");
    await app.close(); // shutting down says what is still counted
    assert.equal(refusals().length, 2);
    assert.match(
      refusals()[1].message,
      /^answer webhook refused \(399 more in the last [\d.]+ s\)$/,
    );
    assert.equal(refusals()[1].fields!.suppressed, 399);
    assert.ok(
      app.metrics.registry.expose().includes(
        `flowcat_requests_refused_total{reason="webhook_signature"} ${total}`,
      ),
      "every refusal is counted",
    );
  } finally {
    await server.shutdown();
  }
});
