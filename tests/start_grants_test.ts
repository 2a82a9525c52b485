/**
 * `deno task start` runs the server under exactly the flags `--print-permissions` prints for
 * its config: read from the running server's own command line (ps), for the echo default
 * and for a cascaded config with two cloud providers and a recording directory outside the
 * project. What is not granted (deno.json, an unlisted host) is denied by Deno itself.
 */
import assert from "node:assert/strict";
import { freeEvenPortBase, freeUdpPort, hasSipp, runSipp, SIPP_SCENARIOS } from "./_sipp.ts";
import { startTaskArgs } from "./_server_child.ts";

/** Whether `ps` can be run here (Deno reads /proc only with --allow-all). */
const canPs = Deno.permissions.querySync({ name: "run", command: "ps" }).state === "granted" &&
  (() => {
    try {
      return new Deno.Command("ps", { args: ["-p", "1"], stdout: "null" }).outputSync().success;
    } catch {
      return false;
    }
  })();
if (!canPs) console.warn("start grants tests ignored: needs ps (procps) and --allow-run=ps");

/**
 * Command lines (as words) of the running children of `parent` whose command line has
 * `marker`: other servers on this machine (another test, another checkout) are not ours.
 */
function processesWith(marker: string, parent: number): string[][] {
  const out = new Deno.Command("ps", { args: ["-eo", "ppid,args", "--no-headers", "-ww"] })
    .outputSync();
  return new TextDecoder().decode(out.stdout).split("\n")
    .map((line) => line.trim().split(/\s+/))
    .filter(([ppid]) => Number(ppid) === parent)
    .map((words) => words.slice(1))
    .filter((argv) => argv.includes(marker));
}

/** Flags of a `deno run` argv, up to the entry module. */
function flagsOf(argv: string[]): string[] {
  const run = argv.indexOf("run");
  const entry = argv.indexOf("server/main.ts");
  return argv.slice(run + 1, entry).filter((f) => f !== "--no-prompt");
}

/**
 * Start `deno task start <args>`, wait for the server child (and, when given, for `until` in its
 * output), return its flags and output; then stop it with SIGTERM.
 */
async function runningFlags(
  args: string[],
  env: Record<string, string>,
  until?: RegExp,
): Promise<string[]> {
  const child = new Deno.Command("deno", {
    args: [...startTaskArgs(), ...args],
    stdout: "piped",
    stderr: "piped",
    env,
  }).spawn();
  const dec = new TextDecoder();
  let text = "";
  const pump = (async () => {
    for await (const c of child.stdout) text += dec.decode(c);
  })();
  const errs = (async () => {
    for await (const c of child.stderr) text += dec.decode(c);
  })();
  try {
    const deadline = Date.now() + 20_000;
    while (!/agent server on/.test(text)) {
      if (Date.now() > deadline) throw new Error(`server did not start:\n${text}`);
      await new Promise((r) => setTimeout(r, 50));
    }
    const mine = processesWith("server/main.ts", child.pid).filter((a) =>
      args.every((x) => a.includes(x))
    );
    assert.equal(mine.length, 1, JSON.stringify(mine));
    while (until !== undefined && !until.test(text)) {
      if (Date.now() > deadline) throw new Error(`never saw ${until}:\n${text}`);
      await new Promise((r) => setTimeout(r, 50));
    }
    return flagsOf(mine[0]);
  } finally {
    child.kill("SIGTERM");
    await child.status;
    await pump;
    await errs;
  }
}

/** What `--print-permissions` prints for the same arguments, as flags. */
async function printedFlags(args: string[], env: Record<string, string>): Promise<string[]> {
  const out = await new Deno.Command("deno", {
    args: [...startTaskArgs(), ...args, "--print-permissions"],
    stdout: "piped",
    env,
  }).output();
  const line = new TextDecoder().decode(out.stdout).trim();
  const words = line.split(" ").map((w) => w.replace(/^'(.*)'$/, "$1"));
  return words.slice(words.indexOf("run") + 1, words.indexOf("server/main.ts"));
}

function grant(flags: string[], name: string): string[] {
  const f = flags.find((x) => x.startsWith(`--allow-${name}=`));
  return f === undefined ? [] : f.slice(`--allow-${name}=`.length).split(",");
}

Deno.test({
  name: "deno task start: the echo default runs under exactly its printed flags",
  ignore: !canPs,
  fn: async () => {
    const args = ["--port", "0"];
    const env = { NO_COLOR: "1" };
    const running = await runningFlags(args, env);
    assert.deepEqual(running, await printedFlags(args, env));
    // Nothing beyond the config: no provider host, no key, no project-wide read.
    assert.ok(!running.includes("--allow-all") && !running.includes("-A"));
    assert.ok(!grant(running, "read").includes("."), "deno.json and the sources are not readable");
    assert.ok(!grant(running, "net").some((h) => /googleapis|openai|anthropic/.test(h)));
    assert.ok(!grant(running, "env").some((e) => e.endsWith("_API_KEY")));
  },
});

