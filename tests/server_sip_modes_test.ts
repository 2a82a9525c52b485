/**
 * The server's SIP deployment modes against real sipp: a trunk by IP (`register: false`) takes
 * a call from an allowed source (sipp bound to 127.0.0.2) and refuses another source with 403;
 * a digest-challenged inbound INVITE goes through with sipp's answer; an OPTIONS health check
 * gets 503 while the server drains.
 */
import assert from "node:assert/strict";
import { memoryLogger } from "../core/log.ts";
import { createAgentServer } from "../server/app.ts";
import { parseConfigText } from "../server/config.ts";
import { until } from "./_core_helpers.ts";
import { RawPeer } from "./_sip_peer.ts";
import {
  freeEvenPortBase,
  freeUdpPort,
  hasSipp,
  pcmuPcap,
  runSipp,
  sine8k,
  sippArgs,
} from "./_sipp.ts";

const INBOUND_PASSWORD = "inbound-pass-7e1d";

/** A server whose SIP trunk does not register; `sip` is merged into telephony.sip. */
async function server(sip: Record<string, unknown>) {
  const sipPort = freeUdpPort();
  const config = {
    agent: {
      graph: {
        version: 1,
        start: "a",
        nodes: [
          {
            id: "a",
            prompt: "Hi.",
            transitions: [{ name: "next", description: "Go on.", target: "b" }],
          },
          {
            id: "b",
            prompt: "Second.",
            transitions: [{ name: "done", description: "Done.", target: "c" }],
          },
          { id: "c", prompt: "Bye.", terminal: true },
        ],
      },
    },
    pipeline: "s2s",
    providers: { realtime: { name: "echo", options: { tts: "none" } } },
    telephony: {
      sip: {
        // Never contacted: no registration, no keep-alive. Its address is not 127.0.0.1, so the
        // allowlist is exactly `inbound.allow`.
        server: "sip:127.0.0.3:5060",
        register: false,
        caller_id: "+15551230000",
        sip_port: sipPort,
        rtp_port_base: freeEvenPortBase(4, [sipPort]),
        rtp_port_tries: 4,
        keepalive: { mode: "off" },
        ...sip,
      },
    },
  };
  const r = await parseConfigText(JSON.stringify(config), "json", ".");
  if (!r.ok) throw new Error(JSON.stringify(r.problems));
  const logger = memoryLogger();
  const app = await createAgentServer({
    config: r.config,
    env: (n) => (n === "SIP_INBOUND_PASSWORD" ? INBOUND_PASSWORD : undefined),
    logger,
    sipBindHost: "127.0.0.1",
  });
  const dir = `./.tmp/server-sip-modes-${crypto.randomUUID()}`;
  Deno.mkdirSync(dir, { recursive: true });
  return {
    app,
    logger,
    sipPort,
    dir,
    async close() {
      await app.calls.drain(1000);
      await app.close();
      Deno.removeSync(dir, { recursive: true });
    },
  };
}

/** Run sipp to completion and require exit 0. */
async function sipp(dir: string, args: string[]): Promise<void> {
  const run = runSipp(args, dir);
  const res = await run.done;
  assert.equal(res.code, 0, `${res.stdout.slice(-1500)}\n${res.stderr.slice(-1500)}`);
}

Deno.test({
  name: "register: false: an allowed source (127.0.0.2) is served, 127.0.0.1 gets 403",
  ignore: !hasSipp(),
  fn: async () => {
    const s = await server({ inbound: { allow: ["127.0.0.2"] } });
    try {
      await sipp(s.dir, sippArgs("uac_refused.xml", s.sipPort));
      assert.equal(s.app.sessions.get(1), undefined, "a refused source starts no run");
      Deno.writeFileSync(`${s.dir}/tone.pcap`, pcmuPcap(sine8k(8000 * 0.4, 440)));
      await sipp(s.dir, sippArgs("uac_media.xml", s.sipPort, [], "127.0.0.2"));
      const run = s.app.sessions.get(1);
      assert.equal(run?.origin, "sip");
      await until(() => run!.finalize !== undefined, 5000, "finalized");
      assert.equal(run!.finalize!.usage.endedBy, "end: caller hung up");
      const refusals = s.logger.records.filter((r) =>
        r.message === "sip request from a refused source"
      );
      assert.ok(refusals.length >= 1);
    } finally {
      await s.close();
    }
  },
});

