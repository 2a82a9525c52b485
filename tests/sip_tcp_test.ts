/**
 * SIP over TCP: Content-Length framing on a stream (split, coalesced, keep-alive pings, broken
 * streams), and the TCP transport on 127.0.0.1 (responses on the connection a request came in
 * on, one connection per peer reused for later sends).
 */

import assert from "node:assert/strict";
import { buildRequest } from "../telephony/sip/build.ts";
import { parseServer, resolveSipConfig, serverAddress } from "../telephony/sip/config.ts";
import { uriDestination } from "../telephony/sip/dialog.ts";
import { SipAgent } from "../telephony/sip/agent.ts";
import { SipStreamFramer } from "../telephony/sip/stream_framer.ts";
import { freeEvenPortBase } from "./_sipp.ts";
import { overStream } from "../telephony/sip/tcp_via.ts";
import { SipTcpTransport } from "../telephony/sip/tcp.ts";
import type { UdpAddress } from "../telephony/sip/udp.ts";

const enc = (s: string) => new TextEncoder().encode(s);
const dec = (b: Uint8Array) => new TextDecoder().decode(b);

const OPTIONS =
  "OPTIONS sip:a@127.0.0.1 SIP/2.0\r\nVia: SIP/2.0/TCP 127.0.0.1:5070;branch=z9hG4bK1\r\n" +
  "Content-Length: 0\r\n\r\n";
const MESSAGE =
  "MESSAGE sip:a@127.0.0.1 SIP/2.0\r\nVia: SIP/2.0/TCP 127.0.0.1;branch=z9hG4bK2\r\n" +
  "l: 5\r\n\r\nhello";

Deno.test("framer: messages split at any byte and coalesced come out whole, in order", () => {
  const wire = enc(OPTIONS + MESSAGE + OPTIONS);
  for (let cut = 1; cut < wire.length; cut += 7) {
    const f = new SipStreamFramer();
    const a = f.push(wire.subarray(0, cut));
    const b = f.push(wire.subarray(cut));
    const all = [...a.messages, ...b.messages].map(dec);
    assert.deepEqual(all, [OPTIONS, MESSAGE, OPTIONS], `cut at ${cut}`);
  }
});

Deno.test("framer: double CRLF is a ping, a lone CRLF a pong; both skipped", () => {
  const f = new SipStreamFramer();
  const out = f.push(enc("\r\n\r\n" + OPTIONS + "\r\n" + "\r\n\r\n"));
  assert.deepEqual(out.messages.map(dec), [OPTIONS]);
  assert.equal(out.pings, 2);
});

Deno.test("framer: a message without Content-Length, a bad one, or too large breaks the stream", () => {
  const noLength = new SipStreamFramer().push(enc("OPTIONS sip:a SIP/2.0\r\nVia: x\r\n\r\n"));
  assert.match(noLength.error!, /without Content-Length/);
  const bad = new SipStreamFramer().push(
    enc("OPTIONS sip:a SIP/2.0\r\nContent-Length: -3\r\n\r\n"),
  );
  assert.match(bad.error!, /malformed Content-Length/);
  const huge = new SipStreamFramer().push(
    enc("OPTIONS sip:a SIP/2.0\r\nContent-Length: 900000\r\n\r\n"),
  );
  assert.match(huge.error!, /too large/);
  const endless = new SipStreamFramer().push(
    enc("OPTIONS sip:a SIP/2.0\r\nX: " + "a".repeat(70000)),
  );
  assert.match(endless.error!, /headers too long/);
});

async function until(cond: () => boolean, what: string): Promise<void> {
  const end = performance.now() + 3000;
  while (!cond()) {
    if (performance.now() > end) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 5));
  }
}

