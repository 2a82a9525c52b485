/**
 * SipAgent without sipp: a raw-datagram peer for the edge answers (OPTIONS 200, BYE/CANCEL
 * for unknown dialogs 481, no common codec 488, malformed datagrams, 503 when no RTP port is
 * free, SIP INFO keys, re-INVITE), two in-process agents calling each other (audio and RFC
 * 4733 both ways, reject, hangup from either side), and config / shutdown behaviour.
 */

import assert from "node:assert/strict";
import { FlowcatError } from "../core/errors.ts";
import type { MediaIn } from "../core/seams.ts";
import { getHeader, SipAgent, type SipAgentOptions, type SipConfig } from "../telephony/sip/mod.ts";
import { loopbackSipConfig, RawPeer, startLoopbackAgent } from "./_sip_peer.ts";
import { freeEvenPortBase, sine8k } from "./_sipp.ts";

const PASSWORD = "pa55-Secret";

const config = (extra: Partial<SipConfig> = {}) =>
  loopbackSipConfig({
    server: "sip:127.0.0.1:9",
    login: "bob",
    password: PASSWORD,
    callerId: "+15550002222",
  }, extra);

const startAgent = (extra: Partial<SipConfig> = {}, opts: SipAgentOptions = {}) =>
  startLoopbackAgent(config(extra), opts);

function sdp(port: number, formats = "0 101", extra = ""): string {
  return `v=0
o=- 1 1 IN IP4 127.0.0.1
s=-
c=IN IP4 127.0.0.1
t=0 0
m=audio ${port} RTP/AVP ${formats}
a=rtpmap:0 PCMU/8000
a=rtpmap:101 telephone-event/8000
${extra}`;
}

function request(
  method: string,
  peer: RawPeer,
  opts: { callId?: string; cseq?: number; toTag?: string; branch?: string; body?: string } = {},
): string {
  const body = (opts.body ?? "").replace(/\r?\n/g, "\r\n");
  return `${method} sip:+15557654321@127.0.0.1 SIP/2.0
Via: SIP/2.0/UDP 127.0.0.1:${peer.port};branch=${opts.branch ?? "z9hG4bK" + crypto.randomUUID()}
From: <sip:+15551230000@127.0.0.1>;tag=peer
To: <sip:+15557654321@127.0.0.1>${opts.toTag ? ";tag=" + opts.toTag : ""}
Call-ID: ${opts.callId ?? crypto.randomUUID()}
CSeq: ${opts.cseq ?? 1} ${method}
Contact: <sip:peer@127.0.0.1:${peer.port}>
Max-Forwards: 70
${body ? "Content-Type: application/sdp\n" : ""}Content-Length: ${
    new TextEncoder().encode(body).length
  }

${body}`;
}

Deno.test("OPTIONS is answered 200; BYE and CANCEL for unknown dialogs get 481; other methods 405 or 501", async () => {
  const { agent, logger } = await startAgent();
  const peer = new RawPeer();
  try {
    await peer.send(request("OPTIONS", peer), agent.local.port);
    const ok = await peer.response(200, "OPTIONS");
    assert.match(getHeader(ok, "Allow")!, /INVITE/);
    await peer.send(request("BYE", peer, { toTag: "nope" }), agent.local.port);
    await peer.response(481, "BYE");
    await peer.send(request("CANCEL", peer), agent.local.port);
    await peer.response(481, "CANCEL");
    await peer.send(request("SUBSCRIBE", peer), agent.local.port);
    assert.match(getHeader(await peer.response(405, "SUBSCRIBE"), "Allow")!, /INVITE/);
    await peer.send(request("FROBNICATE", peer), agent.local.port);
    await peer.response(501, "FROBNICATE");
  } finally {
    await peer.close();
    await agent.close();
  }
  assert.equal(JSON.stringify(logger.records).includes(PASSWORD), false);
});

Deno.test("an INVITE with no common codec gets 488 and never reaches nextInbound", async () => {
  const { agent } = await startAgent();
  const peer = new RawPeer();
  try {
    const g729 =
      "v=0\no=- 1 1 IN IP4 127.0.0.1\ns=-\nc=IN IP4 127.0.0.1\nt=0 0\nm=audio 4000 RTP/AVP 18\na=rtpmap:18 G729/8000\n";
    await peer.send(request("INVITE", peer, { body: g729 }), agent.local.port);
    await peer.response(100, "INVITE");
    const res = await peer.response(488, "INVITE");
    assert.match(getHeader(res, "To")!, /tag=/);
    await peer.send(request("INVITE", peer, { body: "" }), agent.local.port);
    await peer.response(488, "INVITE");
    await agent.close();
    assert.equal(await agent.nextInbound(), undefined);
  } finally {
    await peer.close();
    await agent.close();
  }
});

