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

Deno.test("session store: hosts sharing a secret adopt each other's runs by signed token", async () => {
  const secret = new TextEncoder().encode("a-shared-secret-of-at-least-32-chars!");
  const host = () =>
    new MemorySessionSource({
      provider: "echo",
      cluster: { secret, index: 0, count: 1, hosts: true },
    });
  const a = host();
  const b = host();
  const run = await a.createRun("carrier", { carrier: "twilio" });
  // Same index on both hosts: only the signature tells b it may take the run.
  const adopted = await b.verify(run.runId, run.token, { origin: "carrier", carrier: "twilio" });
  assert.equal(adopted?.runId, run.runId);
  assert.equal(adopted?.carrier, "twilio");
  assert.ok(b.bindMedia(adopted!));
  assert.equal(await b.verify(run.runId, run.token), adopted, "held now");
  assert.equal(await b.verify(run.runId, `${run.token}x`), undefined, "the exact token only");
  // A token for another run, or signed with another secret, is not adopted.
  const other = new MemorySessionSource({
    provider: "echo",
    cluster: { secret: new Uint8Array(32), index: 0, count: 1, hosts: true },
  });
  assert.equal(await other.verify(run.runId, run.token), undefined, "other secret");
  const next = await a.createRun("carrier");
  assert.equal(await host().verify(next.runId + 1, next.token), undefined, "other run id");
});

Deno.test("session store: a host's run ids are random, so a restarted host reuses none", async () => {
  const secret = new Uint8Array(32).fill(7);
  const ids = new Set<number>();
  for (let restart = 0; restart < 20; restart++) {
    const s = new MemorySessionSource({
      provider: "echo",
      cluster: { secret, index: 1, count: 2, hosts: true },
    });
    for (let i = 0; i < 5; i++) {
      const { runId } = await s.createRun("carrier");
      assert.ok(Number.isSafeInteger(runId) && String(runId).length <= 15, String(runId));
      assert.equal(runId % 2, 1, "the worker's index is kept");
      ids.add(runId);
    }
  }
  assert.equal(ids.size, 100);
});
