/**
 * Registration over TLS: a registrar on a Deno TLS listener (certificate from a test CA made with
 * openssl) challenges REGISTER with digest; the agent verifies the registrar's certificate,
 * answers the challenge on the same connection, and registers. One connection carries it all.
 */

import assert from "node:assert/strict";
import { memoryLogger } from "../core/log.ts";
import {
  buildResponse,
  encodeSipMessage,
  getHeader,
  parseSipMessage,
  SipAgent,
  type SipRequest,
} from "../telephony/sip/mod.ts";
import { SipStreamFramer } from "../telephony/sip/stream_framer.ts";
import { freeEvenPortBase } from "./_sipp.ts";
import { makeTestCerts } from "./_tls_certs.ts";

/** Register over TLS to a registrar on a Deno TLS listener; `listen` gives the agent its own. */
async function registerOverTls(listen: boolean): Promise<void> {
  const certs = makeTestCerts();
  const listener = Deno.listenTls({
    hostname: "127.0.0.1",
    port: 0,
    cert: Deno.readTextFileSync(certs.certFile),
    key: Deno.readTextFileSync(certs.keyFile),
  });
  const port = (listener.addr as Deno.NetAddr).port;
  const seen: SipRequest[] = [];
  let connections = 0;
  const peerPorts: number[] = [];
  const serve = (async () => {
    for await (const conn of listener) {
      connections++;
      peerPorts.push((conn.remoteAddr as Deno.NetAddr).port);
      const framer = new SipStreamFramer();
      const buf = new Uint8Array(8192);
      try {
        for (let n = await conn.read(buf); n !== null; n = await conn.read(buf)) {
          for (const bytes of framer.push(buf.subarray(0, n)).messages) {
            const r = parseSipMessage(bytes);
            if (!r.ok || r.message.kind !== "request") continue;
            const req = r.message;
            seen.push(req);
            const res = getHeader(req, "Authorization") === undefined
              ? buildResponse(req, 401, {
                headers: [{
                  name: "WWW-Authenticate",
                  value: 'Digest realm="tls.test", nonce="abc123", algorithm=MD5, qop="auth"',
                }],
              })
              : buildResponse(req, 200, { headers: [{ name: "Expires", value: "300" }] });
            await conn.write(encodeSipMessage(res));
          }
        }
      } catch {
        // closed
      }
    }
  })();
  const logger = memoryLogger();
  const agent = await SipAgent.start({
    server: `sips:127.0.0.1:${port}`,
    login: "alice",
    password: "tls-secret-pw",
    callerId: "+15550001111",
    bindHost: "127.0.0.1",
    sipPort: 0,
    rtpPortBase: freeEvenPortBase(1),
    rtpPortTries: 1,
    tls: {
      caCerts: [Deno.readTextFileSync(certs.caFile)],
      ...(listen
        ? {
          port: 0,
          cert: Deno.readTextFileSync(certs.certFile),
          key: Deno.readTextFileSync(certs.keyFile),
        }
        : {}),
    },
  }, { logger });
  try {
    await agent.register();
    assert.equal(agent.registrationState, "registered");
    assert.equal(seen.length, 2);
    assert.equal(connections, 1, "the challenge was answered on the same connection");
    // The sent-by port is where we take TLS: our listener, else this connection's own port.
    const sentBy = listen ? agent.tlsLocal!.port : peerPorts[0];
    assert.notEqual(sentBy, agent.local.port, "not the UDP port");
    for (const r of seen) {
      assert.ok(
        getHeader(r, "Via")!.startsWith(`SIP/2.0/TLS 127.0.0.1:${sentBy};`),
        getHeader(r, "Via") ?? "no Via",
      );
    }
    assert.equal(seen[0].uri, `sips:127.0.0.1:${port}`);
    assert.match(getHeader(seen[1], "Authorization")!, /realm="tls\.test"/);
  } finally {
    const closing = agent.close();
    await closing;
    listener.close();
    await serve;
    Deno.removeSync(certs.dir, { recursive: true });
  }
  assert.ok(!JSON.stringify(logger.records).includes("tls-secret-pw"));
}

Deno.test("REGISTER over TLS: certificate verified, digest answered on one connection", async () => {
  await registerOverTls(false);
});

Deno.test("REGISTER over TLS from an agent that listens for TLS: Via names that port", async () => {
  await registerOverTls(true);
});