Deno.test("transport: replies go back on the inbound connection; later sends reuse it", async () => {
  const server = SipTcpTransport.listen("127.0.0.1", 0);
  const got: [string, UdpAddress][] = [];
  server.start((bytes, from) => got.push([dec(bytes), from]));
  const client = await Deno.connect({ hostname: "127.0.0.1", port: server.local.port });
  try {
    // Split across writes, with a ping in front.
    const wire = enc("\r\n\r\n" + OPTIONS + MESSAGE);
    await client.write(wire.subarray(0, 30));
    await new Promise((r) => setTimeout(r, 20));
    await client.write(wire.subarray(30));
    await until(() => got.length === 2, "two messages");
    assert.deepEqual(got.map(([m]) => m), [OPTIONS, MESSAGE]);
    const from = got[0][1];
    assert.equal(from.transport, "tcp");
    assert.equal(from.port, (client.localAddr as Deno.NetAddr).port);
    server.send(enc("SIP/2.0 200 OK\r\nContent-Length: 0\r\n\r\n"), from);
    server.send(enc("SIP/2.0 202 Accepted\r\nContent-Length: 0\r\n\r\n"), { ...from });
    const buf = new Uint8Array(4096);
    let text = "";
    while (!text.includes("202 Accepted")) {
      const n = await client.read(buf);
      assert.ok(n !== null, "connection stayed open");
      text += dec(buf.subarray(0, n));
    }
    assert.equal(
      text,
      "\r\nSIP/2.0 200 OK\r\nContent-Length: 0\r\n\r\nSIP/2.0 202 Accepted\r\nContent-Length: 0\r\n\r\n",
    );
    assert.equal(server.connections, 1);
  } finally {
    client.close();
    await server.close();
  }
});

Deno.test("transport: sending to a new peer connects once, and its answer comes back", async () => {
  const a = SipTcpTransport.listen("127.0.0.1", 0);
  const b = SipTcpTransport.listen("127.0.0.1", 0);
  const atA: [string, UdpAddress][] = [];
  const atB: [string, UdpAddress][] = [];
  a.start((m, from) => atA.push([dec(m), from]));
  b.start((m, from) => {
    atB.push([dec(m), from]);
    b.send(enc("SIP/2.0 200 OK\r\nContent-Length: 0\r\n\r\n"), from);
  });
  try {
    a.send(enc(OPTIONS), b.local);
    a.send(enc(MESSAGE), b.local); // queued behind the connect, same connection
    await until(() => atB.length === 2 && atA.length === 2, "both ways");
    assert.deepEqual(atB.map(([m]) => m), [OPTIONS, MESSAGE]);
    assert.equal(atB[0][1].port, atB[1][1].port, "one connection");
    assert.equal(atA[0][1].port, b.local.port, "answers came on a's outbound connection");
    assert.equal(a.connections, 1);
    assert.equal(b.connections, 1);
  } finally {
    await a.close();
    await b.close();
  }
});

Deno.test("transport: a broken stream closes its connection and is counted", async () => {
  const server = SipTcpTransport.listen("127.0.0.1", 0);
  server.start(() => {});
  const client = await Deno.connect({ hostname: "127.0.0.1", port: server.local.port });
  try {
    await client.write(enc("OPTIONS sip:a SIP/2.0\r\nVia: x\r\n\r\n"));
    const n = await client.read(new Uint8Array(16));
    assert.equal(n, null, "the server closed the connection");
    assert.equal(server.errors, 1);
  } finally {
    client.close();
    await server.close();
  }
});

Deno.test("transport=tcp: server URIs and contacts route over TCP; our Via says TCP", () => {
  const { settings } = resolveSipConfig({
    server: "sip:trunk.example.com:5070;transport=TCP",
    login: "a",
    password: "x",
    callerId: "+15551230000",
  });
  assert.equal(settings.tcp, true, "a TCP server turns the TCP listener on");
  assert.deepEqual(serverAddress(settings.server), {
    hostname: "trunk.example.com",
    port: 5070,
    transport: "tcp",
  });
  assert.equal(settings.server.uri, "sip:trunk.example.com:5070;transport=tcp");
  const udp = resolveSipConfig({ server: "sip:h", login: "a", password: "x", callerId: "" });
  assert.equal(udp.settings.tcp, false);
  assert.equal(serverAddress(udp.settings.server).transport, undefined);
  assert.throws(
    () =>
      resolveSipConfig({ server: "sip:h;transport=sctp", login: "a", password: "x", callerId: "" }),
    /transport=sctp is not supported/,
  );
  assert.equal(uriDestination("<sip:bob@127.0.0.1:5099;transport=tcp>")?.transport, "tcp");
  assert.equal(uriDestination("sip:bob@127.0.0.1:5099")?.transport, undefined);
  const req = buildRequest("OPTIONS", "sip:h", [
    { name: "Via", value: "SIP/2.0/UDP 192.0.2.1:5060;branch=z9hG4bKx;rport" },
    { name: "Via", value: "SIP/2.0/UDP 192.0.2.9;branch=z9hG4bKy" },
  ]);
  const stamped = overStream(req, "tcp", 5070);
  assert.deepEqual(stamped.headers.map((h) => h.value), [
    "SIP/2.0/TCP 192.0.2.1:5070;branch=z9hG4bKx;rport",
    "SIP/2.0/UDP 192.0.2.9;branch=z9hG4bKy",
  ]);
  assert.equal(req.headers[0].value.startsWith("SIP/2.0/UDP"), true, "the original is untouched");
});