Deno.test("malformed datagrams are dropped with a logged reason and the agent keeps working", async () => {
  const { agent, logger } = await startAgent();
  const peer = new RawPeer();
  try {
    await peer.send("HELLO\n\n", agent.local.port);
    await peer.send("INVITE sip:x@y SIP/2.0\nVia: SIP/2.0/UDP 1.2.3.4\n\n", agent.local.port);
    await peer.send("\r\n\r\n", agent.local.port); // keep-alive: ignored, not counted
    await peer.send(request("OPTIONS", peer), agent.local.port);
    await peer.response(200, "OPTIONS");
    assert.equal(agent.counters.malformed, 2);
    const drops = logger.records.filter((r) => r.message === "sip datagram dropped");
    assert.equal(drops.length, 2);
    assert.ok(drops.every((r) => typeof r.fields?.reason === "string"));
  } finally {
    await peer.close();
    await agent.close();
  }
});

Deno.test("answer() with every RTP port taken: the caller gets 503 and answer() a clear error", async () => {
  const base = freeEvenPortBase(1);
  const held = Deno.listenDatagram({ transport: "udp", hostname: "127.0.0.1", port: base });
  const { agent } = await startAgent({ rtpPortBase: base, rtpPortTries: 1 });
  const peer = new RawPeer();
  try {
    await peer.send(request("INVITE", peer, { body: sdp(4000) }), agent.local.port);
    const invite = await agent.nextInbound();
    assert.ok(invite !== undefined);
    await assert.rejects(
      invite.answer(),
      (e) => e instanceof FlowcatError && /in use/.test(e.message),
    );
    await peer.response(503, "INVITE");
    assert.equal(invite.state, "rejected");
  } finally {
    held.close();
    await peer.close();
    await agent.close();
  }
});

Deno.test("SIP INFO dtmf-relay keys and a re-INVITE are handled inside the dialog", async () => {
  const { agent } = await startAgent();
  const peer = new RawPeer();
  const callId = crypto.randomUUID();
  try {
    await peer.send(request("INVITE", peer, { callId, body: sdp(4000) }), agent.local.port);
    const call = await (await agent.nextInbound())!.answer();
    const ok = await peer.response(200, "INVITE");
    const tag = /tag=([^;>\s]+)/.exec(getHeader(ok, "To")!)![1];
    assert.match(ok.body, /m=audio \d+ RTP\/AVP 0 101/);
    assert.match(getHeader(ok, "Contact")!, /^<sip:bob@127\.0\.0\.1:\d+>$/);
    await peer.send(request("ACK", peer, { callId, toTag: tag }), agent.local.port);
    const info = request("INFO", peer, { callId, toTag: tag, cseq: 2 })
      .replace("Content-Length: 0", "Content-Type: application/dtmf-relay\nContent-Length: 22")
      .replace(/\n$/, "\nSignal=5\nDuration=160\n");
    await peer.send(info, agent.local.port);
    await peer.response(200, "INFO");
    const seen: MediaIn[] = [];
    while (seen.at(-1)?.type !== "dtmf") seen.push((await call.transport.recv())!);
    assert.deepEqual(seen.at(-1), { type: "dtmf", key: "5" });
    // re-INVITE moving the peer's media: answered 200 with our SDP, version bumped.
    await peer.send(
      request("INVITE", peer, { callId, toTag: tag, cseq: 3, body: sdp(4100) }),
      agent.local.port,
    );
    const re = await peer.response(200, "3 INVITE");
    assert.match(re.body, /o=- (\d+) (\d+) IN IP4/);
    const [, id1, v1] = /o=- (\d+) (\d+)/.exec(ok.body)!;
    const [, id2, v2] = /o=- (\d+) (\d+)/.exec(re.body)!;
    assert.equal(id2, id1);
    assert.equal(BigInt(v2), BigInt(v1) + 1n);
    // An old CSeq is refused.
    await peer.send(request("INFO", peer, { callId, toTag: tag, cseq: 1 }), agent.local.port);
    await peer.response(500, "INFO");
    await peer.send(request("BYE", peer, { callId, toTag: tag, cseq: 4 }), agent.local.port);
    await peer.response(200, "BYE");
    assert.equal(await call.ended, "remote hangup");
  } finally {
    await peer.close();
    await agent.close();
  }
});

