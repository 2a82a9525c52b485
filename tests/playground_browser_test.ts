/**
 * Playground in headless Chromium against a WebRTC echo harness on 127.0.0.1.
 *
 * The harness lives in this file (Deno.serve: the playground's static files plus
 * POST /webrtc/offer through answerWebRtcOffer); each call echoes the caller's audio back and
 * sends a few transcript events. Chromium's microphone is a WAV spoken by espeak-ng.
 *
 * Needs, on top of the test task's flags: `--allow-run=chromium --allow-read=/usr/bin/chromium
 * --allow-sys=homedir,osRelease` (playwright-core checks the executable exists and reads the
 * home directory and OS release at import). Without them, or without /usr/bin/chromium, the
 * test is ignored, saying why. Screenshots go to docs/ when `--allow-write=./docs` is given,
 * else to ./.tmp/.
 */

import assert from "node:assert/strict";
import { Resampler } from "../core/audio/resample.ts";
import { decodeWav, encodeWav } from "../core/audio/wav.ts";
import type { MediaIn } from "../core/seams.ts";
import { answerWebRtcOffer, type WebRtcSession } from "../transports/webrtc.ts";

const CHROMIUM = "/usr/bin/chromium";
const PLAYGROUND = new URL("../server/playground/", import.meta.url);
const SPOKEN = "Hello Flowcat. This is the browser test speaking. Can you hear me?";

/** The page's `window.flowcat` test hook (server/playground/app.js). */
interface PageHook {
  flowcat: {
    state: string;
    transcript: { role: string; text: string; final: boolean }[];
    counters: { inboundPackets: number; inboundBytes: number; events: number };
  };
}

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

/** Per-call record the harness keeps for the assertions. */
interface HarnessCall {
  session: WebRtcSession;
  frames: Int16Array[];
  events: MediaIn["type"][];
  done: Promise<void>;
}

/** Deno.serve with the playground and an echo agent behind POST /webrtc/offer. */
function startHarness(): { server: Deno.HttpServer<Deno.NetAddr>; calls: HarnessCall[] } {
  const calls: HarnessCall[] = [];
  const types: Record<string, string> = {
    "index.html": "text/html; charset=utf-8",
    "app.js": "text/javascript; charset=utf-8",
    "style.css": "text/css; charset=utf-8",
  };
  const server = Deno.serve({ hostname: "127.0.0.1", port: 0, onListen: () => {} }, async (req) => {
    const path = new URL(req.url).pathname;
    if (req.method === "POST" && path === "/webrtc/offer") {
      const body = await req.json() as { sdp?: string };
      const { answerSdp, session } = await answerWebRtcOffer(String(body.sdp), {
        ice: "loopback",
      });
      const call: HarnessCall = { session, frames: [], events: [], done: Promise.resolve() };
      call.done = echo(call);
      calls.push(call);
      return Response.json({ sdp: answerSdp });
    }
    const name = path === "/" ? "index.html" : path.slice(1);
    if (req.method === "GET" && Object.hasOwn(types, name)) {
      const file = await Deno.readFile(new URL(name, PLAYGROUND));
      return new Response(file, { headers: { "content-type": types[name] } });
    }
    return Response.json({ error: "not found" }, { status: 404 });
  });
  return { server, calls };
}

/** Echo the caller; after a second of loud audio, play out a short transcript. */
async function echo(call: HarnessCall): Promise<void> {
  const { session } = call;
  let loud = 0;
  let told = false;
  for (;;) {
    const m = await session.recv();
    if (m === undefined) break;
    call.events.push(m.type);
    if (m.type === "start") {
      session.sendEvent({ type: "state", state: "listening" });
      session.sendEvent({ type: "node", id: "greeting" });
      session.sendEvent({ type: "transcript", role: "bot", text: "Hi! I echo you.", final: true });
    } else if (m.type === "audio") {
      call.frames.push(m.audio.pcm);
      await session.sendAudio(m.audio);
      if (rms(m.audio.pcm) > 500) loud++;
      if (loud >= 50 && !told) {
        told = true;
        session.sendEvent({ type: "transcript", role: "user", text: "hello", final: false });
        session.sendEvent({ type: "transcript", role: "user", text: "hello flowcat", final: true });
        session.sendEvent({ type: "state", state: "speaking" });
        session.sendEvent({ type: "node", id: "echo" });
        session.sendEvent({
          type: "transcript",
          role: "bot",
          text: "You said: hello flowcat",
          final: true,
        });
      }
    } else if (m.type === "stop") break;
  }
  await session.close();
}