Deno.test({
  name: "an inbound INVITE is digest-challenged (401) and sipp's answer is taken",
  ignore: !hasSipp(),
  fn: async () => {
    const s = await server({
      inbound: {
        filter: false,
        auth: { username: "pbx", password_env: "SIP_INBOUND_PASSWORD", realm: "flowcat" },
      },
    });
    try {
      await sipp(
        s.dir,
        sippArgs("uac_auth.xml", s.sipPort, ["-au", "pbx", "-ap", INBOUND_PASSWORD]),
      );
      const run = s.app.sessions.get(1);
      assert.equal(run?.origin, "sip");
      await until(() => run!.finalize !== undefined, 5000, "finalized");
      assert.ok(!JSON.stringify(s.logger.records).includes(INBOUND_PASSWORD));
      // A wrong password is challenged again, and sipp (expecting 180) fails.
      const wrong = runSipp(
        sippArgs("uac_auth.xml", s.sipPort, ["-au", "pbx", "-ap", "nope"]),
        s.dir,
        "3s",
      );
      assert.notEqual((await wrong.done).code, 0);
      assert.equal(s.app.sessions.get(2), undefined, "no run for a failed challenge");
    } finally {
      await s.close();
    }
  },
});

Deno.test({
  name: "OPTIONS health checks get 503 while the server drains",
  ignore: !hasSipp(),
  fn: async () => {
    const s = await server({ inbound: { allow: ["127.0.0.1"] } });
    try {
      await s.app.calls.drain(0);
      await sipp(s.dir, sippArgs("options_drain.xml", s.sipPort));
    } finally {
      await s.close();
    }
  },
});

function hasKamailio(): boolean {
  try {
    return new Deno.Command("kamailio", { args: ["-v"], stdout: "null", stderr: "null" })
      .outputSync().code === 0;
  } catch {
    return false;
  }
}

/**
 * A Kamailio proxy on 127.0.0.2:`port` that sends new INVITEs to `agentPort` through its
 * dispatcher, record-routes them, and health-checks the agent with OPTIONS every second (an
 * agent that answers 503 is taken out of rotation). The configuration docs/sip-deployment.md
 * shows.
 */
function kamailio(dir: string, port: number, agentPort: number) {
  Deno.writeTextFileSync(`${dir}/dispatcher.list`, `1 sip:127.0.0.1:${agentPort}\n`);
  Deno.writeTextFileSync(
    `${dir}/kamailio.cfg`,
    `#!KAMAILIO
debug=2
log_stderror=yes
children=1
listen=udp:127.0.0.2:${port}
mpath="/usr/lib/x86_64-linux-gnu/kamailio/modules/"
loadmodule "kex.so"
loadmodule "corex.so"
loadmodule "tm.so"
loadmodule "tmx.so"
loadmodule "sl.so"
loadmodule "rr.so"
loadmodule "pv.so"
loadmodule "maxfwd.so"
loadmodule "textops.so"
loadmodule "siputils.so"
loadmodule "dispatcher.so"
modparam("dispatcher", "list_file", "${Deno.realPathSync(dir)}/dispatcher.list")
modparam("dispatcher", "ds_ping_interval", 1)
modparam("dispatcher", "ds_probing_mode", 1)
modparam("dispatcher", "ds_ping_from", "sip:kamailio@127.0.0.2")
request_route {
  if (!mf_process_maxfwd_header("10")) { sl_send_reply("483", "Too Many Hops"); exit; }
  if (has_totag()) {
    if (loose_route()) { t_relay(); exit; }
    if (is_method("ACK") && t_check_trans()) { t_relay(); }
    exit;
  }
  if (is_method("CANCEL")) { if (t_check_trans()) { t_relay(); } exit; }
  if (is_method("INVITE")) { record_route(); }
  if (!ds_select_dst("1", "4")) { sl_send_reply("503", "No agent available"); exit; }
  t_relay();
}
`,
  );
  // Absolute paths: Kamailio changes to / as it starts.
  const abs = Deno.realPathSync(dir);
  const child = new Deno.Command("kamailio", {
    args: ["-f", `${abs}/kamailio.cfg`, "-DD", "-E", "-P", `${abs}/kamailio.pid`],
    stdout: "null",
    stderr: "piped",
  }).spawn();
  const log = child.output().then((o) => new TextDecoder().decode(o.stderr));
  return {
    log,
    async stop() {
      try {
        child.kill("SIGTERM");
      } catch {
        // already gone
      }
      return await log;
    },
  };
}

