/** InMemorySessions: runs with random tokens checked on every call, reports and artifacts kept. */

import assert from "node:assert/strict";
import { FlowcatError, InMemorySessions } from "../mod.ts";

const REPORT = { usage: { turns: 2 }, collectedVars: { a: 1 }, disposition: "completed" };

Deno.test("InMemorySessions: open, resolve, upload, complete; finished settles with the report", async () => {
  const sessions = new InMemorySessions({ provider: "echo" });
  const run = sessions.open();
  assert.equal(run.session, sessions);
  assert.equal(run.runId, 1);
  assert.match(run.token, /^[A-Za-z0-9_-]{43}$/);
  assert.notEqual(sessions.open().token, run.token, "each run has its own token");
  assert.deepEqual(await sessions.resolve(run.runId, run.token), {
    provider: "echo",
    brainConfig: {},
    isCompleted: false,
  });
  const target = await sessions.artifactUploadUrl(run.runId, run.token, "transcript");
  await sessions.putBytes(target.uploadUrl, new Uint8Array([1, 2, 3]), "application/json");
  assert.deepEqual(sessions.artifact(target.publicUrl), new Uint8Array([1, 2, 3]));
  assert.deepEqual(await sessions.nodeTools(run.runId, run.token, "main"), []);
  const finished = sessions.finished(run.runId);
  await sessions.complete(run.runId, run.token, REPORT);
  assert.deepEqual(await finished, REPORT);
  assert.equal((await sessions.resolve(run.runId, run.token)).isCompleted, true);
});

Deno.test("InMemorySessions: a wrong token or an unknown run is an auth error", async () => {
  const sessions = new InMemorySessions();
  const run = sessions.open();
  for (
    const op of [
      () => sessions.resolve(run.runId, "forged"),
      () => sessions.complete(run.runId, `${run.token}x`, REPORT),
      () => sessions.artifactUploadUrl(run.runId, "", "recording"),
      () => sessions.toolCall(run.runId, "forged", "main", "t", {}),
      () => sessions.resolve(99, run.token),
      () => sessions.finished(99),
    ]
  ) {
    await assert.rejects(op(), (e) => e instanceof FlowcatError && e.kind === "auth");
  }
});
