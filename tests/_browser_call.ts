/**
 * One playground call in headless Chromium, as a person's browser makes it: no loopback or
 * insecure-origin flags, a fake microphone playing a WAV. Run as a child process (so a test can
 * start it inside another network namespace) and prints one JSON report on its last line.
 *
 * ```sh
 * deno run <flags> tests/_browser_call.ts '{"url":"http://127.0.0.1:6210/","wav":"a.wav",
 *   "profile":".tmp/p","until":"echo"}'
 * ```
 *
 * `until`:
 * - `"echo"`: wait for the greeting and one echoed caller turn, then hang up.
 * - `"failed"`: wait for the page to show a failure; `failedAfterAnswerMs` says how long after
 *   the offer's answer arrived.
 * - `"interrupted"`: wait for a bot line marked interrupted and one echoed turn, then hang up.
 */

import { chromium } from "playwright-core";

/** What the test asks for. */
export interface BrowserCallRequest {
  url: string;
  wav: string;
  profile: string;
  until: "echo" | "failed" | "interrupted";
  /** Accept the server's self-signed certificate (the user clicking through the warning). */
  acceptCert?: boolean;
  timeoutMs?: number;
  /** Directory for desktop and 390 px phone screenshots of the live call, taken before hang-up. */
  screenshots?: string;
}

/** What the driver saw. */
export interface BrowserCallReport {
  ok: boolean;
  why?: string;
  state: string;
  error: string | null;
  transcript: { role: string; text: string; interrupted?: boolean }[];
  counters: Record<string, number | string>;
  connectedAfterClickMs?: number;
  /** From the offer's answer to the media connection, as the page timed it (ICE and DTLS). */
  connectedAfterAnswerMs?: number;
  failedAfterAnswerMs?: number;
  endedState?: string;
  /** After a failure: whether "Call again" is offered. */
  canRetry?: boolean;
}

const CHROMIUM = "/usr/bin/chromium";

async function call(req: BrowserCallRequest): Promise<BrowserCallReport> {
  const ctx = await chromium.launchPersistentContext(req.profile, {
    executablePath: CHROMIUM,
    headless: true,
    // The server's CSP forbids eval; playwright's string predicates need it.
    bypassCSP: true,
    ignoreHTTPSErrors: req.acceptCert === true,
    args: [
      "--no-sandbox",
      "--disable-gpu",
      "--no-first-run",
      "--disable-background-networking",
      "--disable-component-update",
      "--disable-sync",
      "--autoplay-policy=no-user-gesture-required",
      "--use-fake-ui-for-media-stream",
      "--use-fake-device-for-media-stream",
      `--use-file-for-fake-audio-capture=${req.wav}`,
    ],
  });
  const timeout = req.timeoutMs ?? 30_000;
  const snapshot = async (): Promise<BrowserCallReport> =>
    JSON.parse(
      String(
        await page.evaluate(
          "JSON.stringify({ok: false, state: flowcat.state, error: flowcat.error, " +
            "transcript: flowcat.transcript, counters: flowcat.counters})",
        ),
      ),
    );
  const page = ctx.pages()[0] ?? await ctx.newPage();
  try {
    let answeredAt = 0;
    page.on("response", (r) => {
      if (r.url().endsWith("/webrtc/offer")) answeredAt = performance.now();
    });
    // A namespace whose link just came up can still be settling: Chromium then aborts the
    // first load with ERR_NETWORK_CHANGED, and a person would simply reload.
    await page.goto(req.url).catch(async (err) => {
      if (!String(err).includes("ERR_NETWORK_CHANGED")) throw err;
      await page.waitForTimeout(500);
      await page.goto(req.url);
    });
    const clickedAt = performance.now();
    await page.getByRole("button", { name: "Start call" }).click();
    if (req.until === "failed") {
      await page.waitForFunction("flowcat.state === 'failed'", null, { timeout });
      const report = await snapshot();
      report.ok = true;
      report.failedAfterAnswerMs = Math.round(performance.now() - answeredAt);
      report.canRetry = await page.getByRole("button", { name: "Call again" }).isEnabled();
      return report;
    }
    await page.waitForFunction("flowcat.state === 'connected'", null, { timeout });
    const connectedAfterClickMs = Math.round(performance.now() - clickedAt);
    const connectedAfterAnswerMs = Number(await page.evaluate("flowcat.answerToConnectedMs"));
    const want = req.until === "echo"
      ? "flowcat.transcript.some((l) => l.role === 'user') && " +
        "flowcat.transcript.filter((l) => l.role === 'bot').length >= 2"
      : "flowcat.transcript.some((l) => l.role === 'bot' && l.interrupted) && " +
        "flowcat.transcript.some((l, i, all) => l.role === 'user' && " +
        "all.slice(i + 1).some((b) => b.role === 'bot'))";
    try {
      await page.waitForFunction(want, null, { timeout });
    } catch {
      return { ...await snapshot(), why: `not seen in ${timeout} ms: ${req.until}` };
    }
    // Let the stats poll (every 500 ms) read the audio that played.
    await page.waitForTimeout(600);
    const report = await snapshot();
    if (req.screenshots !== undefined) {
      await page.setViewportSize({ width: 1280, height: 860 });
      await Deno.writeFile(`${req.screenshots}/playground.png`, await page.screenshot());
      await page.setViewportSize({ width: 390, height: 844 });
      await Deno.writeFile(`${req.screenshots}/playground-phone.png`, await page.screenshot());
    }
    await page.getByRole("button", { name: "Hang up" }).click();
    await page.waitForFunction("flowcat.state === 'ended'", null, { timeout: 10_000 });
    return {
      ...report,
      ok: true,
      connectedAfterClickMs,
      connectedAfterAnswerMs,
      endedState: (await snapshot()).state,
    };
  } catch (err) {
    const seen = await snapshot().catch(() => undefined);
    return {
      ...(seen ?? { state: "?", error: null, transcript: [], counters: {} }),
      ok: false,
      why: String(err).split("\n")[0],
    };
  } finally {
    await ctx.close().catch(() => {});
  }
}

if (import.meta.main) {
  const req = JSON.parse(Deno.args[0]) as BrowserCallRequest;
  console.log(JSON.stringify(await call(req)));
}