/** The final response Kamailio (127.0.0.2:`port`) gives a new `method` from a raw peer. */
async function viaProxy(port: number, method: "OPTIONS" | "INVITE"): Promise<string> {
  const peer = new RawPeer();
  try {
    const sdp = method === "INVITE"
      ? "v=0\no=- 1 1 IN IP4 127.0.0.1\ns=-\nc=IN IP4 127.0.0.1\nt=0 0\nm=audio 40000 RTP/AVP 0\n"
      : "";
    await peer.send(
      `${method} sip:+15557654321@127.0.0.2:${port} SIP/2.0
Via: SIP/2.0/UDP 127.0.0.1:${peer.port};branch=z9hG4bK${crypto.randomUUID()}
From: <sip:+15551230000@127.0.0.1>;tag=probe
To: <sip:+15557654321@127.0.0.2>
Call-ID: ${crypto.randomUUID()}
CSeq: 1 ${method}
Contact: <sip:probe@127.0.0.1:${peer.port}>
Max-Forwards: 70
${sdp ? "Content-Type: application/sdp\n" : ""}Content-Length: ${
        sdp.replaceAll("\n", "\r\n").length
      }

${sdp}`,
      port,
      "127.0.0.2",
    );
    const end = performance.now() + 2000;
    while (performance.now() < end) {
      const final = peer.received.find((m) => m.kind === "response" && m.status >= 200);
      if (final?.kind === "response") return `${final.status} ${final.reason}`;
      await new Promise((r) => setTimeout(r, 10));
    }
    return "no answer";
  } finally {
    await peer.close();
  }
}

/** Poll `probe` until it returns `want` (or fail after `ms` with the last answer). */
async function eventually(probe: () => Promise<string>, want: string, ms: number) {
  const end = performance.now() + ms;
  let last = "";
  while (performance.now() < end) {
    if ((last = await probe()) === want) return;
    await new Promise((r) => setTimeout(r, 200));
  }
  throw new Error(`wanted "${want}", last answer "${last}"`);
}

Deno.test({
  name: "behind Kamailio: calls arrive through its dispatcher; a draining agent leaves rotation",
  ignore: !hasSipp() || !hasKamailio(),
  fn: async () => {
    // The agent accepts only Kamailio's address: sipp (127.0.0.1) cannot reach it directly.
    const s = await server({ inbound: { allow: ["127.0.0.2"] } });
    const proxyPort = freeUdpPort();
    const proxy = kamailio(s.dir, proxyPort, s.sipPort);
    try {
      // Kamailio relays OPTIONS to the agent it dispatches to, which answers them.
      await eventually(() => viaProxy(proxyPort, "OPTIONS"), "200 OK", 10_000).catch(async (e) => {
        throw new Error(`${e.message}\n${(await proxy.stop()).slice(-2000)}`);
      });
      Deno.writeFileSync(`${s.dir}/tone.pcap`, pcmuPcap(sine8k(8000 * 0.4, 440)));
      await sipp(s.dir, sippArgs("uac_media.xml", `127.0.0.2:${proxyPort}`));
      const run = s.app.sessions.get(1);
      assert.equal(run?.origin, "sip", "the call through Kamailio reached the agent");
      await until(() => run!.finalize !== undefined, 5000, "finalized");
      assert.equal(run!.finalize!.usage.endedBy, "end: caller hung up");
      // Draining: the agent answers Kamailio's OPTIONS 503, the dispatcher takes it out of
      // rotation, and Kamailio itself refuses new calls.
      await s.app.calls.drain(0);
      await eventually(() => viaProxy(proxyPort, "INVITE"), "503 No agent available", 10_000);
    } finally {
      await proxy.stop();
      await s.close();
    }
  },
});