Deno.test("tags written with LWS or in another case find the dialog; an unknown one gets 481", async () => {
  const { agent } = await startAgent();
  const peer = new RawPeer();
  const callId = crypto.randomUUID();
  const withTo = (text: string, to: string) => text.replace(/^To: (.*)$/m, `To: $1${to}`);
  try {
    // RFC 4475 §3.1.1.1 writes `tag = 1918181833n`: an in-dialog INVITE, for no dialog here.
    const stray = withTo(request("INVITE", peer, { body: sdp(4000) }), " ;   tag    = 1918181833n");
    await peer.send(stray, agent.local.port);
    await peer.response(481, "INVITE");
    await peer.send(request("INVITE", peer, { callId, body: sdp(4000) }), agent.local.port);
    const call = await (await agent.nextInbound())!.answer();
    const ok = await peer.response(200, "INVITE");
    const tag = /tag=([^;>\s]+)/.exec(getHeader(ok, "To")!)![1];
    await peer.send(request("ACK", peer, { callId, toTag: tag }), agent.local.port);
    const bye = withTo(request("BYE", peer, { callId, cseq: 2 }), ` ; TAG = ${tag.toUpperCase()}`)
      .replace(";tag=peer", " ;\n  tag = PEER");
    await peer.send(bye, agent.local.port);
    await peer.response(200, "BYE");
    assert.equal(await call.ended, "remote hangup");
  } finally {
    await peer.close();
    await agent.close();
  }
});

/** Two agents on loopback: `caller` uses `callee` as its server. */
async function pair() {
  const callee = await startAgent();
  const caller = await startAgent({
    server: `sip:127.0.0.1:${callee.agent.local.port}`,
    callerId: "+15550001111",
  });
  return { caller: caller.agent, callee: callee.agent, logs: [caller.logger, callee.logger] };
}

Deno.test("two agents: call, audio and RFC 4733 both ways, callee hangs up, caller sees remote hangup", async () => {
  const { caller, callee, logs } = await pair();
  try {
    const answering = callee.nextInbound().then(async (inv) => {
      assert.equal(inv!.dialled, "+15557654321");
      assert.equal(inv!.caller, "+15550001111");
      return await inv!.answer();
    });
    const out = await caller.call("+15557654321");
    const inn = await answering;
    assert.equal((await out.transport.recv())?.type, "start");
    assert.equal((await inn.transport.recv())?.type, "start");
    // 16 kHz from the pipeline is resampled to 8 kHz on the wire.
    await out.transport.sendAudio({ pcm: sine8k(640, 400), sampleRate: 16000, numChannels: 1 });
    await inn.transport.sendAudio({ pcm: sine8k(320, 400), sampleRate: 8000, numChannels: 1 });
    await out.transport.sendDtmf(["1"], { durationMs: 40, gapMs: 10 });
    await inn.sendDtmf(["#"]);
    const firstOf = async (t: typeof out.transport, type: MediaIn["type"]) => {
      for (let m = await t.recv(); m !== undefined; m = await t.recv()) {
        if (m.type === type) return m;
      }
    };
    const a = await firstOf(inn.transport, "audio");
    assert.equal(a?.type === "audio" && a.audio.sampleRate, 8000);
    assert.deepEqual(await firstOf(inn.transport, "dtmf"), { type: "dtmf", key: "1" });
    assert.deepEqual(await firstOf(out.transport, "dtmf"), { type: "dtmf", key: "#" });
    assert.equal(await out.transport.sendClear(), undefined);
    await inn.transport.close(); // closing the leg sends BYE
    assert.equal(await inn.ended, "local hangup");
    assert.equal(await out.ended, "remote hangup");
    // After Stop the caller's leg reads undefined.
    let last: MediaIn | undefined = { type: "start", callId: "" };
    while (last !== undefined) last = await out.transport.recv();
    assert.equal(caller.calls.length, 0);
    assert.equal(callee.calls.length, 0);
  } finally {
    await caller.close();
    await callee.close();
  }
  for (const l of logs) assert.equal(JSON.stringify(l.records).includes(PASSWORD), false);
});

Deno.test("two agents: reject(486) fails the call with the status; a cancelled call rejects", async () => {
  const { caller, callee } = await pair();
  try {
    void callee.nextInbound().then((inv) => inv!.reject(486));
    await assert.rejects(caller.call("+15557654321"), /486 Busy Here/);
    const ctrl = new AbortController();
    const ringing = callee.nextInbound();
    const placing = caller.call("+15557654321", {
      signal: ctrl.signal,
      onProgress: (s) => s === 180 && ctrl.abort(),
    });
    await assert.rejects(placing, (e) => e instanceof FlowcatError && /cancelled/.test(e.message));
    const inv = await ringing;
    await inv!.cancelled;
    assert.equal(inv!.state, "cancelled");
  } finally {
    await caller.close();
    await callee.close();
  }
});

