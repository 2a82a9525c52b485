/**
 * The playground as a new user meets it: the server started as `deno task start` starts it
 * (server/launch.ts under the task's own flags, the server under the config's computed ones),
 * and headless Chromium with a fake microphone and nothing a person's browser lacks (no
 * `--allow-loopback-in-peer-connection`, no insecure-origin exceptions). The browser runs as a
 * child (tests/_browser_call.ts) so it can also sit in another network namespace, standing in
 * for another host of the LAN.
 *
 * Needs chromium, espeak-ng and, for the LAN case, `ip netns` (root). Missing pieces make the
 * tests ignored, saying why.
 */

import assert from "node:assert/strict";
import { Resampler } from "../core/audio/resample.ts";
import { decodeWav, encodeWav } from "../core/audio/wav.ts";
import type { BrowserCallReport, BrowserCallRequest } from "./_browser_call.ts";
import { startTaskArgs } from "./_server_child.ts";

const CHROMIUM = "/usr/bin/chromium";
const SPOKEN = "Hello Flowcat. This is the browser test speaking. Can you hear me?";

/** Why the browser tests cannot run here, or undefined when they can. */
function blocker(): string | undefined {
  const q = (d: Deno.PermissionDescriptor) => Deno.permissions.querySync(d).state === "granted";
  if (!q({ name: "read", path: CHROMIUM })) return `needs --allow-read=${CHROMIUM}`;
  try {
    Deno.statSync(CHROMIUM);
  } catch {
    return `${CHROMIUM} missing (apt-get install -y chromium)`;
  }
  for (const command of ["deno", "espeak-ng"]) {
    if (!q({ name: "run", command })) return `needs --allow-run=${command}`;
  }
  return undefined;
}

const why = blocker();
if (why) console.warn(`playground browser tests ignored: ${why}`);

/** A WAV under `dir`: `leadSeconds` of silence, espeak-ng's speech, 1.5 s of silence. */
async function speechWav(dir: string, leadSeconds: number): Promise<string> {
  const out = await new Deno.Command("espeak-ng", {
    args: ["-s", "150", "--stdout", SPOKEN],
    stdout: "piped",
    stderr: "null",
  }).output();
  assert.ok(out.success, "espeak-ng failed");
  const voice = decodeWav(out.stdout);
  const pcm48 = new Resampler(voice.sampleRate, 48000).process(voice.pcm);
  const lead = Math.round(48000 * leadSeconds);
  const padded = new Int16Array(lead + pcm48.length + 48000 * 1.5);
  padded.set(pcm48, lead);
  const path = `${dir}/speech-${leadSeconds}.wav`;
  await Deno.writeFile(path, encodeWav(padded, 48000));
  return path;
}

/** Prefix that runs a command inside network namespace `ns` (or nothing). */
function inNs(ns: string | undefined, cmd: string, args: string[]): [string, string[]] {
  return ns === undefined ? [cmd, args] : ["ip", ["netns", "exec", ns, cmd, ...args]];
}

/** A running `deno task start` and the address its banner printed. */
interface StartedServer {
  url: string;
  output: () => string;
  stop: () => Promise<void>;
}

/** Start the server as `deno task start` does, with `args`; resolves once it listens. */
async function startServer(
  args: string[],
  opts: { ns?: string; env?: Record<string, string> } = {},
): Promise<StartedServer> {
  const [cmd, argv] = inNs(opts.ns, "deno", [...startTaskArgs(), ...args]);
  const child = new Deno.Command(cmd, {
    args: argv,
    stdout: "piped",
    stderr: "piped",
    env: { NO_COLOR: "1", ...opts.env },
  }).spawn();
  let text = "";
  const dec = new TextDecoder();
  const collect = async (s: ReadableStream<Uint8Array>) => {
    for await (const chunk of s) text += dec.decode(chunk, { stream: true });
  };
  const pumps = Promise.all([collect(child.stdout), collect(child.stderr)]);
  const stop = async () => {
    try {
      child.kill("SIGTERM");
    } catch { /* gone */ }
    await child.status;
    await pumps;
  };
  const deadline = Date.now() + 20_000;
  while (Date.now() < deadline) {
    const m = text.match(/agent server on (https?:\/\/\S+?\/) /);
    if (m) return { url: m[1], output: () => text, stop };
    await new Promise((r) => setTimeout(r, 50));
  }
  await stop();
  throw new Error(`server did not start:\n${text}`);
}

