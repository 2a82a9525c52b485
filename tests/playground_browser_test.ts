/**
 * The playground in headless Chromium against the real agent server on the default config
 * (examples/agent.yaml: the local echo model, its greeting spoken by espeak-ng), on 127.0.0.1.
 * Chromium's microphone is a WAV spoken by espeak-ng.
 *
 * Needs, on top of the test task's flags: `--allow-run=chromium --allow-read=/usr/bin/chromium
 * --allow-sys=homedir,osRelease` (playwright-core checks the executable exists and reads the
 * home directory and OS release at import). Without them, or without /usr/bin/chromium, the
 * test is ignored, saying why. Screenshots go to docs/ with `FLOWCAT_UPDATE_SCREENSHOTS=1`
 * (and `--allow-write=./docs`, which the test task has), else to ./.tmp/.
 */

import assert from "node:assert/strict";
import { Resampler } from "../core/audio/resample.ts";
import { decodeWav, encodeWav } from "../core/audio/wav.ts";
import { silentLogger } from "../core/log.ts";
import { createAgentServer } from "../server/app.ts";
import { loadConfig } from "../server/config.ts";
import { until } from "./_core_helpers.ts";

const CHROMIUM = "/usr/bin/chromium";
const SPOKEN = "Hello Flowcat. This is the browser test speaking. Can you hear me?";

/** Why the browser test cannot run here, or undefined when it can. */
function blocker(): string | undefined {
  const q = (d: Deno.PermissionDescriptor) => Deno.permissions.querySync(d).state === "granted";
  if (!q({ name: "read", path: CHROMIUM })) return `needs --allow-read=${CHROMIUM}`;
  try {
    Deno.statSync(CHROMIUM);
  } catch {
    return `${CHROMIUM} missing (apt-get install -y chromium)`;
  }
  if (!q({ name: "run", command: CHROMIUM })) return "needs --allow-run=chromium";
  if (!q({ name: "run", command: "espeak-ng" })) return "needs --allow-run=espeak-ng";
  if (!q({ name: "sys", kind: "homedir" }) || !q({ name: "sys", kind: "osRelease" })) {
    return "needs --allow-sys=homedir,osRelease (playwright-core)";
  }
  return undefined;
}

const why = blocker();
if (why) console.warn(`playground browser test ignored: ${why}`);

/** Speech from espeak-ng at 48 kHz with silence around it, written as a WAV under `dir`. */
async function speechWav(dir: string): Promise<string> {
  const out = await new Deno.Command("espeak-ng", {
    args: ["-s", "150", "--stdout", SPOKEN],
    stdout: "piped",
    stderr: "null",
  }).output();
  assert.ok(out.success, "espeak-ng failed");
  const voice = decodeWav(out.stdout);
  const pcm48 = new Resampler(voice.sampleRate, 48000).process(voice.pcm);
  const padded = new Int16Array(48000 * 0.3 + pcm48.length + 48000 * 1.2);
  padded.set(pcm48, 48000 * 0.3);
  const path = `${dir}/speech.wav`;
  await Deno.writeFile(path, encodeWav(padded, 48000));
  return path;
}

/** The agent server on the default config, ICE on loopback (Chromium gets the loopback flag). */
async function startServer() {
  const loaded = await loadConfig("examples/agent.yaml");
  if (!loaded.ok) throw new Error(JSON.stringify(loaded.problems));
  const app = await createAgentServer({
    config: loaded.config,
    env: () => undefined,
    logger: silentLogger,
    webrtc: { ice: "loopback" },
  });
  const server = Deno.serve({ hostname: "127.0.0.1", port: 0, onListen: () => {} }, app.handler);
  return { app, server };
}

