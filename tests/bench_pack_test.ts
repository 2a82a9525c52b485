/**
 * `deno task bench:pack`: the capacity bench as an offline pack for a host with no network and no
 * Deno. Built once, then run with no network at all (`unshare -n`, loopback only, an empty
 * DENO_DIR): two worker threads carry a few calls, every frame comes back, and the workers' own
 * latency split and timers are reported.
 */
import assert from "node:assert/strict";
import { runDeno } from "../tools/deno_child.ts";
import { packRunScript } from "../tools/bench_pack.ts";
import { hasUnshare, runOffline } from "./_offline.ts";

/** The flags `deno task bench:pack` runs the tool with (deno.json). */
const TASK_FLAGS = ["--allow-read=.", "--allow-write=.tmp", "--allow-run=deno,xz", "--ignore-env"];
const OUT = ".tmp/bench_pack_test";

Deno.test("bench pack: run.sh runs the bench on the pack's own Deno with scoped flags only", () => {
  const s = packRunScript();
  assert.match(s, /--no-config --no-lock --no-remote --no-npm/);
  assert.match(s, /--allow-net=127\.0\.0\.1 /);
  assert.match(s, /--allow-run=deno /);
  assert.match(s, /--allow-write=\.\/bench\/results,\.\/\.tmp /);
  assert.doesNotMatch(s, /--allow-all|\s-A\s/);
  assert.match(s, /xz -dc deno\.xz/);
});

Deno.test({
  name: "bench pack: offline, two worker threads echo every frame and report their split",
  sanitizeResources: false,
  fn: async () => {
    const built = await runDeno(["run", ...TASK_FLAGS, "tools/bench_pack.ts", "--out", OUT]);
    assert.equal(built.code, 0, built.stderr);
    for (const f of ["capacity.js", "capacity_server.js", "worker.js", "deno.xz", "run.sh"]) {
      assert.ok((await Deno.stat(`${OUT}/${f}`)).isFile, f);
    }
    let size = 0;
    for await (const e of Deno.readDir(OUT)) size += (await Deno.stat(`${OUT}/${e.name}`)).size;
    assert.ok(size < 56 * 2 ** 20, `the pack (${size} B) leaves room in a 64 MiB device carry`);
    if (!(await hasUnshare())) {
      console.warn("skip: unshare -n unavailable; the pack was built but not run offline");
      await Deno.remove(OUT, { recursive: true });
      return;
    }
    try {
      const { code, text } = await runOffline([
        // A host that sets LD_LIBRARY_PATH (the lent GPU machines do) must not stop the child.
        `LD_LIBRARY_PATH=/nonexistent DENO_DIR=${Deno.cwd()}/${OUT}/empty_deno_dir ` +
        `${OUT}/run.sh --calls 3 --duration 2 ` +
        "--workers 2 --no-up --no-write",
      ]);
      assert.equal(code, 0, text);
      const line = text.split("\n").find((l) => l.startsWith('[{"calls"'));
      assert.ok(line, text);
      const [p] = JSON.parse(line) as { calls: number; workers: number; frames_lost: number }[];
      assert.equal(p.calls, 3);
      assert.equal(p.workers, 2);
      assert.equal(p.frames_lost, 0, text);
      assert.match(text, /3 calls x2: .*\[server in->out p50 \d/, "the workers' split");
      assert.doesNotMatch(text, /Download|NotCapable|PermissionDenied/, text);
    } finally {
      await Deno.remove(OUT, { recursive: true });
    }
  },
});