/** Run one browser call (tests/_browser_call.ts), inside `ns` when given. */
async function browserCall(req: BrowserCallRequest, ns?: string): Promise<BrowserCallReport> {
  const tmp = await Deno.realPath("./.tmp");
  const flags = [
    "run",
    `--allow-read=.,${CHROMIUM}`,
    "--allow-write=./.tmp,./docs",
    `--allow-run=chromium,${CHROMIUM}`,
    "--allow-env",
    "--allow-sys=homedir,osRelease",
    "tests/_browser_call.ts",
    JSON.stringify(req),
  ];
  const [cmd, argv] = inNs(ns, "deno", flags);
  // playwright-core writes under os.tmpdir() and, unless told it is under test, probes WSL
  // files in /proc at import.
  const out = await new Deno.Command(cmd, {
    args: argv,
    stdout: "piped",
    stderr: "piped",
    env: { TMPDIR: tmp, __IS_WSL_TEST__: "1", NO_COLOR: "1" },
  }).output();
  const text = new TextDecoder().decode(out.stdout).trim();
  const last = text.split("\n").at(-1) ?? "";
  try {
    return JSON.parse(last);
  } catch {
    throw new Error(
      `browser driver failed (${out.code}):\n${text}\n${new TextDecoder().decode(out.stderr)}`,
    );
  }
}

/** A scratch directory under ./.tmp, removed (with retries for Chromium's profile) after. */
async function withScratch(fn: (dir: string) => Promise<void>): Promise<void> {
  const dir = await Deno.realPath(await Deno.makeTempDir({ dir: "./.tmp", prefix: "browser-" }));
  try {
    await fn(dir);
  } finally {
    await removeDir(dir);
  }
}

/** Remove `dir`, retrying while an exiting Chromium may still write into its profile. */
async function removeDir(dir: string): Promise<void> {
  for (let attempt = 0;; attempt++) {
    try {
      return await Deno.remove(dir, { recursive: true });
    } catch (err) {
      if (attempt >= 10) throw err;
      await new Promise((r) => setTimeout(r, 200));
    }
  }
}

/** What {@link callOnce} starts: the server's arguments and where each side runs. */
interface CallPlan {
  /** Seconds of silence before the fake microphone speaks. */
  lead: number;
  until: BrowserCallRequest["until"];
  /** `deno task start` arguments; default `--port 0`. */
  args?: string[];
  env?: Record<string, string>;
  serverNs?: string;
  browserNs?: string;
  acceptCert?: boolean;
  /** Where the live call's screenshots go. */
  screenshots?: string;
}

/**
 * Screenshots of the live call go to docs/ (for the README) when FLOWCAT_UPDATE_SCREENSHOTS=1,
 * else to .tmp/, so an ordinary run leaves the tree clean.
 */
const SCREENSHOTS = Deno.env.get("FLOWCAT_UPDATE_SCREENSHOTS") === "1" ? "./docs" : "./.tmp";

/** One browser call against a server started as `deno task start`; `check` sees both. */
async function callOnce(
  dir: string,
  plan: CallPlan,
  check: (r: BrowserCallReport, server: StartedServer) => void | Promise<void>,
): Promise<void> {
  const wav = await speechWav(dir, plan.lead);
  const server = await startServer(plan.args ?? ["--port", "0"], {
    ...(plan.serverNs !== undefined ? { ns: plan.serverNs } : {}),
    ...(plan.env !== undefined ? { env: plan.env } : {}),
  });
  try {
    const r = await browserCall({
      url: server.url,
      wav,
      profile: `${dir}/profile`,
      until: plan.until,
      timeoutMs: 40_000,
      ...(plan.acceptCert ? { acceptCert: true } : {}),
      ...(plan.screenshots !== undefined ? { screenshots: plan.screenshots } : {}),
    }, plan.browserNs);
    await check(r, server);
  } finally {
    await server.stop();
  }
}

