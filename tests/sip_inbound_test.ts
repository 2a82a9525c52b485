/**
 * Who may start things on the agent: the source allowlist (addresses and CIDR blocks; refused
 * sources get 403 or nothing), the digest challenge of new INVITEs (checked against the
 * client side of digest.ts), and 503 to OPTIONS and INVITEs while the embedder drains.
 */

import assert from "node:assert/strict";
import {
  buildResponse,
  DigestClient,
  DigestCredentials,
  DigestVerifier,
  getHeader,
  parseSipMessage,
  selectChallenge,
  type SipConfig,
  type SipRequest,
  SourceFilter,
} from "../telephony/sip/mod.ts";
import type { SipAgentOptions } from "../telephony/sip/agent.ts";
import { loopbackSipConfig, RawPeer, startLoopbackAgent } from "./_sip_peer.ts";

Deno.test("SourceFilter: addresses and CIDR blocks, IPv4 and IPv6, mapped IPv4", () => {
  const f = SourceFilter.parse(["203.0.113.0/24", "198.51.100.7", "2001:db8::/32", "::1"]);
  assert.ok(f.admits("203.0.113.200"));
  assert.ok(!f.admits("203.0.114.1"));
  assert.ok(f.admits("198.51.100.7"));
  assert.ok(!f.admits("198.51.100.8"));
  assert.ok(f.admits("2001:db8:1::5"));
  assert.ok(f.admits("[::1]"));
  assert.ok(f.admits("::ffff:203.0.113.9"), "an IPv4-mapped source matches its IPv4 block");
  assert.ok(!f.admits("not-an-ip"));
  assert.ok(SourceFilter.parse(["0.0.0.0/0"]).admits("192.0.2.1"));
  assert.throws(() => SourceFilter.parse(["10.0.0.0/33"]), /not an IP address or CIDR block/);
  assert.throws(() => SourceFilter.parse(["example.com"]), /not an IP address/);
});

const INVITE = (auth = "") =>
  parseSipMessage(
    [
      "INVITE sip:agent@192.0.2.9 SIP/2.0",
      "Via: SIP/2.0/UDP 192.0.2.1;branch=z9hG4bK1",
      "From: <sip:pbx@192.0.2.1>;tag=1",
      "To: <sip:agent@192.0.2.9>",
      "Call-ID: c1",
      "CSeq: 1 INVITE",
      ...(auth ? [auth] : []),
      "Content-Length: 0",
      "",
      "",
    ].join("\r\n"),
  ) as { ok: true; message: SipRequest };

/** The client's answer to `verifier`'s challenge, as a header line. */
function answer(
  verifier: DigestVerifier,
  password: string,
  user = "pbx",
  uri = "sip:agent@192.0.2.9",
): string {
  const challenge = buildResponse(INVITE().message, verifier.status, {
    headers: verifier.challenge(),
  });
  const ch = selectChallenge(challenge);
  assert.ok(ch.ok);
  const client = new DigestClient(new DigestCredentials(user, password));
  const h = client.authorize(ch.value, "INVITE", uri);
  assert.ok(h.ok);
  return `${h.value.name}: ${h.value.value}`;
}

Deno.test("DigestVerifier: the client's answer passes; wrong password, user or uri do not", () => {
  let now = 1_000_000;
  const v = new DigestVerifier(new DigestCredentials("pbx", "in-s3cret"), {
    realm: "flowcat",
    nonceTtlMs: 1000,
    algorithms: ["SHA-256", "MD5"],
    now: () => now,
  });
  assert.equal(v.verify(INVITE().message), "missing");
  const headers = v.challenge();
  assert.deepEqual(headers.map((h) => h.name), ["WWW-Authenticate", "WWW-Authenticate"]);
  assert.match(headers[0].value, /algorithm=SHA-256, qop="auth"$/);
  const good = answer(v, "in-s3cret");
  assert.match(good, /algorithm=SHA-256/, "the client took the strongest offer");
  assert.equal(v.verify(INVITE(good).message), "ok");
  assert.equal(v.verify(INVITE(good).message), "refused", "the same nc twice is a replay");
  assert.equal(v.verify(INVITE(answer(v, "wrong")).message), "refused");
  assert.equal(v.verify(INVITE(answer(v, "in-s3cret", "other")).message), "refused");
  // The digest-uri must name this destination; sipp signs host:port without the user.
  assert.equal(v.verify(INVITE(answer(v, "in-s3cret", "pbx", "sip:192.0.2.9")).message), "ok");
  const elsewhere = answer(v, "in-s3cret", "pbx", "sip:agent@192.0.2.99");
  assert.equal(v.verify(INVITE(elsewhere).message), "refused");
  const forged = good.replace(/nonce="(\w{28})\w+"/, 'nonce="$1' + "0".repeat(32) + '"');
  assert.equal(v.verify(INVITE(forged).message), "refused");
  const later = answer(v, "in-s3cret");
  now += 5000;
  assert.equal(v.verify(INVITE(later).message), "stale");
  assert.match(v.challenge(true)[0].value, /stale=true/);
  const proxy = new DigestVerifier(new DigestCredentials("pbx", "p"), { realm: "r", proxy: true });
  assert.equal(proxy.status, 407);
  assert.deepEqual(proxy.challenge().map((h) => h.name), ["Proxy-Authenticate"]);
  assert.match(proxy.challenge()[0].value, /algorithm=MD5/, "MD5 alone by default");
});

