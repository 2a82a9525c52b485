/**
 * NAT keep-alive towards the server: CRLF pairs or OPTIONS on the interval, and a warning when
 * the trunk stops answering OPTIONS (one line when it is back).
 */

import assert from "node:assert/strict";
import {
  buildResponse,
  encodeSipMessage,
  parseSipMessage,
  type SipRequest,
} from "../telephony/sip/mod.ts";
import { until } from "./_core_helpers.ts";
import { loopbackSipConfig, startLoopbackAgent } from "./_sip_peer.ts";

/** A UDP socket standing in for the trunk; records what arrives. */
function fakeTrunk() {
  const conn = Deno.listenDatagram({ transport: "udp", hostname: "127.0.0.1", port: 0 });
  const got: { bytes: Uint8Array; from: Deno.NetAddr }[] = [];
  let answer = false;
  const loop = (async () => {
    try {
      for (;;) {
        const [bytes, from] = await conn.receive();
        got.push({ bytes, from: from as Deno.NetAddr });
        const r = parseSipMessage(bytes);
        if (answer && r.ok && r.message.kind === "request") {
          await conn.send(encodeSipMessage(buildResponse(r.message as SipRequest, 200)), from);
        }
      }
    } catch {
      // closed
    }
  })();
  return {
    port: (conn.addr as Deno.NetAddr).port,
    got,
    answer: (on: boolean) => (answer = on),
    close: async () => {
      conn.close();
      await loop;
    },
  };
}

async function agentFor(trunkPort: number, mode: "crlf" | "options") {
  return await startLoopbackAgent(
    loopbackSipConfig({
      server: `sip:127.0.0.1:${trunkPort}`,
      login: "agent",
      password: "p",
      callerId: "+15550001111",
    }),
    { keepAlive: { mode, intervalMs: 40 }, timers: { T1: 5, T2: 20, T4: 20 } },
  );
}

Deno.test("keep-alive: CRLF pairs reach the server on the interval, from the SIP port", async () => {
  const trunk = fakeTrunk();
  const { agent } = await agentFor(trunk.port, "crlf");
  try {
    await until(() => trunk.got.length >= 3, 2000, "three keep-alives");
    for (const g of trunk.got) {
      assert.equal(new TextDecoder().decode(g.bytes), "\r\n\r\n");
      assert.equal(g.from.port, agent.local.port, "sent from the port the trunk reaches us on");
    }
  } finally {
    await agent.close();
    await trunk.close();
  }
});

Deno.test("keep-alive: OPTIONS pings; silence is reported once, recovery once", async () => {
  const trunk = fakeTrunk();
  const { agent, logger } = await agentFor(trunk.port, "options");
  const lines = (m: string) => logger.records.filter((r) => r.message === m).length;
  try {
    await until(() => trunk.got.length >= 1, 2000, "an OPTIONS");
    const first = parseSipMessage(trunk.got[0].bytes);
    assert.ok(first.ok && first.message.kind === "request" && first.message.method === "OPTIONS");
    // Unanswered: Timer F (64 x T1 = 320 ms) gives a local 408: one warning, however many.
    await until(() => lines("sip keep-alive: the trunk does not answer OPTIONS") === 1, 3000);
    trunk.answer(true);
    await until(() => lines("sip keep-alive: the trunk answers again") === 1, 3000);
    await new Promise((r) => setTimeout(r, 200));
    assert.equal(lines("sip keep-alive: the trunk does not answer OPTIONS"), 1);
    assert.equal(lines("sip keep-alive: the trunk answers again"), 1);
  } finally {
    await agent.close();
    await trunk.close();
  }
});
