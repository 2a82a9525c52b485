import assert from "node:assert/strict";
import { MemorySessionSource } from "../server/session_store.ts";

function clocked(ttlSeconds = 60) {
  let t = 1_000_000;
  const store = new MemorySessionSource({
    provider: "echo",
    unclaimedTtlSeconds: ttlSeconds,
    now: () => t,
  });
  return { store, advance: (ms: number) => void (t += ms) };
}

Deno.test("session store: a run whose call never starts expires with its token", async () => {
  const { store, advance } = clocked(60);
  const run = await store.createRun("carrier", { carrier: "twilio" });
  advance(59_000);
  assert.ok(await store.verify(run.runId, run.token), "still valid inside the TTL");
  advance(2_000);
  assert.equal(await store.verify(run.runId, run.token), undefined, "expired");
  assert.equal(store.get(run.runId), undefined, "and forgotten");
  await assert.rejects(store.resolve(run.runId, run.token), /unknown run or bad call token/);
});

Deno.test("session store: a claimed (started) or completed run does not expire", async () => {
  const { store, advance } = clocked(60);
  const started = await store.createRun("browser");
  const done = await store.createRun("carrier", { carrier: "twilio" });
  store.claim(started.runId);
  await store.complete(done.runId, done.token, { usage: {}, collectedVars: {} });
  advance(3_600_000);
  assert.ok(await store.verify(started.runId, started.token));
  assert.ok(await store.verify(done.runId, done.token));
  store.claim(424242); // an unknown id is ignored
});

Deno.test("session store: creating runs sweeps the expired ones out of memory", async () => {
  const { store, advance } = clocked(60);
  const old = [];
  for (let i = 0; i < 50; i++) old.push(await store.createRun("browser"));
  advance(61_000);
  const fresh = await store.createRun("browser");
  for (const r of old) assert.equal(store.get(r.runId), undefined);
  assert.ok(store.get(fresh.runId));
  assert.deepEqual(store.active().map((r) => r.runId), [fresh.runId]);
});

Deno.test("session store: recordings and transcripts are written for the server's user only", async () => {
  const dir = `${await Deno.makeTempDir({ dir: "./.tmp", prefix: "artifacts-" })}/rec`;
  try {
    const store = new MemorySessionSource({ provider: "echo", artifactDir: dir });
    const run = await store.createRun("browser");
    const target = await store.artifactUploadUrl(run.runId, run.token, "recording");
    await store.putBytes(target.uploadUrl, new Uint8Array([1, 2, 3]), "audio/wav");
    assert.equal((await Deno.stat(target.publicUrl)).mode! & 0o777, 0o600);
    assert.equal((await Deno.stat(dir)).mode! & 0o777, 0o700);
  } finally {
    await Deno.remove(dir.replace(/\/rec$/, ""), { recursive: true });
  }
});
