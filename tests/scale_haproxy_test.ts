/**
 * Scale-out behind a real HAProxy: three agent processes (127.0.0.2-127.0.0.4, each under the
 * flags `deno task start` prints) behind examples/deploy/haproxy.cfg with its addresses replaced
 * by loopback ones. Twilio-protocol calls (signed answer webhook, then the media WebSocket the
 * TwiML names, through the proxy) each hear their caller turn echoed; the webhook signature is
 * checked against the proxy's public URL from trusted X-Forwarded-* headers only; a media socket
 * landing on another agent than the webhook is adopted by its signed token; SIGTERM one agent
 * mid-run (its calls finish, it takes no new ones, none fail) while a new instance comes up in
 * a spare slot and takes new calls (a rolling restart); `kill -9` another (only its own calls
 * are lost, all new ones succeed).
 *
 * Skips, saying so, when HAProxy is not installed (`apt-get install haproxy`).
 */

import assert from "node:assert/strict";
import { startDaemon } from "./_daemon.ts";
import { twilioSignature } from "../telephony/security.ts";
import { sleep, until } from "./_core_helpers.ts";
import { type ServerChild, startServerChild } from "./_server_child.ts";
import { dialTwilio, type TwilioCall, twilioClient } from "./_twilio_client.ts";
import { tone8k, toneWindows } from "./_tone.ts";

const AGENT_HOSTS = ["127.0.0.2", "127.0.0.3", "127.0.0.4"];
/** HAProxy's source address towards the agents: the one address they trust. */
const PROXY_SOURCE = "127.0.0.9";
const TWILIO_SECRET = "twilio-auth-token-for-scale-out";
const CLUSTER_SECRET = crypto.randomUUID() + crypto.randomUUID();
/** Caller turn: 1 s of the test tone (50 frames of 20 ms), then silence so the VAD ends it. */
const TONE_FRAMES = 50;
/**
 * Tone windows a call must hear back: all but three. The echo canceller, on by default on this
 * carrier leg, hands the model the caller's audio 16 ms late, which splits one 20 ms window of
 * the echoed turn; its onset and the VAD's edges may cost one each.
 */
const ECHOED_ENOUGH = TONE_FRAMES - 3;

function missing(tool: string): string | undefined {
  try {
    new Deno.Command(tool, { args: ["-v"], stdout: "null", stderr: "null" }).outputSync();
    return undefined;
  } catch {
    return `${tool} is not installed (apt-get install ${tool})`;
  }
}

const skip = missing("haproxy");
if (skip !== undefined) console.log(`scale_haproxy_test: skipped: ${skip}`);

function agentConfig(host: string): Record<string, unknown> {
  return {
    version: 1,
    agent: {
      graph: {
        start: "a",
        nodes: [
          { id: "a", prompt: "Hi", transitions: [{ name: "go", description: "go", target: "b" }] },
          { id: "b", terminal: true },
        ],
      },
    },
    providers: { realtime: { name: "echo", options: { tts: "none" } } },
    telephony: { carriers: ["twilio"] },
    playground: { enabled: false },
    limits: { drain_seconds: 30 },
    server: {
      host,
      port: 0,
      trusted_proxies: [PROXY_SOURCE],
      cluster_secret_env: "FLOWCAT_CLUSTER_SECRET",
    },
  };
}

async function startAgent(dir: string, host: string, port = 0): Promise<ServerChild> {
  const path = `${dir}/agent-${host}-${port}.json`;
  await Deno.writeTextFile(path, JSON.stringify(agentConfig(host)));
  return await startServerChild(path, {
    TWILIO_AUTH_TOKEN: TWILIO_SECRET,
    FLOWCAT_CLUSTER_SECRET: CLUSTER_SECRET,
    FLOWCAT_LOG_FORMAT: "json",
  }, { port });
}

function freePort(): number {
  const l = Deno.listen({ hostname: "127.0.0.1", port: 0 });
  const port = (l.addr as Deno.NetAddr).port;
  l.close();
  return port;
}

/**
 * The shipped haproxy.cfg with the proxy on 127.0.0.1:`port` and its servers at `agents` (one
 * more than shipped is added after them: the new instance of a rolling restart).
 */