Deno.test({
  name: "deno task start --workers 2: the threads load their modules under the printed flags",
  ignore: !canPs,
  fn: async () => {
    const args = ["--port", "0", "--workers", "2"];
    const env = { NO_COLOR: "1" };
    const running = await runningFlags(args, env, /2 workers on one port/);
    assert.deepEqual(running, await printedFlags(args, env));
    const read = grant(running, "read");
    assert.ok(read.includes("server") && read.includes("core"), read.join(","));
    assert.ok(!read.includes(".") && !read.includes("deno.json"), read.join(","));
  },
});

Deno.test({
  name: "deno task start: a cascaded cloud config with an outside recording dir",
  ignore: !canPs,
  fn: async () => {
    const dir = await Deno.makeTempDir({ prefix: "flowcat-grants-" }); // outside the project
    try {
      await Deno.copyFile("examples/echo_graph.yaml", `${dir}/echo_graph.yaml`);
      const cfg = `${dir}/agent.yaml`;
      await Deno.writeTextFile(
        cfg,
        `agent: { graph: echo_graph.yaml }
pipeline: cascaded
providers:
  stt: { name: deepgram }
  llm: { name: openai }
  tts: { name: espeak }
recording: { enabled: true, dir: ${dir}/rec }
`,
      );
      const args = ["--config", cfg, "--port", "0"];
      const env = { NO_COLOR: "1", DEEPGRAM_API_KEY: "dg-test", OPENAI_API_KEY: "sk-test" };
      const running = await runningFlags(args, env);
      assert.deepEqual(running, await printedFlags(args, env));
      const net = grant(running, "net");
      assert.ok(
        net.includes("api.deepgram.com:443") && net.includes("api.openai.com:443"),
        net.join(),
      );
      assert.ok(!net.some((h) => h.includes("googleapis")), "an unlisted host is not granted");
      assert.deepEqual(grant(running, "write"), [`${dir}/rec`]);
      assert.ok(grant(running, "env").includes("OPENAI_API_KEY"));
      assert.ok(grant(running, "read").includes(cfg));
      assert.ok(!grant(running, "read").includes("."));
    } finally {
      await Deno.remove(dir, { recursive: true });
    }
  },
});

Deno.test({
  name: "deno task start: a SIP trunk on another address registers under the computed flags",
  ignore: !canPs || !hasSipp(),
  fn: async () => {
    const dir = await Deno.makeTempDir({ prefix: "flowcat-sip-grants-" });
    const registrarPort = freeUdpPort();
    // sipp on 127.0.0.2 stands in for the trunk's registrar on another host.
    const sipp = runSipp([
      "-sf",
      SIPP_SCENARIOS + "registrar.xml",
      "-i",
      "127.0.0.2",
      "-p",
      String(registrarPort),
      "-m",
      "1",
    ]);
    try {
      await Deno.copyFile("examples/echo_graph.yaml", `${dir}/echo_graph.yaml`);
      const cfg = `${dir}/agent.yaml`;
      await Deno.writeTextFile(
        cfg,
        `agent: { graph: echo_graph.yaml }
providers: { realtime: { name: echo, options: { tts: none } } }
playground: { enabled: false }
telephony:
  sip:
    server: "sip:127.0.0.2:${registrarPort}"
    login: alice
    password_env: SIP_PASSWORD
    caller_id: "+15551230000"
    sip_port: ${freeUdpPort()}
    rtp_port_base: ${freeEvenPortBase(4)}
`,
      );
      const args = ["--config", cfg, "--port", "0"];
      const env = { NO_COLOR: "1", SIP_PASSWORD: "s3cret" };
      // Registered, then refreshed (the registrar grants 2 s), before the stop un-registers.
      const running = await runningFlags(args, env, /sip registered[^]*sip registered/);
      assert.deepEqual(running, await printedFlags(args, env));
      assert.ok(grant(running, "net").includes(`127.0.0.2:${registrarPort}`), running.join(" "));
      assert.ok(grant(running, "env").includes("SIP_PASSWORD"));
      // SIGTERM drained the server, which un-registered: the registrar's whole scenario ran.
      const res = await sipp.done;
      assert.equal(res.code, 0, res.stdout.slice(-1500));
    } finally {
      await Deno.remove(dir, { recursive: true });
    }
  },
});
