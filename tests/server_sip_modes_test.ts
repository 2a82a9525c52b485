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
        rtp_port_base: freeEvenPortBase(4),
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
