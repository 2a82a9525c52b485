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

Deno.test("REGISTER over TLS: certificate verified, digest answered on one connection", async () => {
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
  const serve = (async () => {
    for await (const conn of listener) {
      connections++;
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
    tls: { caCerts: [Deno.readTextFileSync(certs.caFile)] },
  }, { logger });
  try {
    await agent.register();
    assert.equal(agent.registrationState, "registered");
    assert.equal(seen.length, 2);
    assert.equal(connections, 1, "the challenge was answered on the same connection");
    for (const r of seen) assert.match(getHeader(r, "Via")!, /^SIP\/2\.0\/TLS 127\.0\.0\.1:\d+;/);
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
});