function rms(pcm: Int16Array): number {
  let acc = 0;
  for (const s of pcm) acc += s * s;
  return Math.sqrt(acc / Math.max(1, pcm.length));
}

Deno.test({
  name: "playground in Chromium: mic audio reaches the server, echo and transcript reach the page",
  ignore: why !== undefined,
  fn: async () => {
    const base = await Deno.makeTempDir({ dir: "./.tmp", prefix: "playground-" });
    const abs = await Deno.realPath(base);
    // playwright-core writes artifacts under os.tmpdir() and probes WSL files at import
    // unless told it is under test; keep both inside ./.tmp.
    Deno.env.set("TMPDIR", abs);
    Deno.env.set("__IS_WSL_TEST__", "1");
    const { chromium } = await import("playwright-core");
    const wav = await speechWav(abs);
    const { server, calls } = startHarness();
    const ctx = await chromium.launchPersistentContext(`${abs}/profile`, {
      executablePath: CHROMIUM,
      headless: true,
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
      await page.goto(`http://127.0.0.1:${server.addr.port}/`);
      assert.equal(await page.textContent("#conn-text"), "Not connected");
      await page.getByRole("button", { name: "Start call" }).click();
      await page.waitForFunction(
        () => (globalThis as unknown as PageHook).flowcat.state === "connected",
        null,
        {
          timeout: 20_000,
        },
      );
      assert.equal(calls.length, 1);
      const call = calls[0];

      // Both sides of the transcript, the interim user line replaced by its final text.
      await page.waitForFunction(
        () =>
          (globalThis as unknown as PageHook).flowcat.transcript.filter((l) => l.role === "bot")
            .length === 2,
        null,
        { timeout: 20_000 },
      );
      assert.deepEqual(await page.locator(".line.user .text").allTextContents(), [
        "hello flowcat",
      ]);
      assert.deepEqual(await page.locator(".line.bot .text").allTextContents(), [
        "Hi! I echo you.",
        "You said: hello flowcat",
      ]);
      assert.equal(await page.textContent("#node"), "echo");
      assert.equal(await page.textContent("#agent-state"), "speaking");

      // Server side: the espeak speech arrived as 8 kHz frames with speech energy.
      const loud = call.frames.filter((f) => rms(f) > 500).length;
      assert.ok(call.frames.length >= 50, `frames ${call.frames.length}`);
      assert.ok(loud >= 50, `loud frames ${loud} of ${call.frames.length}`);
      assert.equal(call.events[0], "start");

      // Page side: the echoed audio arrived (inbound-rtp packets) and plays in <audio>.
      await page.waitForFunction(
        () => (globalThis as unknown as PageHook).flowcat.counters.inboundPackets > 50,
        null,
        { timeout: 10_000 },
      );
      assert.ok(call.session.packetsSent > 50, `sent ${call.session.packetsSent}`);
      assert.equal(
        await page.$eval(
          "#remote-audio",
          (a) => (a as unknown as { srcObject: unknown }).srcObject !== null,
        ),
        true,
      );

      await screenshots(page);

      // Hang-up ends the server session with stop, and the page shows the end.
      await page.getByRole("button", { name: "Hang up" }).click();
      await call.done;
      assert.equal(call.events.at(-1), "stop");
      assert.equal(call.session.endReason, "hangup");
      await page.waitForFunction(() =>
        (globalThis as unknown as PageHook).flowcat.state === "ended"
      );
      assert.equal(await page.textContent("#conn-text"), "Call ended");
      assert.equal(await page.isEnabled("#start"), true);
    } finally {
      await ctx.close();
      for (const c of calls) await c.session.close();
      await server.shutdown();
      await Deno.remove(base, { recursive: true });
    }
  },
});

/** Desktop and 390 px phone screenshots of the live call, for the README. */
async function screenshots(page: import("playwright-core").Page): Promise<void> {
  const docs = Deno.permissions.querySync({ name: "write", path: "./docs" }).state === "granted";
  const dir = docs ? "./docs" : "./.tmp";
  await Deno.writeFile(`${dir}/playground.png`, await page.screenshot());
  await page.setViewportSize({ width: 390, height: 844 });
  await Deno.writeFile(`${dir}/playground-phone.png`, await page.screenshot());
  await page.setViewportSize({ width: 1280, height: 860 });
}