Deno.test({
  name:
    "playground on the default config: mic audio in, greeting and echo out, transcript, hang-up",
  ignore: why !== undefined,
  fn: async () => {
    const base = await Deno.makeTempDir({ dir: "./.tmp", prefix: "playground-" });
    const abs = await Deno.realPath(base);
    // playwright-core writes artifacts under os.tmpdir(), and at import probes WSL files in
    // /proc (which Deno grants only with --allow-all) unless told it is under test.
    const savedEnv = saveEnv("TMPDIR", "__IS_WSL_TEST__");
    Deno.env.set("TMPDIR", abs);
    Deno.env.set("__IS_WSL_TEST__", "1");
    const { chromium } = await import("playwright-core");
    const wav = await speechWav(abs);
    const { app, server } = await startServer();
    const ctx = await chromium.launchPersistentContext(`${abs}/profile`, {
      executablePath: CHROMIUM,
      headless: true,
      // The server's CSP forbids eval; playwright's string predicates need it.
      bypassCSP: true,
      viewport: { width: 1280, height: 860 },
      args: [
        "--no-sandbox",
        "--disable-gpu",
        "--disable-quic",
        "--no-first-run",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
        "--autoplay-policy=no-user-gesture-required",
        "--use-fake-ui-for-media-stream",
        "--use-fake-device-for-media-stream",
        `--use-file-for-fake-audio-capture=${wav}`,
        "--allow-loopback-in-peer-connection",
      ],
    });
    try {
      const page = ctx.pages()[0] ?? await ctx.newPage();
      // The server's SDP answers, to see which codec the real browser got.
      const answers: string[] = [];
      page.on("response", async (r) => {
        if (r.url().endsWith("/webrtc/offer")) answers.push(String((await r.json()).sdp));
      });
      await page.goto(`http://127.0.0.1:${server.addr.port}/`);
      assert.equal(await page.textContent("#conn-text"), "Not connected");
      let run = await startCall(page, app, "Start call");
      // Chromium offers Opus first: the call is wideband (Opus, its PT 111), PCMU the fallback.
      await until(() => answers.length > 0, 5000, "the SDP answer");
      assert.match(answers[0], /^m=audio \d+ \S+ 111 0 8\r?$/m);
      assert.match(answers[0], /a=rtpmap:111 opus\/48000\/2/);
      // The greeting (espeak-ng) and the echo of the caller's turn reach the page.
      let seen = await waitForEcho(page);
      if (seen !== undefined) {
        // Seen rarely on loaded CI machines and never reproduced locally; keep the evidence and
        // try one more call, so a slow Chromium does not fail the suite but a broken path does.
        console.warn(`playground: no greeting+echo in ${ECHO_WAIT_MS} ms; page saw ${seen}`);
        await page.getByRole("button", { name: "Hang up" }).click();
        await until(() => app.calls.active === 0, 10_000, "first call gone");
        run = await startCall(page, app, "Call again");
        seen = await waitForEcho(page);
        if (seen !== undefined) {
          throw new Error(`no greeting+echo in two calls; page saw ${seen}`);
        }
      }
      const bot = await page.locator(".line.bot .text").allTextContents();
      assert.match(bot[0], /Flowcat echo agent/);
      assert.ok(bot.some((t) => /^\(echoing \d/.test(t)), JSON.stringify(bot));
      const user = await page.locator(".line.user .text").allTextContents();
      assert.match(user[0], /^\(you spoke for \d/);
      assert.equal(await page.textContent("#node"), "chat");
      await page.waitForFunction("flowcat.counters.inboundPackets > 50", null, {
        timeout: 10_000,
      });
      assert.equal(
        await page.$eval(
          "#remote-audio",
          (a) => (a as unknown as { srcObject: unknown }).srcObject !== null,
        ),
        true,
      );

      await screenshots(page);

      // Hang-up ends the call on the server, which finalizes it once.
      await page.getByRole("button", { name: "Hang up" }).click();
      await until(() => run.finalize !== undefined, 10_000, "call finalized");
      const usage = run.finalize!.usage;
      assert.equal(usage.endedBy, "end: caller hung up");
      // The echo model counts the 20 ms caller frames it heard: the microphone reached it.
      assert.ok(Number(usage.promptTokens) >= 50, `frames heard: ${usage.promptTokens}`);
      assert.ok(run.finalize!.transcriptUrl, "transcript stored");
      await page.waitForFunction("flowcat.state === 'ended'");
      assert.equal(await page.textContent("#conn-text"), "Call ended");
      await until(() => app.calls.active === 0, 5000, "call gone");
    } finally {
      await ctx.close().catch(() => {});
      await app.calls.drain(1000);
      await server.shutdown();
      await removeDir(base);
      savedEnv();
    }
  },
});

const ECHO_WAIT_MS = 30_000;

/** Click the call button, wait for the media to connect and the call to run on the server. */
async function startCall(
  page: import("playwright-core").Page,
  app: Awaited<ReturnType<typeof createAgentServer>>,
  button: string,
) {
  await page.getByRole("button", { name: button }).click();
  await page.waitForFunction("flowcat.state === 'connected'", null, { timeout: 20_000 });
  await until(() => app.calls.active === 1, 5000, "call running on the server");
  const run = app.sessions.active().at(-1)!;
  assert.equal(run.origin, "browser");
  return run;
}

/** Wait for the greeting and one echoed turn; undefined when seen, else what the page saw. */
async function waitForEcho(page: import("playwright-core").Page): Promise<string | undefined> {
  try {
    await page.waitForFunction(
      "flowcat.transcript.some((l) => l.role === 'user') && " +
        "flowcat.transcript.filter((l) => l.role === 'bot').length >= 2",
      null,
      { timeout: ECHO_WAIT_MS },
    );
    return undefined;
  } catch {
    return String(
      await page.evaluate(
        "JSON.stringify({state: flowcat.state, channel: flowcat.channelState, " +
          "transcript: flowcat.transcript, counters: flowcat.counters, error: flowcat.error})",
      ).catch(() => "(page gone)"),
    );
  }
}

/** Remember the given environment variables; the returned function puts them back. */
function saveEnv(...names: string[]): () => void {
  const saved = names.map((n) => [n, Deno.env.get(n)] as const);
  return () => {
    for (const [n, v] of saved) v === undefined ? Deno.env.delete(n) : Deno.env.set(n, v);
  };
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

/** Desktop and 390 px phone screenshots of the live call, for the README. */
async function screenshots(page: import("playwright-core").Page): Promise<void> {
  // docs/ is refreshed on request only, so an ordinary test run leaves the tree clean.
  const docs = Deno.env.get("FLOWCAT_UPDATE_SCREENSHOTS") === "1" &&
    Deno.permissions.querySync({ name: "write", path: "./docs" }).state === "granted";
  const dir = docs ? "./docs" : "./.tmp";
  await Deno.writeFile(`${dir}/playground.png`, await page.screenshot());
  await page.setViewportSize({ width: 390, height: 844 });
  await Deno.writeFile(`${dir}/playground-phone.png`, await page.screenshot());
  await page.setViewportSize({ width: 1280, height: 860 });
}
