/**
 * Embedding from a registry: the package's published files are served over HTTP from
 * 127.0.0.1 (standing in for JSR or any `https:` host), and a fresh project in a temporary
 * directory imports it by that origin and runs the three programs of docs/embedding.md
 * (examples/embed/{custom_pipeline,phone_agent,whole_server}.ts), each as a child `deno run`
 * under exactly the flags its module doc states, plus `--allow-import` for the origin:
 * - every export path imports with no permission at all, but the WebRTC transport, which
 *   needs `--ignore-env` (a dependency of werift lists the environment as it loads);
 * - a custom pipeline runs with no permission at all;
 * - the phone agent answers a Twilio-framed call on its own `Deno.serve`: greeting, the
 *   caller's tone echoed back, `#` ends the call (the agent closes the socket);
 * - the whole server, started from a config object, serves the playground at `GET /` and
 *   `/healthz`, and stops cleanly (exit 0) on SIGTERM.
 */

import assert from "node:assert/strict";
import {
  consumerProject,
  documentedFlags,
  packageJson,
  runConsumer,
  serveRegistry,
} from "./_registry.ts";
import { twilioClient } from "./_twilio_client.ts";
import { tone8k, toneWindows } from "./_tone.ts";
import { until } from "./_core_helpers.ts";

const EXAMPLES = ["custom_pipeline", "phone_agent", "whole_server"] as const;

/** Nothing in a child's output may say it lacked a permission. */
function assertNoPermissionError(stderr: string): void {
  assert.doesNotMatch(stderr, /NotCapable|Requires \w+ access|PermissionDenied/, stderr);
}

