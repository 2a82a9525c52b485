/**
 * Scale-out behind a real Kamailio: three SIP agent processes (`register: false`, each under the
 * flags `deno task start` prints) behind examples/deploy/kamailio.cfg's dispatcher, with its
 * addresses replaced by loopback ones. sipp places calls through the proxy (INVITE, ACK and BYE
 * along the Record-Route set, RTP straight to the agent): they spread over the agents; SIGTERM one
 * mid-run (its calls finish, it takes no new ones, none fail); `kill -9` another (only calls it
 * held are lost; the next run all succeed on the survivor).
 *
 * Skips, saying so, when Kamailio or sipp is not installed.
 */

import assert from "node:assert/strict";
import { startDaemon } from "./_daemon.ts";
import { sleep, until } from "./_core_helpers.ts";
import { type ServerChild, startServerChild } from "./_server_child.ts";
import {
  freeEvenPortBase,
  freeUdpPort,
  hasSipp,
  pcmuPcap,
  runSipp,
  sine8k,
  SIPP_SCENARIOS,
} from "./_sipp.ts";

const PROXY = "127.0.0.2";

function missing(): string | undefined {
  if (!hasSipp()) return "sipp is not installed (apt-get install sip-tester)";
  try {
    new Deno.Command("kamailio", { args: ["-v"], stdout: "null", stderr: "null" }).outputSync();
    return undefined;
  } catch {
    return "kamailio is not installed (apt-get install kamailio)";
  }
}

const skip = missing();
if (skip !== undefined) console.log(`scale_kamailio_test: skipped: ${skip}`);

interface SipAgent {
  child: ServerChild;
  sipPort: number;
}

async function startAgent(dir: string, n: number, proxyPort: number): Promise<SipAgent> {
  const sipPort = freeUdpPort();
  const config = {
    version: 1,
    agent: {
      graph: {
        start: "a",
        // sipp's scenario presses "1" (the first tool: a -> b); b is not terminal, so the
        // caller's BYE ends the call.
        nodes: [
          { id: "a", prompt: "Hi", transitions: [{ name: "go", description: "go", target: "b" }] },
          {
            id: "b",
            prompt: "Next",
            transitions: [{ name: "end", description: "end", target: "c" }],
          },
          { id: "c", terminal: true },
        ],
      },
    },
    providers: { realtime: { name: "echo", options: { tts: "none" } } },
    telephony: {
      sip: {
        server: `sip:${PROXY}:${proxyPort}`,
        register: false,
        caller_id: "+15551230000",
        public_ip: "127.0.0.1",
        sip_port: sipPort,
        rtp_port_base: freeEvenPortBase(48, [sipPort]),
        rtp_port_tries: 48,
        keepalive: { mode: "off" },
        // sipp's media comes from 127.0.0.1; signalling only through the proxy.
        allow_hosts: ["127.0.0.1"],
        inbound: { allow: [PROXY] },
      },
    },
    playground: { enabled: false },
    limits: { drain_seconds: 30 },
    server: { port: 0 },
  };
  const path = `${dir}/agent-${n}.json`;
  await Deno.writeTextFile(path, JSON.stringify(config));
  const child = await startServerChild(path, { FLOWCAT_LOG_FORMAT: "json" });
  return { child, sipPort };
}

/** The shipped kamailio.cfg listening on PROXY:`port`, reading `listFile`. */
export function kamailioConfig(shipped: string, port: number, listFile: string): string {
  const out = shipped
    .replace(/^listen=udp:\S+$/m, `listen=udp:${PROXY}:${port}`)
    .replace(/"list_file", "[^"]+"/, `"list_file", "${listFile}"`)
    // One receiving process: with several, a 180 and a 200 an agent sends back to back may be
    // relayed out of order (legal over UDP), and sipp's scenario insists on 180 before 200.
    .replace(/^children=\d+$/m, "children=1")
    .replace(/"ds_ping_from", "sip:dispatcher@[^"]+"/, `"ds_ping_from", "sip:dispatcher@${PROXY}"`);
  if (!out.includes(`listen=udp:${PROXY}:${port}`) || !out.includes(listFile)) {
    throw new Error("kamailio.cfg: listen or list_file not found");
  }
  return out;
}

async function startKamailio(dir: string, port: number, agents: SipAgent[]) {
  const abs = await Deno.realPath(dir); // Kamailio changes to / as it starts
  const list = agents.map((a) => `1 sip:127.0.0.1:${a.sipPort}`).join("\n") + "\n";
  await Deno.writeTextFile(`${abs}/dispatcher.list`, list);
  const shipped = await Deno.readTextFile("examples/deploy/kamailio.cfg");
  await Deno.writeTextFile(
    `${abs}/kamailio.cfg`,
    kamailioConfig(shipped, port, `${abs}/dispatcher.list`),
  );
  const daemon = startDaemon("kamailio", [
    "-f",
    `${abs}/kamailio.cfg`,
    "-DD",
    "-E",
    "-P",
    `${abs}/kamailio.pid`,
  ]);
  return { target: `${PROXY}:${port}`, log: daemon.log, stop: daemon.stop };
}

/** Outcome of a sipp load run. */
interface Load {
  ok: number;
  failed: number;
  out: string;
}