Deno.test("sips: and transport=tls route over TLS on 5061; a certificate needs its key", () => {
  const tls = parseServer("sips:trunk.example.com");
  assert.deepEqual(serverAddress(tls), {
    hostname: "trunk.example.com",
    port: 5061,
    transport: "tls",
  });
  assert.equal(tls.uri, "sips:trunk.example.com");
  assert.equal(serverAddress(parseServer("sip:h:5071;transport=tls")).transport, "tls");
  assert.deepEqual(uriDestination("<sips:bob@127.0.0.1>"), {
    hostname: "127.0.0.1",
    port: 5061,
    transport: "tls",
  });
  const base = { server: "sip:h", login: "a", password: "x", callerId: "" };
  assert.throws(() => resolveSipConfig({ ...base, tls: { cert: "PEM" } }), /both cert and key/);
  assert.equal(resolveSipConfig({ ...base, tls: { caCerts: [] } }).settings.tlsPort, undefined);
  const listening =
    resolveSipConfig({ ...base, tls: { cert: "C", key: "SECRET-KEY-PEM" } }).settings;
  assert.equal(listening.tlsPort, 5061);
  assert.ok(!JSON.stringify(listening).includes("SECRET-KEY-PEM"), "the key stays out");
});

Deno.test("a TCP server that refuses the connection fails the call at once with 503", async () => {
  const closed = Deno.listen({ hostname: "127.0.0.1", port: 0 });
  const port = (closed.addr as Deno.NetAddr).port;
  closed.close();
  const agent = await SipAgent.start({
    server: `sip:127.0.0.1:${port};transport=tcp`,
    login: "a",
    password: "x",
    callerId: "+15551230000",
    bindHost: "127.0.0.1",
    sipPort: 0,
    rtpPortBase: freeEvenPortBase(1),
    rtpPortTries: 1,
  });
  try {
    const t0 = performance.now();
    await assert.rejects(agent.call("+15557654321"), /503 Service Unavailable \(transport error\)/);
    assert.ok(performance.now() - t0 < 5000, "well before Timer B (32 s)");
    await assert.rejects(agent.register(), /503/);
  } finally {
    await agent.close();
  }
});

Deno.test("transport: an idle connection is closed unless a live Call-ID used it", async () => {
  let live = new Set(["call-live"]);
  const server = SipTcpTransport.listen("127.0.0.1", 0);
  const seen: string[] = [];
  server.start((m) => seen.push(dec(m)), undefined, {
    idleMs: 150,
    inUse: (callId) => live.has(callId),
  });
  const request = (callId: string) =>
    enc(`OPTIONS sip:a@127.0.0.1 SIP/2.0\r\nCall-ID: ${callId}\r\nContent-Length: 0\r\n\r\n`);
  const inCall = await Deno.connect({ hostname: "127.0.0.1", port: server.local.port });
  const stray = await Deno.connect({ hostname: "127.0.0.1", port: server.local.port });
  try {
    await inCall.write(request("call-live"));
    await stray.write(request("call-gone"));
    await until(() => seen.length === 2, "both requests");
    const started = Date.now();
    assert.equal(await stray.read(new Uint8Array(16)), null, "the unused connection was closed");
    assert.ok(Date.now() - started >= 100, "not before it was idle");
    assert.equal(server.connections, 1);
    // The dialog's connection survives well past the idle limit and still carries requests.
    await new Promise((r) => setTimeout(r, 400));
    await inCall.write(request("call-live"));
    await until(() => seen.length === 3, "the third request on the live connection");
    live = new Set();
    assert.equal(await inCall.read(new Uint8Array(16)), null, "closed once the dialog ended");
    await until(() => server.connections === 0, "no connection left");
  } finally {
    inCall.close();
    stray.close();
    await server.close();
  }
});