Deno.test("registry: a fresh project imports the package over http and runs the three embeddings", async (t) => {
  const registry = serveRegistry();
  const dir = await consumerProject(registry.origin);
  const flagsOf: Record<string, string[]> = {};
  for (const name of EXAMPLES) {
    const source = await Deno.readTextFile(`examples/embed/${name}.ts`);
    await Deno.writeTextFile(`${dir}/${name}.ts`, source);
    flagsOf[name] = [...documentedFlags(source), `--allow-import=${registry.host}`];
  }
  try {
    await t.step(
      "every export path imports with no permission (WebRTC: --ignore-env)",
      async () => {
        const paths = Object.keys(packageJson().exports).map((p) =>
          p === "." ? "@flowcat/flowcat" : `@flowcat/flowcat/${p.slice(2)}`
        );
        const lines = (ps: string[]) =>
          ps.map((p, i) => `import * as m${i} from "${p}";`).join("\n") +
          `\nconsole.log([${
            ps.map((_, i) => `Object.keys(m${i}).length`).join(", ")
          }].join(" "));\n`;
        const webrtc = "@flowcat/flowcat/transports/webrtc";
        await Deno.writeTextFile(`${dir}/all.ts`, lines(paths.filter((p) => p !== webrtc)));
        await Deno.writeTextFile(`${dir}/webrtc.ts`, lines([webrtc]));
        const imp = `--allow-import=${registry.host}`;
        for (
          const [file, flags] of [["all.ts", [imp]], ["webrtc.ts", [imp, "--ignore-env"]]] as const
        ) {
          const run = runConsumer(dir, file, flags);
          const code = await run.status;
          assertNoPermissionError(run.stderr());
          assert.equal(code, 0, run.stderr());
          const counts = run.stdout().trim().split(" ").map(Number);
          assert.ok(counts.length > 0 && counts.every((n) => n > 0), run.stdout());
        }
        // Without --ignore-env the WebRTC stack stops at its dependency's environment read: the
        // permission its module doc and docs/embedding.md state is the one it needs.
        const bare = runConsumer(dir, "webrtc.ts", [imp]);
        assert.notEqual(await bare.status, 0);
        assert.match(bare.stderr(), /Requires env access/);
      },
    );

    await t.step("custom pipeline: no permission beyond the import", async () => {
      assert.deepEqual(flagsOf.custom_pipeline, [`--allow-import=${registry.host}`]);
      const run = runConsumer(dir, "custom_pipeline.ts", flagsOf.custom_pipeline);
      const code = await run.status;
      assertNoPermissionError(run.stderr());
      assert.equal(code, 0, run.stderr());
      assert.deepEqual(JSON.parse(run.stdout().trim()), { end: "end", frames: 5, peak: 1998 });
      assert.ok(registry.requested.includes("mod.ts"), "the core came from the registry");
    });

    await t.step("phone agent: a Twilio-framed call on the host's own Deno.serve", async () => {
      assert.deepEqual(flagsOf.phone_agent, [
        "--allow-net=127.0.0.1",
        `--allow-import=${registry.host}`,
      ]);
      const run = runConsumer(dir, "phone_agent.ts", flagsOf.phone_agent, ["0"]);
      try {
        const port = (await run.waitFor(/Listening on http:\/\/127\.0\.0\.1:(\d+)\//))[1];
        const page = await fetch(`http://127.0.0.1:${port}/`);
        assert.equal(await page.text(), "Flowcat phone agent\n");
        const call = await twilioClient(`ws://127.0.0.1:${port}/`, "unused");
        try {
          await until(() => call.media().length >= 15, 10_000, "greeting chime");
          const greeting = call.media().length;
          await call.speak(tone8k(8000 * 0.6), 20);
          await call.speak(new Int16Array(8000), 20); // 1 s of quiet ends the caller's turn
          await until(
            () => toneWindows(call.decode(call.media().slice(greeting))) >= 20,
            10_000,
            "the caller's tone echoed back",
          );
          await call.dtmf("#"); // the echo model calls end_call; the static brain ends the call
          const ended = await Promise.race([
            call.ended.then(() => true),
            new Promise<boolean>((r) => setTimeout(() => r(false), 10_000)),
          ]);
          assert.ok(ended, "the agent hung up after end_call");
        } finally {
          await call.close();
        }
        assertNoPermissionError(run.stderr());
        assert.doesNotMatch(run.stderr(), /call failed/, run.stderr());
      } finally {
        await run.stop();
      }
      assert.ok(registry.requested.includes("telephony/ws_transport.ts"));
    });

    await t.step(
      "whole server: from a config object; playground, healthz, clean stop",
      async () => {
        assert.deepEqual(flagsOf.whole_server, [
          "--allow-net=127.0.0.1",
          `--allow-import=${registry.host}`,
        ]);
        const run = runConsumer(dir, "whole_server.ts", flagsOf.whole_server, ["0"]);
        let code: number;
        try {
          const base = (await run.waitFor(/agent server on (http:\/\/127\.0\.0\.1:\d+)\//))[1];
          const page = await fetch(`${base}/`);
          assert.equal(page.status, 200);
          assert.match(page.headers.get("content-type") ?? "", /^text\/html/);
          assert.match(await page.text(), /<title>Flowcat playground<\/title>/);
          const script = await fetch(`${base}/app.js`);
          assert.equal(script.status, 200);
          assert.match(await script.text(), /RTCPeerConnection/);
          const health = await fetch(`${base}/healthz`);
          assert.equal(health.status, 200, await health.clone().text());
          await health.body?.cancel();
        } finally {
          code = await run.stop("SIGTERM");
        }
        assertNoPermissionError(run.stderr());
        assert.equal(code, 0, `exit ${code}\n${run.stderr()}`);
        assert.match(run.stdout(), /agent server stopped/);
      },
    );
  } finally {
    await registry.close();
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("docs/embedding.md shows the programs the registry test runs, and every export path's permissions", async () => {
  const doc = await Deno.readTextFile("docs/embedding.md");
  for (const name of EXAMPLES) {
    const source = await Deno.readTextFile(`examples/embed/${name}.ts`);
    assert.ok(doc.includes("```ts\n" + source + "```"), `${name}.ts is not in the doc verbatim`);
  }
  const table = doc.slice(doc.indexOf("## Permissions by entry point"));
  const rows = table.split("\n").filter((l) => l.startsWith("| `"));
  const listed = new Set(
    rows.flatMap((r) => [...r.split("|")[1].matchAll(/`([^`]+)`/g)].map((m) => m[1])),
  );
  const missing = Object.keys(packageJson().exports).filter((path) =>
    !listed.has(path) && !(path.startsWith("./telephony/serializers/") &&
      listed.has("./telephony/serializers/<carrier>"))
  );
  assert.deepEqual(missing, [], "export paths without a permissions row");
});

/** The sentence after `Permissions:` in a module's doc comment, up to the paragraph's end. */
function modulePermissions(source: string): string | undefined {
  const doc = source.match(/\/\*\*([\s\S]*?)\*\//)?.[1] ?? "";
  const text = doc.split("\n").map((l) => l.replace(/^\s*\* ?/, "")).join("\n");
  const at = text.search(/Permissions:|needs no permission/);
  if (at < 0) return undefined;
  return text.slice(at).split("\n\n")[0].replace(/\s+/g, " ");
}

Deno.test("every export path's module doc states its permissions, as docs/embedding.md does", async () => {
  const doc = await Deno.readTextFile("docs/embedding.md");
  const table = doc.slice(doc.indexOf("## Permissions by entry point"));
  const rows = table.split("\n").filter((l) => l.startsWith("| `")).map((r) => {
    const [, paths, needs] = r.split("|");
    return { paths: [...paths.matchAll(/`([^`]+)`/g)].map((m) => m[1]), needs: needs.trim() };
  });
  const flags = (s: string) =>
    new Set([...s.matchAll(/--(allow-\w+|ignore-env|unstable-\w+)/g)].map((m) => m[1]));
  const problems: string[] = [];
  for (const [path, file] of Object.entries(packageJson().exports)) {
    const stated = modulePermissions(await Deno.readTextFile(file));
    if (stated === undefined) {
      problems.push(`${file}: no "Permissions:" in its module doc`);
      continue;
    }
    const row = rows.find((r) =>
      r.paths.includes(path) ||
      (path.startsWith("./telephony/serializers/") &&
        r.paths.includes("./telephony/serializers/<carrier>"))
    );
    if (row === undefined) continue; // the test above reports a missing row
    const docNone = /^(Permissions: none|needs no permission)/.test(stated);
    const rowNone = row.needs.startsWith("nothing");
    if (docNone !== rowNone) {
      problems.push(`${path}: module doc "${stated}" vs table "${row.needs}"`);
    }
    const missingFlags = [...flags(row.needs)].filter((f) => !flags(stated).has(f));
    if (missingFlags.length > 0) {
      problems.push(`${path}: the table names --${missingFlags.join(", --")}, the module doc not`);
    }
  }
  assert.deepEqual(problems, []);
});
