/**
 * Registration against a hand-driven registrar on a raw UDP socket: a failure is retried with
 * backoff on the same Call-ID, 423 is answered with Min-Expires, the granted expiry comes from
 * Expires, and the refresh and backoff schedules themselves.
 */

import assert from "node:assert/strict";
import { FlowcatError } from "../core/errors.ts";
import { memoryLogger } from "../core/log.ts";
import { cseqOf, getHeader, SipAgent } from "../telephony/sip/mod.ts";
import { backoffMs, refreshDelayMs } from "../telephony/sip/register.ts";
import { RawPeer } from "./_sip_peer.ts";
import { freeEvenPortBase } from "./_sipp.ts";

Deno.test("refresh goes out at 90% of long bindings and half-way through short ones", () => {
  assert.equal(refreshDelayMs(3600), 3570_000);
  assert.equal(refreshDelayMs(300), 270_000);
  assert.equal(refreshDelayMs(40), 20_000);
  assert.equal(refreshDelayMs(2), 1000);
});

Deno.test("backoff doubles from the base up to the ceiling", () => {
  assert.deepEqual([1, 2, 3, 4, 5, 6].map((n) => backoffMs(n, 2000, 20_000)), [
    2000,
    4000,
    8000,
    16_000,
    20_000,
    20_000,
  ]);
  assert.equal(backoffMs(500, 2000, 300_000), 300_000);
});

Deno.test("a failed REGISTER is retried with backoff; 423 raises the expiry to Min-Expires", async () => {
  const registrar = new RawPeer();
  const logger = memoryLogger();
  const agent = await SipAgent.start({
    server: `sip:127.0.0.1:${registrar.port}`,
    login: "alice",
    password: "hunter2-pw",
    callerId: "+15550001111",
    bindHost: "127.0.0.1",
    sipPort: 0,
    rtpPortBase: freeEvenPortBase(1),
    rtpPortTries: 1,
  }, { logger, registration: { expires: 60, retryBaseMs: 150, retryMaxMs: 1000 } });
  try {
    const first = agent.register();
    const r1 = await registrar.request("REGISTER", 0);
    const t503 = performance.now();
    await registrar.reply(r1, 503, agent.local.port);
    const err = await first.then(() => undefined, (e) => e);
    assert.ok(err instanceof FlowcatError);
    assert.match(err.message, /503/);
    assert.equal(agent.registrationState, "failed");
    assert.equal(agent.registration.failures, 1);
    // The retry comes by itself after the backoff.
    const r2 = await registrar.request("REGISTER", 1);
    assert.ok(performance.now() - t503 >= 100, "retried after the backoff, not at once");
    await registrar.reply(r2, 423, agent.local.port, {
      headers: [{ name: "Min-Expires", value: "120" }],
    });
    const r3 = await registrar.request("REGISTER", 2);
    await registrar.reply(r3, 200, agent.local.port, {
      headers: [{ name: "Expires", value: "120" }],
    });
    const t0 = performance.now();
    const state = (): string => agent.registrationState;
    while (state() !== "registered" && performance.now() - t0 < 2000) {
      await new Promise((r) => setTimeout(r, 10));
    }
    assert.equal(state(), "registered");
    assert.equal(agent.registration.grantedExpires, 120);
    assert.equal(agent.registration.failures, 0);
    const all = [r1, r2, r3];
    assert.deepEqual(all.map((r) => getHeader(r, "Expires")), ["60", "60", "120"]);
    assert.equal(new Set(all.map((r) => getHeader(r, "Call-ID"))).size, 1);
    assert.equal(new Set(all.map((r) => /tag=([^;]+)/.exec(getHeader(r, "From")!)![1])).size, 1);
    assert.deepEqual(all.map((r) => cseqOf(r)!.seq), [1, 2, 3]);
    assert.equal(new Set(all.map((r) => /branch=([^;]+)/.exec(getHeader(r, "Via")!)![1])).size, 3);
    assert.match(getHeader(r1, "Contact")!, /^<sip:alice@127\.0\.0\.1:\d+>$/);
    // Closing removes the binding: Expires: 0, same Call-ID, next CSeq.
    const closing = agent.close();
    const r4 = await registrar.request("REGISTER", 3);
    assert.equal(getHeader(r4, "Expires"), "0");
    assert.equal(cseqOf(r4)!.seq, 4);
    await registrar.reply(r4, 200, agent.local.port);
    await closing;
    assert.equal(agent.registrationState, "unregistered");
  } finally {
    await agent.close();
    await registrar.close();
  }
  const warn = logger.records.find((r) => r.message === "sip registration failed");
  assert.ok(warn !== undefined);
  assert.equal(warn.fields?.retryInMs, 150);
  assert.equal(JSON.stringify(logger.records).includes("hunter2-pw"), false);
});
