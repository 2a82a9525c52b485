/**
 * `deno task start` is server/launch.ts: it computes the config's flags and runs the server
 * under them. These tests check the argv it builds and its answers to user mistakes; the
 * playground browser test runs the whole thing.
 */
import assert from "node:assert/strict";
import { launchArgs } from "../server/launch.ts";

/** Capture console output while `fn` runs. */
async function quiet<T>(fn: () => Promise<T>): Promise<{ value: T; out: string; err: string }> {
  const log = console.log, error = console.error;
  let out = "", err = "";
  console.log = (...a: unknown[]) => void (out += a.join(" ") + "\n");
  console.error = (...a: unknown[]) => void (err += a.join(" ") + "\n");
  try {
    return { value: await fn(), out, err };
  } finally {
    console.log = log;
    console.error = error;
  }
}

Deno.test("launch: the server runs under the config's flags, no prompt, args passed on", async () => {
  const { value } = await quiet(() => launchArgs(["--port", "0"]));
  assert.ok(Array.isArray(value), String(value));
  const argv = value as string[];
  assert.deepEqual(argv.slice(0, 2), ["run", "--no-prompt"]);
  const main = argv.indexOf("server/main.ts");
  assert.ok(main > 0);
  assert.deepEqual(argv.slice(main + 1), ["--port", "0"]);
  const flags = argv.slice(2, main);
  assert.ok(!flags.some((f) => f === "-A" || f === "--allow-all"), flags.join(" "));
  const net = flags.find((f) => f.startsWith("--allow-net="));
  assert.ok(net, "network scoped");
  // The echo config names no provider: no provider host, no key variable.
  assert.doesNotMatch(net, /googleapis|openai/);
  const env = flags.find((f) => f.startsWith("--allow-env=")) ?? "";
  assert.doesNotMatch(env, /API_KEY/);
  assert.ok(flags.includes("--ignore-env"));
});

Deno.test("launch: --help, a bad flag and a broken config never start the server", async () => {
  const help = await quiet(() => launchArgs(["--help"]));
  assert.equal(help.value, 0);
  assert.match(help.out, /Usage: deno task start/);
  const bad = await quiet(() => launchArgs(["--bogus"]));
  assert.equal(bad.value, 2);
  assert.match(bad.err, /^flowcat: .*--bogus/);
  const missing = await quiet(() => launchArgs(["--config", "does/not/exist.yaml"]));
  assert.equal(missing.value, 2);
  assert.doesNotMatch(missing.err, /\n\s+at /, "no stack trace");
  const printed = await quiet(() => launchArgs(["--print-permissions"]));
  assert.equal(printed.value, 0);
  assert.match(
    printed.out,
    /^(deno|npx -y deno@[\d.]+) run .* server\/main\.ts --config examples\/agent\.yaml\n$/,
  );
});