export function haproxyConfig(shipped: string, port: number, agents: string[]): string {
  let n = 0;
  const out = shipped
    .replace(/^(\s*bind )\S+$/m, `$1127.0.0.1:${port}`)
    .replace(/^(\s*default-server .*)$/m, `$1 source ${PROXY_SOURCE}`)
    .replace(/^(\s*server agent)(\d+) \S+ check$/gm, (_all, head: string, k: string) => {
      n++;
      const line = `${head}${k} ${agents[Number(k) - 1]} check`;
      return n === 3 && agents.length === 4 ? `${line}\n${head}4 ${agents[3]} check` : line;
    });
  if (n !== 3) throw new Error("haproxy.cfg: expected 3 servers");
  return out;
}

async function startHaproxy(dir: string, agents: string[]) {
  const port = freePort();
  const shipped = await Deno.readTextFile("examples/deploy/haproxy.cfg");
  const path = `${dir}/haproxy.cfg`;
  await Deno.writeTextFile(path, haproxyConfig(shipped, port, agents));
  const check = await new Deno.Command("haproxy", { args: ["-c", "-f", path], stderr: "piped" })
    .output();
  assert.equal(check.code, 0, `haproxy -c: ${new TextDecoder().decode(check.stderr)}`);
  const daemon = startDaemon("haproxy", ["-db", "-f", path]);
  const base = `http://127.0.0.1:${port}`;
  const deadline = Date.now() + 10_000;
  for (;;) {
    const ok = await fetch(`${base}/healthz`).then(async (r) => {
      await r.body?.cancel();
      return r.status === 200;
    }, () => false);
    if (ok) break;
    if (Date.now() > deadline) throw new Error(`haproxy did not come up: ${await daemon.exited}`);
    await sleep(100);
  }
  return {
    base,
    /** What HAProxy said so far (server state changes). */
    log: daemon.log,
    stop: daemon.stop,
  };
}

/** One call's outcome. */
interface CallResult {
  runId: number;
  /** Tone frames heard back. */
  echoed: number;
  error?: string;
}

/** Hear `call`'s caller turn echoed, then hang up. */
async function echoTurn(call: TwilioCall): Promise<number> {
  const before = call.media().length;
  await call.speak(tone8k(TONE_FRAMES * 160));
  await call.speak(new Int16Array(6400));
  const echoed = () => toneWindows(call.decode(call.media().slice(before)));
  await until(() => echoed() >= ECHOED_ENOUGH, 15_000, "the echoed turn").catch(() => {});
  await sleep(200);
  const n = echoed();
  await call.hangup();
  await Promise.race([call.ended, sleep(5000)]);
  await call.close();
  return n;
}

/** A call through the proxy at `base`, as Twilio places it. */
async function proxiedCall(base: string): Promise<CallResult> {
  let runId = -1;
  try {
    const dialed = await dialTwilio(base, { secret: TWILIO_SECRET, publicUrl: base });
    runId = dialed.runId;
    return { runId, echoed: await echoTurn(dialed.call) };
  } catch (e) {
    return { runId, echoed: 0, error: String(e) };
  }
}

/** `count` calls, at most `parallel` at once, each started `gapMs` after the previous one. */
async function placeCalls(
  base: string,
  count: number,
  parallel: number,
  gapMs: number,
  onStarted: (i: number) => void = () => {},
): Promise<CallResult[]> {
  const results: CallResult[] = [];
  let next = 0;
  const lane = async () => {
    while (next < count) {
      const i = next++;
      onStarted(i);
      results[i] = await proxiedCall(base);
      await sleep(gapMs);
    }
  };
  await Promise.all(Array.from({ length: parallel }, lane));
  return results;
}

interface LogLine {
  msg: string;
  time: string;
  runId?: number;
  reason?: string;
}

function logLines(agent: ServerChild): LogLine[] {
  return agent.stderr().split("\n").filter((l) => l.startsWith("{")).map((l) => JSON.parse(l));
}

const started = (a: ServerChild) => logLines(a).filter((l) => l.msg === "call started");
const ended = (a: ServerChild) => logLines(a).filter((l) => l.msg === "call ended");