/** The checks every successful echo call must pass, whatever the network. */
function assertEchoCall(r: BrowserCallReport, server: StartedServer): void {
  const context = () => `${JSON.stringify(r)}\nserver:\n${server.output()}`;
  assert.ok(r.ok, `call failed: ${r.why}\n${context()}`);
  const bot = r.transcript.filter((l) => l.role === "bot").map((l) => l.text);
  const user = r.transcript.filter((l) => l.role === "user").map((l) => l.text);
  assert.match(bot[0], /Flowcat echo agent/, context());
  assert.ok(bot.some((t) => /^\(echoing \d/.test(t)), context());
  assert.match(user[0], /^\(you spoke for \d/, context());
  // The greeting and the echo were heard: audio energy, not just packets.
  assert.ok(Number(r.counters.inboundPackets) > 50, context());
  assert.ok(Number(r.counters.audioEnergy) > 0.001, `audio energy ${r.counters.audioEnergy}`);
  // Wideband: Chromium offers Opus first and the server takes it.
  assert.equal(String(r.counters.codec).toLowerCase(), "audio/opus", context());
  assert.equal(r.endedState, "ended", context());
  // ICE and DTLS take 100-300 ms here once the browser has the answer (the transport test holds
  // them to 1 s in-process); the bound leaves room for a loaded CI machine.
  console.log(`playground: media connected ${r.connectedAfterAnswerMs} ms after the answer`);
  assert.ok(
    r.connectedAfterAnswerMs! < 2500,
    `connected ${r.connectedAfterAnswerMs} ms after answer`,
  );
}

/** Hang-up: the server ended the call once, because the page hung up. */
async function assertHungUpOnce(server: StartedServer): Promise<void> {
  const deadline = Date.now() + 5000;
  while (!/webrtc: ended/.test(server.output()) && Date.now() < deadline) {
    await new Promise((r) => setTimeout(r, 50));
  }
  const ends = server.output().match(/webrtc: ended .*/g) ?? [];
  assert.equal(ends.length, 1, server.output());
  assert.match(ends[0], /"reason":"hangup"/);
}

Deno.test({
  name: "playground on 127.0.0.1 under `deno task start`: connects, greets, echoes, hangs up",
  ignore: why !== undefined,
  sanitizeResources: false,
  sanitizeOps: false,
  fn: () =>
    withScratch((dir) =>
      // The caller speaks after the greeting (about 5 s, the first one a little later), so no
      // barge-in here.
      callOnce(dir, { lead: 8, until: "echo", screenshots: SCREENSHOTS }, async (r, server) => {
        assertEchoCall(r, server);
        assert.ok(r.connectedAfterClickMs! < 5000, `connected after ${r.connectedAfterClickMs}`);
        await assertHungUpOnce(server);
      })
    ),
});

/** examples/agent.yaml's greeting, with its seed variable. */
const GREETING = "Hi friend! This is the Flowcat echo agent. Say something and I will say it back.";

Deno.test({
  name: "playground: talking over the greeting cuts its line to what was heard, marked",
  ignore: why !== undefined,
  sanitizeResources: false,
  sanitizeOps: false,
  fn: () =>
    withScratch((dir) =>
      // The caller starts speaking 0.3 s into the greeting.
      callOnce(dir, { lead: 0.3, until: "interrupted" }, (r, server) => {
        const context = `${JSON.stringify(r)}\nserver:\n${server.output()}`;
        assert.ok(r.ok, `call failed: ${r.why}\n${context}`);
        const greeting = r.transcript[0];
        assert.equal(greeting.role, "bot", context);
        assert.equal(greeting.interrupted, true, context);
        assert.ok(GREETING.startsWith(greeting.text), context);
        assert.ok(greeting.text.length < GREETING.length - 20, `heard: "${greeting.text}"`);
        // The caller's turn was heard and answered after the cut.
        assert.ok(r.transcript.some((l) => l.role === "user"), context);
      })
    ),
});

Deno.test({
  name: "playground: a model that cannot connect is shown on the page within 1 s",
  ignore: why !== undefined,
  sanitizeResources: false,
  sanitizeOps: false,
  fn: () =>
    withScratch(async (dir) => {
      // A port nothing listens on: the model's connection is refused.
      const l = Deno.listen({ hostname: "127.0.0.1", port: 0 });
      const port = l.addr.port;
      l.close();
      const config = `${dir}/agent.yaml`;
      const base = await Deno.readTextFile("examples/agent.yaml");
      await Deno.copyFile("examples/echo_graph.yaml", `${dir}/echo_graph.yaml`);
      await Deno.writeTextFile(
        config,
        base.replace(/^ {4}name: echo$/m, `    name: gemini\n    url: ws://127.0.0.1:${port}/ws`),
      );
      const plan: CallPlan = {
        lead: 1,
        until: "failed",
        args: ["--config", config, "--port", "0"],
        env: { GEMINI_API_KEY: "test-key-not-real" },
      };
      await callOnce(dir, plan, (r, server) => {
        const context = `${JSON.stringify(r)}\nserver:\n${server.output()}`;
        assert.ok(r.ok, context);
        assert.equal(r.state, "failed");
        assert.match(r.error ?? "", /could not connect/, context);
        assert.ok(r.failedAfterAnswerMs! < 1000, `shown ${r.failedAfterAnswerMs} ms after answer`);
        assert.equal(r.canRetry, true, "the page offers to call again");
        assert.doesNotMatch(server.output(), /test-key-not-real/, "the key is never logged");
      });
    }),
});

/** Whether `ip netns` works here (root, a kernel that allows namespaces). */
async function netnsBlocker(): Promise<string | undefined> {
  const q = (command: string) =>
    Deno.permissions.querySync({ name: "run", command }).state === "granted";
  if (!q("ip") || !q("openssl")) return "needs --allow-run=ip,openssl";
  try {
    const name = `fcprobe${Deno.pid}`;
    const add = await new Deno.Command("ip", { args: ["netns", "add", name], stderr: "piped" })
      .output();
    if (!add.success) return `ip netns refused: ${new TextDecoder().decode(add.stderr).trim()}`;
    await new Deno.Command("ip", { args: ["netns", "del", name] }).output();
    return undefined;
  } catch (err) {
    return `ip netns unavailable: ${err}`;
  }
}

async function run(cmd: string, args: string[]): Promise<void> {
  const out = await new Deno.Command(cmd, { args, stdout: "null", stderr: "piped" }).output();
  if (!out.success) {
    throw new Error(`${cmd} ${args.join(" ")}: ${new TextDecoder().decode(out.stderr)}`);
  }
}

/**
 * Two hosts of one LAN: namespaces `srv` and `web` joined by a veth pair, with addresses
 * `<net>.1` and `<net>.2` in a /24 of their own. Returns a teardown.
 */
async function makeLan(srv: string, web: string, net: string): Promise<() => Promise<void>> {
  const a = `fcs${Deno.pid}`, b = `fcw${Deno.pid}`;
  const teardown = async () => {
    for (const ns of [srv, web]) {
      await new Deno.Command("ip", { args: ["netns", "del", ns], stderr: "null" }).output();
    }
  };
  try {
    await run("ip", ["netns", "add", srv]);
    await run("ip", ["netns", "add", web]);
    await run("ip", ["link", "add", a, "type", "veth", "peer", "name", b]);
    await run("ip", ["link", "set", a, "netns", srv]);
    await run("ip", ["link", "set", b, "netns", web]);
    for (const [ns, dev, host] of [[srv, a, 1], [web, b, 2]] as const) {
      // IPv4 only: a link-local IPv6 address appearing later would make Chromium see a
      // network change in the middle of the test.
      await run("ip", ["netns", "exec", ns, "sysctl", "-qw", "net.ipv6.conf.all.disable_ipv6=1"]);
      await run("ip", ["-n", ns, "addr", "add", `${net}.${host}/24`, "dev", dev]);
      await run("ip", ["-n", ns, "link", "set", dev, "up"]);
      await run("ip", ["-n", ns, "link", "set", "lo", "up"]);
    }
  } catch (err) {
    await teardown();
    throw err;
  }
  return teardown;
}

const lanWhy = why ?? await netnsBlocker();
if (lanWhy && !why) console.warn(`playground LAN browser test ignored: ${lanWhy}`);

Deno.test({
  name: "playground from another host of the LAN (network namespaces), over https",
  ignore: lanWhy !== undefined,
  sanitizeResources: false,
  sanitizeOps: false,
  fn: () =>
    withScratch(async (dir) => {
      const net = `10.231.${20 + (Deno.pid % 200)}`;
      const srv = `fcsrv${Deno.pid}`, web = `fcweb${Deno.pid}`;
      // A self-signed certificate for the server's LAN address: the user accepts it once.
      await run("openssl", [
        "req",
        "-x509",
        "-newkey",
        "ec",
        "-pkeyopt",
        "ec_paramgen_curve:prime256v1",
        "-nodes",
        "-days",
        "1",
        "-subj",
        "/CN=flowcat-test",
        "-addext",
        `subjectAltName=IP:${net}.1`,
        "-keyout",
        `${dir}/key.pem`,
        "-out",
        `${dir}/cert.pem`,
      ]);
      const teardown = await makeLan(srv, web, net);
      try {
        const args = ["--host", `${net}.1`, "--port", "0"];
        args.push("--tls-cert", `${dir}/cert.pem`, "--tls-key", `${dir}/key.pem`);
        const plan: CallPlan = {
          lead: 6,
          until: "echo",
          args,
          serverNs: srv,
          browserNs: web,
          acceptCert: true,
        };
        await callOnce(dir, plan, async (r, server) => {
          const url = new RegExp(`^https://${net.replaceAll(".", "\\.")}\\.1:\\d+/$`);
          assert.match(server.url, url);
          assertEchoCall(r, server);
          await assertHungUpOnce(server);
        });
      } finally {
        await teardown();
      }
    }),
});