/** `calls` sipp calls (uac_media.xml) through `target` at `rate` a second. */
function load(dir: string, target: string, calls: number, rate: number): Promise<Load> {
  const args = [
    "-sf",
    SIPP_SCENARIOS + "uac_media.xml",
    target,
    "-i",
    "127.0.0.1",
    "-p",
    String(freeUdpPort()),
    "-mp",
    String(freeEvenPortBase(2)),
    "-m",
    String(calls),
    "-r",
    String(rate),
    "-l",
    "20",
    "-trace_stat",
    "-stf",
    "stats.csv",
    "-fd",
    "1",
  ];
  return runSipp(args, dir, "60s").done.then(async (r) => {
    const csv = (await Deno.readTextFile(`${dir}/stats.csv`)).trim().split("\n");
    const head = csv[0].split(";");
    const last = csv.at(-1)!.split(";");
    const col = (name: string) => Number(last[head.indexOf(name)]);
    await Deno.remove(`${dir}/stats.csv`);
    return {
      ok: col("SuccessfulCall(C)"),
      failed: col("FailedCall(C)"),
      out: `${r.stdout.slice(-1500)}\n${r.stderr.slice(-1500)}`,
    };
  });
}

interface LogLine {
  msg: string;
  time: string;
  reason?: string;
}

function logLines(a: SipAgent): LogLine[] {
  return a.child.stderr().split("\n").filter((l) => l.startsWith("{")).map((l) => JSON.parse(l));
}
const started = (a: SipAgent) => logLines(a).filter((l) => l.msg === "call started");
const ended = (a: SipAgent) => logLines(a).filter((l) => l.msg === "call ended");

Deno.test({
  name: "kamailio: dispatcher over three SIP agents, drain and kill -9",
  ignore: skip !== undefined,
  sanitizeResources: false,
  sanitizeOps: false,
}, async (t) => {
  const dir = await Deno.makeTempDir({ dir: ".tmp", prefix: "scale-kamailio-" });
  const proxyPort = freeUdpPort();
  const agents = await Promise.all([0, 1, 2].map((n) => startAgent(dir, n, proxyPort)));
  const proxy = await startKamailio(dir, proxyPort, agents);
  await Deno.writeFile(`${dir}/tone.pcap`, pcmuPcap(sine8k(8000 * 0.4, 440)));
  try {
    await sleep(1500); // the dispatcher's first OPTIONS round
    await t.step("calls spread over the agents, all answered and ended", async () => {
      const calls = 30;
      const r = await load(dir, proxy.target, calls, 10);
      assert.deepEqual({ ok: r.ok, failed: r.failed }, { ok: calls, failed: 0 }, r.out);
      await until(() => agents.every((a) => ended(a).length === started(a).length), 5000, "ends");
      const taken = agents.map((a) => started(a).length);
      assert.equal(taken.reduce((a, b) => a + b), calls, `${taken}`);
      for (const n of taken) {
        assert.ok(n >= 0.2 * calls && n <= 0.47 * calls, `each agent 20-47%: ${taken}`);
      }
    });

    await t.step("SIGTERM one agent mid-run: its calls finish, it takes no new ones", async () => {
      const draining = agents[0];
      const before = agents.map((a) => started(a).length);
      const running = load(dir, proxy.target, 30, 10);
      await until(() => started(draining).length > before[0], 10_000, "a call on agent 0");
      const termAt = Date.now();
      draining.child.kill("SIGTERM");
      const r = await running;
      assert.deepEqual(
        { ok: r.ok, failed: r.failed },
        { ok: 30, failed: 0 },
        `${r.out}\n${proxy.log().slice(-3000)}`,
      );
      assert.equal(await draining.child.exited, 0, "the drained agent exits by itself");
      // An INVITE accepted just before the signal still starts its call a moment later.
      const late = started(draining).filter((l) => Date.parse(l.time) > termAt + 1000);
      assert.deepEqual(late, [], "no call started on the draining agent after SIGTERM");
      const reasons = ended(draining).map((l) => l.reason);
      assert.ok(reasons.every((x) => x === "caller_hung_up"), `${reasons}`);
      const others = agents.slice(1).map((a, i) => started(a).length - before[i + 1]);
      assert.ok(others.every((n) => n > 0), `the others took the new calls: ${others}`);
    });

    await t.step("kill -9 one agent: only its own calls are lost", async () => {
      const dead = agents[1];
      const survivor = agents[2];
      const before = started(dead).length;
      const running = load(dir, proxy.target, 20, 10);
      await until(() => started(dead).length > before, 10_000, "a call on agent 1");
      dead.child.kill("SIGKILL");
      await dead.child.exited;
      const r = await running;
      // Its log is final now: the calls it took and never ended are the ones it lost.
      const heldAtKill = started(dead).length - ended(dead).length;
      assert.ok(
        r.failed <= heldAtKill,
        `failed ${r.failed} > held by the dead agent ${heldAtKill}`,
      );
      assert.equal(r.ok + r.failed, 20, r.out);
      const next = started(survivor).length;
      const after = await load(dir, proxy.target, 10, 10);
      assert.deepEqual({ ok: after.ok, failed: after.failed }, { ok: 10, failed: 0 }, after.out);
      assert.equal(started(survivor).length - next, 10, "the survivor took every new call");
    });
  } finally {
    await proxy.stop();
    await Promise.all(agents.map((a) => a.child.stop()));
    await Deno.remove(dir, { recursive: true });
  }
});