async function health(agent: ServerChild): Promise<number> {
  const r = await fetch(`${agent.base}/healthz`);
  await r.body?.cancel();
  return r.status;
}

function assertAllEchoed(results: CallResult[], what: string, log = ""): void {
  const failed = results.filter((r) => r.error !== undefined || r.echoed < ECHOED_ENOUGH);
  assert.deepEqual(failed, [], `${what}: every call hears its turn echoed\n${log}`);
}

Deno.test({
  name: "haproxy: three agents, signed webhooks, cross-agent media sockets, drain and kill",
  ignore: skip !== undefined,
  sanitizeResources: false,
  sanitizeOps: false,
}, async (t) => {
  const dir = await Deno.makeTempDir({ dir: ".tmp", prefix: "scale-haproxy-" });
  const agents = await Promise.all(AGENT_HOSTS.map((h) => startAgent(dir, h)));
  // The slot of the new instance a rolling restart starts: down until then.
  const spare = `127.0.0.1:${freePort()}`;
  const proxy = await startHaproxy(dir, [...agents.map((a) => new URL(a.base).host), spare]);
  let replacement: ServerChild | undefined;
  try {
    await t.step("X-Forwarded-* is believed from the proxy only", async () => {
      // Signed over the proxy's URL: accepted through the proxy...
      const path = "/telephony/answer/twilio";
      const params = { CallSid: "CAforwarded" };
      const sig = await twilioSignature(TWILIO_SECRET, `${proxy.base}${path}`, params);
      const post = (base: string, headers: Record<string, string> = {}) =>
        fetch(`${base}${path}`, {
          method: "POST",
          headers: {
            "content-type": "application/x-www-form-urlencoded",
            "x-twilio-signature": sig,
            ...headers,
          },
          body: new URLSearchParams(params).toString(),
        });
      const direct = await post(agents[0].base, {
        "x-forwarded-proto": "http",
        "x-forwarded-host": new URL(proxy.base).host,
      });
      await direct.body?.cancel();
      assert.equal(direct.status, 403, "forged X-Forwarded-Host from an untrusted peer");
      const via = await post(proxy.base);
      const twiml = await via.text();
      assert.equal(via.status, 200, twiml);
      assert.match(twiml, new RegExp(`url="ws://127\\.0\\.0\\.1:${new URL(proxy.base).port}/`));
    });

    await t.step("a media socket on another agent than the webhook is adopted", async () => {
      // The webhook on agent 1, its socket on agent 2.
      const sig = await twilioSignature(
        TWILIO_SECRET,
        `${agents[1].base}/telephony/answer/twilio`,
        { CallSid: "CAcross" },
      );
      const res = await fetch(`${agents[1].base}/telephony/answer/twilio`, {
        method: "POST",
        headers: {
          "content-type": "application/x-www-form-urlencoded",
          "x-twilio-signature": sig,
        },
        body: "CallSid=CAcross",
      });
      const url = new URL(/url="([^"]+)"/.exec(await res.text())![1].replaceAll("&amp;", "&"));
      const runId = Number(url.pathname.split("/").at(-1));
      const token = url.searchParams.get("token")!;
      const ws = `${agents[2].base.replace("http", "ws")}${url.pathname}?token=${token}`;
      const call = await twilioClient(ws, token);
      assert.ok((await echoTurn(call)) >= ECHOED_ENOUGH, "the cross-agent call echoes");
      await until(() => ended(agents[2]).some((l) => l.runId === runId), 5000, "ended on 2");
      assert.ok(!started(agents[1]).some((l) => l.runId === runId), "not run by agent 1");
      // The token opened its one socket: a second one, on any agent, is refused.
      const again = await fetch(`${agents[0].base}${url.pathname}?token=${token}`, {
        headers: { upgrade: "websocket", connection: "upgrade" },
      });
      await again.body?.cancel();
      assert.notEqual(again.status, 101);
    });

    await t.step("calls through the proxy spread over the agents, each echoed", async () => {
      const before = agents.map((a) => started(a).length);
      const results = await placeCalls(proxy.base, 18, 6, 50);
      assertAllEchoed(results, "spread");
      const taken = agents.map((a, i) => started(a).length - before[i]);
      assert.equal(taken.reduce((a, b) => a + b), 18, `calls per agent ${taken}`);
      for (const n of taken) assert.ok(n >= 2, `each agent takes a share: ${taken}`);
    });

    await t.step(
      "SIGTERM one agent mid-run: its calls finish, it takes no new ones; a new instance takes its place",
      async () => {
        const draining = agents[0];
        // A call running on the agent when it is told to stop, and more coming through the proxy.
        const held = await dialTwilio(draining.base, {
          secret: TWILIO_SECRET,
          publicUrl: draining.base,
        });
        await until(() => started(draining).length > 0, 5000, "the held call");
        const before = agents.map((a) => started(a).length);
        let signalled: () => void;
        const sigterm = new Promise<void>((r) => (signalled = r));
        let termAt = -1;
        const running = placeCalls(proxy.base, 18, 6, 100, (i) => {
          if (i !== 6) return;
          termAt = Date.now();
          draining.kill("SIGTERM");
          signalled();
        });
        await sigterm;
        await until(() => draining.stdout().includes("draining"), 5000, "the drain");
        assert.equal(await health(draining), 503, "/healthz says it drains");
        const results = await running;
        assertAllEchoed(results, "calls placed around the SIGTERM", proxy.log());
        // Rolling restart: the new instance comes up and takes new calls while the old one still
        // holds its own.
        replacement = await startAgent(dir, "127.0.0.1", Number(spare.split(":")[1]));
        await until(
          () => proxy.log().includes("agent4 is UP"),
          10_000,
          "the new instance in rotation",
        );
        const fresh = await placeCalls(proxy.base, 6, 3, 50);
        assertAllEchoed(fresh, "calls after the new instance came up", proxy.log());
        assert.ok(started(replacement).length > 0, "the new instance takes new calls");
        assert.equal(draining.stdout().includes("stopped"), false, "the old one still runs");
        assert.ok((await echoTurn(held.call)) >= ECHOED_ENOUGH, "the held call went on");
        assert.equal(await draining.exited, 0, "the drained agent exits by itself, cleanly");
        const reasons = ended(draining).map((l) => l.reason);
        assert.ok(
          reasons.every((r) => r === "caller_hung_up"),
          `ended by hangup, not the drain: ${reasons}`,
        );
        // A socket accepted just before the signal may still start its call a moment later.
        const late = started(draining).filter((l) => Date.parse(l.time) > termAt + 1000);
        assert.deepEqual(late, [], "no call started there after SIGTERM");
        const others = agents.slice(1).map((a, i) => started(a).length - before[i + 1]);
        assert.ok(others.every((n) => n > 0), `the others took the new calls: ${others}`);
      },
    );

    await t.step("kill -9 one agent: only its own calls are lost", async () => {
      const dead = agents[1];
      const survivors = [agents[2], replacement!];
      const had = started(dead).length;
      // Two calls held open on the agent about to die.
      const held = await Promise.all([0, 1].map(async () => {
        const d = await dialTwilio(dead.base, { secret: TWILIO_SECRET, publicUrl: dead.base });
        return d.call;
      }));
      await until(() => started(dead).length >= had + 2, 5000, "calls on the doomed agent");
      dead.kill("SIGKILL");
      const lost = await Promise.race([
        Promise.all(held.map((c) => c.ended)).then(() => true),
        sleep(5000).then(() => false),
      ]);
      assert.ok(lost, "the dead agent's own calls end");
      for (const c of held) await c.close();
      const before = survivors.map((a) => started(a).length);
      const results = await placeCalls(proxy.base, 8, 4, 50);
      assertAllEchoed(results, "after kill -9", proxy.log());
      const taken = survivors.map((a, i) => started(a).length - before[i]);
      assert.equal(taken[0] + taken[1], 8, `the survivors took every new call: ${taken}`);
    });
  } finally {
    await proxy.stop();
    await Promise.all([...agents, ...(replacement ? [replacement] : [])].map((a) => a.stop()));
    await Deno.remove(dir, { recursive: true });
  }
});
