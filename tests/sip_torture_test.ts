/**
 * The RFC 4475 torture messages (tests/fixtures/sip_torture/, expected outcomes in its
 * manifest.json) against the parser and against a running agent over UDP: each message gets
 * the answer the manifest names (or none), and the agent still answers an OPTIONS afterwards.
 */

import assert from "node:assert/strict";
import {
  getHeader,
  getHeaders,
  parseSipMessage,
  type SipMessage,
  type SipResponse,
} from "../telephony/sip/mod.ts";
import { until } from "./_core_helpers.ts";
import { loopbackSipConfig, startLoopbackAgent } from "./_sip_peer.ts";

interface Expectation {
  file: string;
  section: string;
  title: string;
  outcome: "accept" | "reject" | "ignore";
  status?: number;
}

const DIR = new URL("./fixtures/sip_torture/", import.meta.url);
const MANIFEST = JSON.parse(Deno.readTextFileSync(new URL("manifest.json", DIR))) as {
  messages: Expectation[];
};
const bytesOf = (e: Expectation) => Deno.readFileSync(new URL(e.file, DIR));

Deno.test("RFC 4475 fixtures: CRLF line endings, 49 messages", () => {
  assert.equal(MANIFEST.messages.length, 49);
  for (const e of MANIFEST.messages) {
    const text = new TextDecoder().decode(bytesOf(e));
    const head = text.slice(0, text.indexOf("\r\n\r\n"));
    assert.doesNotMatch(head, /[^\r]\n/, `${e.file}: bare LF in the header section`);
  }
});

Deno.test("RFC 4475 at the parser: accepted messages parse; 400/505 ones are answerable", () => {
  for (const e of MANIFEST.messages) {
    const r = parseSipMessage(bytesOf(e));
    const label = `${e.section} ${e.file}`;
    if (e.outcome === "accept") assert.ok(r.ok, `${label}: ${!r.ok && r.reason}`);
    if (e.status === 400 || e.status === 505) {
      assert.ok(!r.ok && r.request !== undefined, `${label} should fail answerably`);
    }
  }
});

/** Datagrams received on one socket, parsed. */
class Listener {
  readonly conn = Deno.listenDatagram({ transport: "udp", hostname: "127.0.0.1", port: 0 });
  readonly port = (this.conn.addr as Deno.NetAddr).port;
  readonly got: SipMessage[] = [];
  garbled = 0;
  readonly #loop = (async () => {
    try {
      for (;;) {
        const [bytes] = await this.conn.receive();
        // Answers to malformed requests copy their malformed headers: frame, do not validate.
        const r = parseSipMessage(bytes, { validate: false });
        if (r.ok) this.got.push(r.message);
        else this.garbled++;
      }
    } catch {
      // closed
    }
  })();

  send(bytes: Uint8Array, port: number): Promise<number> {
    return this.conn.send(bytes, { transport: "udp", hostname: "127.0.0.1", port });
  }

  finals(): SipResponse[] {
    return this.got.filter((m): m is SipResponse => m.kind === "response" && m.status >= 200);
  }

  async waitFinal(ms: number): Promise<SipResponse | undefined> {
    const end = performance.now() + ms;
    while (performance.now() < end) {
      const f = this.finals()[0];
      if (f !== undefined) return f;
      await new Promise((r) => setTimeout(r, 5));
    }
    return undefined;
  }

  async close(): Promise<void> {
    this.conn.close();
    await this.#loop;
  }
}

const options = (port: number, n: number) =>
  new TextEncoder().encode(
    [
      "OPTIONS sip:agent@127.0.0.1 SIP/2.0",
      `Via: SIP/2.0/UDP 127.0.0.1:${port};branch=z9hG4bKalive${n}`,
      "From: <sip:probe@127.0.0.1>;tag=probe",
      "To: <sip:agent@127.0.0.1>",
      `Call-ID: alive-${n}@torture`,
      "CSeq: 1 OPTIONS",
      "Max-Forwards: 70",
      "Content-Length: 0",
      "",
      "",
    ].join("\r\n"),
  );

Deno.test("RFC 4475 against a running agent over UDP: the right answer, and it lives on", async () => {
  const { agent } = await startLoopbackAgent(
    loopbackSipConfig({
      server: "sip:127.0.0.1:9",
      login: "agent",
      password: "torture-pass",
      callerId: "+15550001111",
    }),
    // Short timers: some fixtures share a branch and sent-by (unkscm and novelsc, cparam01 and
    // cparam02), so each is sent once the previous one's transaction is over, or it would
    // rightly be taken as a retransmission.
    { timers: { T1: 2, T2: 8, T4: 10 } },
  );
  // The application declines every call, so a final 486 proves an INVITE reached it.
  const declining = (async () => {
    for (let inv = await agent.nextInbound(); inv; inv = await agent.nextInbound()) inv.reject(486);
  })();
  const wrong: string[] = [];
  try {
    for (const [n, e] of MANIFEST.messages.entries()) {
      const peer = new Listener();
      try {
        await until(() => agent.layer.size === 0, 2000, "idle transaction layer");
        await peer.send(bytesOf(e), agent.local.port);
        const label = `${e.section} ${e.file}`;
        if (e.outcome === "ignore") {
          await new Promise((r) => setTimeout(r, 150));
          if (peer.got.length > 0) {
            wrong.push(`${label}: expected no answer, got ${peer.got.length}`);
          }
        } else {
          const res = await peer.waitFinal(2000);
          if (res === undefined || res.status !== e.status) {
            const got = res?.status ?? (peer.garbled > 0 ? "garbled" : "nothing");
            wrong.push(`${label}: expected ${e.status}, got ${got}`);
          } else if (e.status === 400) {
            assert.match(res.reason, /^Bad Request \(.+\)$/, label);
          }
          checkSpecifics(e.file, peer);
        }
        const before = peer.finals().length;
        await peer.send(options(peer.port, n), agent.local.port);
        const end = performance.now() + 2000;
        while (peer.finals().length === before && performance.now() < end) {
          await new Promise((r) => setTimeout(r, 5));
        }
        const alive = peer.finals().find((f) => getHeader(f, "Call-ID") === `alive-${n}@torture`);
        assert.equal(alive?.status, 200, `the agent stopped answering after ${label}`);
      } finally {
        await peer.close();
      }
    }
    assert.deepEqual(wrong, []);
  } finally {
    await agent.close();
    await declining;
  }
});

/** Headers RFC 3261 asks for with some refusals, and the one-answer rule of dblreq. */
function checkSpecifics(file: string, peer: Listener): void {
  const final = peer.finals()[0];
  switch (file) {
    case "bext01.sip":
      assert.deepEqual(getHeaders(final, "Unsupported"), [
        "nothingSupportsThis",
        "nothingSupportsThisEither",
      ]);
      return;
    case "invut.sip":
      assert.equal(getHeader(final, "Accept"), "application/sdp");
      return;
    case "intmeth.sip":
    case "esc02.sip":
      assert.match(getHeader(final, "Allow") ?? "", /INVITE/);
      return;
    case "dblreq.sip":
      // Only the REGISTER is answered: the INVITE octets after it are noise (RFC 3261 §18.3).
      assert.ok(peer.got.every((m) => getHeader(m, "CSeq") === "8 REGISTER"));
      return;
  }
}