Deno.test("close(): ringing invites get 503, calls get BYE, later calls fail as closed", async () => {
  const { caller, callee } = await pair();
  try {
    const answering = callee.nextInbound().then((inv) => inv!.answer());
    const out = await caller.call("+15557654321");
    const inn = await answering;
    const ringing = callee.nextInbound();
    const second = caller.call("+15557654321").then(() => undefined, (e: Error) => e);
    assert.equal((await ringing)?.state, "ringing");
    await callee.close();
    assert.match(String(await second), /503 Service Unavailable/);
    assert.equal(await inn.ended, "agent closed");
    assert.equal(await out.ended, "remote hangup");
    await assert.rejects(callee.call("+15557654321"), /closed/);
  } finally {
    await caller.close();
    await callee.close();
  }
});

Deno.test("config errors are clear and never quote the password; a taken SIP port is reported", async () => {
  const bad = [
    { server: "not a uri at all", msg: /server/ },
    { publicIp: "example.com", msg: /publicIp/ },
    { rtpPortBase: 16001, msg: /even/ },
    { rtpPortTries: 0, msg: /rtpPortTries/ },
    { login: "", msg: /login/ },
  ];
  for (const b of bad) {
    const { msg, ...extra } = b;
    await assert.rejects(
      SipAgent.start(config(extra as Partial<SipConfig>)),
      (e) => e instanceof FlowcatError && msg.test(e.message) && !e.message.includes(PASSWORD),
    );
  }
  const { agent } = await startAgent();
  try {
    await assert.rejects(
      SipAgent.start(config({ sipPort: agent.local.port })),
      (e) => e instanceof FlowcatError && /already in use/.test(e.message),
    );
  } finally {
    await agent.close();
  }
});

Deno.test("publicIp is advertised in Via, Contact and SDP c=", async () => {
  const { agent } = await startAgent({ publicIp: "203.0.113.7" });
  const peer = new RawPeer();
  try {
    await peer.send(request("INVITE", peer, { body: sdp(4000) }), agent.local.port);
    const inv = await agent.nextInbound();
    const call = await inv!.answer();
    const ok = await peer.response(200, "INVITE");
    assert.match(getHeader(ok, "Contact")!, /@203\.0\.113\.7:/);
    assert.match(ok.body, /c=IN IP4 203\.0\.113\.7/);
    assert.match(agent.via(), /^SIP\/2\.0\/UDP 203\.0\.113\.7:\d+;branch=z9hG4bK[0-9a-f]+;rport$/);
    void call.hangup(); // BYE goes to the peer's Contact, not answered: hangup waits byeWaitMs
  } finally {
    await peer.close();
    await agent.close();
  }
});

Deno.test("SRTP in a dialog: the answer's key is kept on re-INVITE; dropping SRTP gets 488", async () => {
  const { agent } = await startAgent({}, { rtp: { srtp: "optional" } });
  const peer = new RawPeer();
  const callId = crypto.randomUUID();
  const crypto1 = `a=crypto:1 AES_CM_128_HMAC_SHA1_80 inline:${
    new Uint8Array(30).fill(7).toBase64()
  }\n`;
  const keyOf = (body: string) => /a=crypto:1 AES_CM_128_HMAC_SHA1_80 inline:(\S+)/.exec(body)?.[1];
  try {
    await peer.send(
      request("INVITE", peer, { callId, body: sdp(4000, "0 101", crypto1) }),
      agent.local.port,
    );
    const call = await (await agent.nextInbound())!.answer();
    const ok = await peer.response(200, "INVITE");
    const tag = /tag=([^;>\s]+)/.exec(getHeader(ok, "To")!)![1];
    const ours = keyOf(ok.body);
    assert.ok(ours !== undefined, ok.body);
    assert.notEqual(ours, new Uint8Array(30).fill(7).toBase64(), "our own key, not the peer's");
    assert.ok(call.media.srtp);
    await peer.send(request("ACK", peer, { callId, toTag: tag }), agent.local.port);
    await peer.send(
      request("INVITE", peer, { callId, toTag: tag, cseq: 2, body: sdp(4100, "0 101", crypto1) }),
      agent.local.port,
    );
    const re = await peer.response(200, "2 INVITE");
    assert.equal(keyOf(re.body), ours, "the re-INVITE's answer keeps our key");
    await peer.send(
      request("INVITE", peer, { callId, toTag: tag, cseq: 3, body: sdp(4100) }),
      agent.local.port,
    );
    await peer.response(488, "3 INVITE");
    await peer.send(request("BYE", peer, { callId, toTag: tag, cseq: 4 }), agent.local.port);
    await peer.response(200, "BYE");
    assert.equal(await call.ended, "remote hangup");
  } finally {
    await peer.close();
    await agent.close();
  }
});