const config = (extra: Partial<SipConfig> = {}) =>
  loopbackSipConfig({
    server: "sip:127.0.0.1:9",
    login: "agent",
    password: "trunk-pass",
    callerId: "+15550002222",
  }, extra);

function options(peer: RawPeer, callId = crypto.randomUUID()): string {
  return `OPTIONS sip:agent@127.0.0.1 SIP/2.0
Via: SIP/2.0/UDP 127.0.0.1:${peer.port};branch=z9hG4bK${crypto.randomUUID()}
From: <sip:probe@127.0.0.1>;tag=p
To: <sip:agent@127.0.0.1>
Call-ID: ${callId}
CSeq: 1 OPTIONS
Max-Forwards: 70
Content-Length: 0

`;
}

async function withAgent(
  opts: SipAgentOptions,
  fn: (port: number, peer: RawPeer) => Promise<void>,
) {
  const { agent } = await startLoopbackAgent(config(), opts);
  const peer = new RawPeer();
  try {
    await fn(agent.local.port, peer);
  } finally {
    await peer.close();
    await agent.close();
  }
  return agent;
}

Deno.test("a source outside the allowlist gets 403; an allowed one is served", async () => {
  const agent = await withAgent({ inbound: { allow: ["127.0.0.2"] } }, async (port, peer) => {
    await peer.send(options(peer), port);
    const res = await peer.response(403, "OPTIONS");
    assert.equal(res.reason, "Forbidden (source not allowed)");
  });
  assert.equal(agent.counters.refusedSources, 1);
  await withAgent({ inbound: { allow: ["127.0.0.0/8"] } }, async (port, peer) => {
    await peer.send(options(peer), port);
    await peer.response(200, "OPTIONS");
  });
});

Deno.test("refused: ignore answers nothing, not even to a malformed request", async () => {
  const agent = await withAgent(
    { inbound: { allow: ["192.0.2.0/24"], refused: "ignore" } },
    async (port, peer) => {
      await peer.send(options(peer), port);
      await peer.send(options(peer).replace("To: <sip:agent@127.0.0.1>\n", ""), port);
      await new Promise((r) => setTimeout(r, 150));
      assert.equal(peer.received.length, 0);
    },
  );
  assert.equal(agent.counters.refusedSources, 2);
});

Deno.test("OPTIONS and new INVITEs get 503 while the embedder is unavailable", async () => {
  let draining = false;
  await withAgent({ unavailable: () => draining }, async (port, peer) => {
    await peer.send(options(peer), port);
    await peer.response(200, "OPTIONS");
    draining = true;
    peer.received.length = 0;
    await peer.send(options(peer), port);
    await peer.response(503, "OPTIONS");
  });
});

Deno.test("an inbound INVITE is challenged; the answer to the challenge is taken", async () => {
  const credentials = new DigestCredentials("pbx", "in-s3cret");
  const { agent } = await startLoopbackAgent(config(), {
    inbound: { auth: { realm: "flowcat", credentials } },
  });
  const peer = new RawPeer();
  const sdp = "v=0\no=- 1 1 IN IP4 127.0.0.1\ns=-\nc=IN IP4 127.0.0.1\nt=0 0\n" +
    "m=audio 4000 RTP/AVP 0\n";
  const invite = (cseq: number, auth = "") =>
    `INVITE sip:agent@127.0.0.1 SIP/2.0
Via: SIP/2.0/UDP 127.0.0.1:${peer.port};branch=z9hG4bK-auth-${cseq}
From: <sip:pbx@127.0.0.1>;tag=p
To: <sip:agent@127.0.0.1>
Call-ID: auth-call
CSeq: ${cseq} INVITE
Max-Forwards: 70
${auth}Content-Type: application/sdp
Content-Length: ${sdp.replaceAll("\n", "\r\n").length}

${sdp}`;
  try {
    await peer.send(invite(1), agent.local.port);
    const challenge = await peer.response(401, "INVITE");
    assert.match(getHeader(challenge, "WWW-Authenticate")!, /^Digest realm="flowcat"/);
    const ch = selectChallenge(challenge);
    assert.ok(ch.ok);
    const client = new DigestClient(credentials);
    const auth = client.authorize(ch.value, "INVITE", "sip:agent@127.0.0.1");
    assert.ok(auth.ok);
    await peer.send(invite(2, `${auth.value.name}: ${auth.value.value}\n`), agent.local.port);
    const inv = await agent.nextInbound();
    assert.equal(inv?.callId, "auth-call");
    inv!.reject(486);
    await peer.response(486, "INVITE");
  } finally {
    await peer.close();
    await agent.close();
  }
});
