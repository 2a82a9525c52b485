/**
 * A real SIP user agent, Debian's baresip (headless, its own config directory), against the
 * SIP agent over UDP, TCP and TLS with SRTP keyed by SDES: it calls us and we call it, the call is set up
 * encrypted, each side hears the other's tone (decoded, measured at its frequency), RFC 4733
 * keys pressed on either side arrive, and a BYE ends it. A baresip that offers no keys is refused 488 when SRTP is required.
 */

import assert from "node:assert/strict";
import type { MediaIn } from "../core/seams.ts";
import { getHeader, type SipCall } from "../telephony/sip/mod.ts";
import type { SrtpPolicy } from "../telephony/sip/sdes.ts";
import { toneAmplitude } from "./_audio_helpers.ts";
import { hasBaresip, startBaresip } from "./_baresip.ts";
import { loopbackSipConfig, startLoopbackAgent } from "./_sip_peer.ts";
import { sine8k } from "./_sipp.ts";
import { makeTestCerts } from "./_tls_certs.ts";

const ignore = !hasBaresip();
const TRUNK = { login: "agent", password: "not-used-here", callerId: "+15551230000" };
const OUR_HZ = 600;
const THEIR_HZ = 440;

function agentFor(srtp: SrtpPolicy, server = "sip:127.0.0.1:9", tcp = false) {
  return startLoopbackAgent(loopbackSipConfig({ server, ...TRUNK }, { tcp }), {
    rtp: { srtp, rtcpIntervalMs: 500 },
  });
}

/** Everything the agent hears until the call ends: audio and key presses. */
async function listen(call: SipCall): Promise<{ pcm: Int16Array; keys: string[] }> {
  const parts: Int16Array[] = [];
  const keys: string[] = [];
  for (let m: MediaIn | undefined = await call.transport.recv(); m !== undefined;) {
    if (m.type === "audio") parts.push(m.audio.pcm);
    if (m.type === "dtmf") keys.push(m.key);
    m = await call.transport.recv();
  }
  const pcm = new Int16Array(parts.reduce((n, p) => n + p.length, 0));
  let o = 0;
  for (const p of parts) {
    pcm.set(p, o);
    o += p.length;
  }
  return { pcm, keys };
}

/** 1.5 s of our tone, sent to the caller. */
function sendOurTone(call: SipCall): Promise<void> {
  return call.transport.sendAudio({
    pcm: sine8k(8000 * 1.5, OUR_HZ, 6000),
    sampleRate: 8000,
    numChannels: 1,
  });
}

/**
 * Call baresip with SRTP, send our tone, hang up after 1.5 s and check the agent heard
 * baresip's tone; baresip's console output once it has quit.
 */
async function callAndHangUp(
  agent: Awaited<ReturnType<typeof startLoopbackAgent>>["agent"],
  bs: ReturnType<typeof startBaresip>,
): Promise<string> {
  await bs.ready();
  const call = await agent.call("+15557654321");
  assert.ok(call.media.srtp);
  const heard = listen(call);
  await sendOurTone(call);
  await new Promise((r) => setTimeout(r, 1500));
  await call.hangup();
  assert.equal(await call.ended, "local hangup");
  assertHears((await heard).pcm, THEIR_HZ, "agent");
  bs.kill();
  return (await bs.done).output;
}

/** The tone at `hz` is there, loud, and well above a frequency nobody sent. */
function assertHears(pcm: Int16Array, hz: number, who: string): void {
  assert.ok(pcm.length >= 8000 * 0.5, `${who}: only ${pcm.length} samples`);
  const at = toneAmplitude(pcm, hz, 8000);
  const off = toneAmplitude(pcm, 1300, 8000);
  assert.ok(at > 1000, `${who}: ${hz} Hz amplitude ${at.toFixed(0)}`);
  assert.ok(at > 20 * off, `${who}: ${hz} Hz ${at.toFixed(0)} vs 1300 Hz ${off.toFixed(0)}`);
}

Deno.test({
  name: "baresip calls us with RTP/SAVP (SDES): tones both ways decrypted, its BYE ends the call",
  ignore,
  async fn() {
    const { agent } = await agentFor("required");
    const bs = startBaresip({
      tone: sine8k(8000 * 2, THEIR_HZ),
      mediaenc: "srtp-mand",
      dial: `sip:+15557654321@127.0.0.1:${agent.local.port}`,
      quitAfterSeconds: 4,
    });
    try {
      const invite = await agent.nextInbound();
      assert.ok(invite);
      const call = await invite.answer();
      assert.equal(call.media.srtp?.send.suite, "AES_CM_128_HMAC_SHA1_80");
      const heard = listen(call);
      await sendOurTone(call);
      // baresip's microphone file ends after 2 s; it then hangs up (BYE).
      assert.equal(await call.ended, "remote hangup");
      assertHears((await heard).pcm, THEIR_HZ, "agent");
      assert.equal(call.stats.srtpAuthFailed, 0);
      assert.equal(call.stats.srtpReplayed, 0);
      const out = await bs.done;
      assert.match(out.output, /SRTP is Enabled \(cryptosuite=AES_CM_128_HMAC_SHA1_80\)/);
      assertHears(bs.received(), OUR_HZ, "baresip");
    } finally {
      bs.kill();
      await bs.done;
      bs.cleanup();
      await agent.close();
    }
  },
});

Deno.test({
  name: "we call baresip with best-effort SRTP: keys both ways, tones both ways, our BYE ends it",
  ignore,
  async fn() {
    const bs = startBaresip({
      tone: sine8k(8000 * 6, THEIR_HZ),
      mediaenc: "srtp",
      quitAfterSeconds: 10,
    });
    const { agent } = await agentFor("optional", `sip:127.0.0.1:${bs.sipPort}`);
    try {
      await bs.ready();
      const call = await agent.call("+15557654321");
      assert.ok(call.media.srtp, "the answer carried an SDES key");
      const heard = listen(call);
      await sendOurTone(call);
      await new Promise((r) => setTimeout(r, 1500));
      // RFC 4733 key presses, SRTP-protected like the voice.
      await call.rtp.sendDtmf(["5", "#"], { durationMs: 100, gapMs: 60 });
      // And the other way: keys pressed on baresip's console arrive as RFC 4733, decrypted.
      await bs.press("19");
      await new Promise((r) => setTimeout(r, 400));
      await new Promise((r) => setTimeout(r, 200));
      // baresip's RTCP timer is its own: give its first SRTCP packet a few seconds more.
      for (let waited = 0; call.stats.rtcp.received === 0 && waited < 5000; waited += 100) {
        await new Promise((r) => setTimeout(r, 100));
      }
      await call.hangup();
      assert.equal(await call.ended, "local hangup");
      const got = await heard;
      assertHears(got.pcm, THEIR_HZ, "agent");
      assert.deepEqual(got.keys, ["1", "9"]);
      assert.equal(call.stats.srtpAuthFailed, 0);
      // baresip's RTCP reached the port above our RTP port as SRTCP and authenticated, and
      // ours went out. (It also sends one plain APP packet before the keys apply: dropped
      // and counted as malformed, since it is no SRTCP.)
      const rtcp = call.stats.rtcp;
      assert.ok(rtcp.received >= 1, `RTCP from baresip: ${JSON.stringify(rtcp)}`);
      assert.ok(rtcp.sent >= 2, `our RTCP: ${JSON.stringify(rtcp)}`);
      assert.equal(rtcp.authFailed + rtcp.replayed, 0);
      bs.kill(); // it would wait for the next call until -t
      const out = await bs.done;
      assert.match(out.output, /SRTP is Enabled/);
      assert.match(out.output, /terminated/); // by our BYE
      // baresip logs each RFC 4733 event it decrypted, start and end.
      assert.match(out.output, /received event: '5' \(end=1\)/);
      assert.match(out.output, /received event: '#' \(end=1\)/);
      assertHears(bs.received(), OUR_HZ, "baresip");
    } finally {
      bs.kill();
      await bs.done;
      bs.cleanup();
      await agent.close();
    }
  },
});

Deno.test({
  name: "SRTP required: baresip offering plain RTP is refused 488",
  ignore,
  async fn() {
    const { agent, logger } = await agentFor("required");
    const bs = startBaresip({
      tone: sine8k(8000, THEIR_HZ),
      mediaenc: "none",
      dial: `sip:+15557654321@127.0.0.1:${agent.local.port}`,
      quitAfterSeconds: 3,
    });
    try {
      const out = await bs.done;
      assert.match(out.output, /488 Not Acceptable Here/);
      assert.ok(
        logger.records.some((r) => JSON.stringify(r).includes("SRTP policy (required)")),
        "the refusal's reason is logged",
      );
    } finally {
      bs.kill();
      await bs.done;
      bs.cleanup();
      await agent.close();
    }
  },
});

Deno.test({
  name: "over TCP: baresip calls us on a TCP connection with SRTP; replies reuse it, BYE ends it",
  ignore,
  async fn() {
    const { agent } = await agentFor("required", "sip:127.0.0.1:9", true);
    const bs = startBaresip({
      tone: sine8k(8000 * 2, THEIR_HZ),
      mediaenc: "srtp-mand",
      dial: `sip:+15557654321@127.0.0.1:${agent.local.port};transport=tcp`,
      quitAfterSeconds: 4,
      sipTrace: true,
    });
    try {
      const invite = await agent.nextInbound();
      assert.ok(invite);
      assert.match(getHeader(invite.request, "Via") ?? "", /^SIP\/2\.0\/TCP /);
      const call = await invite.answer();
      assert.ok(call.media.srtp);
      const heard = listen(call);
      await sendOurTone(call);
      assert.equal(await call.ended, "remote hangup");
      assertHears((await heard).pcm, THEIR_HZ, "agent");
      const out = await bs.done;
      // Our 100, 180 and 200 came back over TCP: baresip's trace names the transport.
      assert.match(out.output, /TCP.*\n*SIP\/2\.0 200 OK/);
      assert.match(out.output, /TCP [^\n]*\nBYE sip:agent@127\.0\.0\.1:\d+;transport=tcp /);
      assertHears(bs.received(), OUR_HZ, "baresip");
    } finally {
      bs.kill();
      await bs.done;
      bs.cleanup();
      await agent.close();
    }
  },
});

Deno.test({
  name: "over TCP: we call baresip through a server URI with transport=tcp, and hang up",
  ignore,
  async fn() {
    const bs = startBaresip({
      tone: sine8k(8000 * 6, THEIR_HZ),
      mediaenc: "srtp-mand",
      quitAfterSeconds: 10,
      sipTrace: true,
    });
    const { agent } = await agentFor("required", `sip:127.0.0.1:${bs.sipPort};transport=tcp`);
    try {
      const output = await callAndHangUp(agent, bs);
      assert.match(
        output,
        /INVITE sip:\+15557654321@127\.0\.0\.1[^\n]*\n[^]*?Via: SIP\/2\.0\/TCP/,
      );
      assert.match(output, /terminated/);
      assertHears(bs.received(), OUR_HZ, "baresip");
    } finally {
      bs.kill();
      await bs.done;
      bs.cleanup();
      await agent.close();
    }
  },
});

const certs = ignore ? undefined : makeTestCerts();
const pem = (path: string) => Deno.readTextFileSync(path);

Deno.test({
  name: "over TLS: baresip calls our TLS port with SRTP; the call runs and its BYE ends it",
  ignore,
  async fn() {
    const c = certs!;
    const { agent } = await startLoopbackAgent(
      loopbackSipConfig({ server: "sip:127.0.0.1:9", ...TRUNK }, {
        tls: { port: 0, cert: pem(c.certFile), key: pem(c.keyFile) },
      }),
      { rtp: { srtp: "required" } },
    );
    const bs = startBaresip({
      tone: sine8k(8000 * 2, THEIR_HZ),
      mediaenc: "srtp-mand",
      dial: `sip:+15557654321@127.0.0.1:${agent.tlsLocal!.port};transport=tls`,
      quitAfterSeconds: 4,
      sipTrace: true,
      tls: { certAndKeyFile: c.bundleFile, caFile: c.caFile },
    });
    try {
      const invite = await agent.nextInbound();
      assert.ok(invite);
      assert.match(getHeader(invite.request, "Via") ?? "", /^SIP\/2\.0\/TLS /);
      const call = await invite.answer();
      assert.ok(call.media.srtp);
      const heard = listen(call);
      await sendOurTone(call);
      assert.equal(await call.ended, "remote hangup");
      assertHears((await heard).pcm, THEIR_HZ, "agent");
      const out = await bs.done;
      assert.match(out.output, /TLS [^\n]*\nSIP\/2\.0 200 OK/);
      // Our Contact named the TLS listener, so its BYE came back over TLS, not plain UDP.
      assert.match(out.output, /TLS [^\n]*\nBYE sip:agent@127\.0\.0\.1:\d+;transport=tls /);
      assertHears(bs.received(), OUR_HZ, "baresip");
    } finally {
      bs.kill();
      await bs.done;
      bs.cleanup();
      await agent.close();
    }
  },
});

Deno.test({
  name: "over TLS: we call baresip through sips:, verifying it against the configured CA",
  ignore,
  async fn() {
    const c = certs!;
    const bs = startBaresip({
      tone: sine8k(8000 * 6, THEIR_HZ),
      mediaenc: "srtp-mand",
      quitAfterSeconds: 10,
      sipTrace: true,
      tls: { certAndKeyFile: c.bundleFile, caFile: c.caFile },
    });
    // baresip listens for TLS one port above its SIP port.
    const server = `sips:127.0.0.1:${bs.sipPort + 1}`;
    const { agent } = await startLoopbackAgent(
      loopbackSipConfig({ server, ...TRUNK }, { tls: { caCerts: [pem(c.caFile)] } }),
      { rtp: { srtp: "required" } },
    );
    try {
      const output = await callAndHangUp(agent, bs);
      // baresip's trace: our INVITE came from some local port, and our Via names that port
      // (we do not listen for TLS here), not our UDP port.
      const ours = /TLS 127\.0\.0\.1:(\d+) -> 127\.0\.0\.1:\d+\r?\n/.exec(output);
      assert.ok(ours, "baresip traced our connection");
      assert.match(output, new RegExp(`Via: SIP/2\\.0/TLS 127\\.0\\.0\\.1:${ours[1]};branch`));
      assert.doesNotMatch(output, new RegExp(`Via: SIP/2\\.0/TLS [^;]*:${agent.local.port};`));
      assert.match(output, /terminated/);
      assertHears(bs.received(), OUR_HZ, "baresip");
    } finally {
      bs.kill();
      await bs.done;
      bs.cleanup();
      await agent.close();
    }
  },
});

Deno.test({
  name: "over TLS: a server whose certificate our roots do not vouch for is never sent the INVITE",
  ignore,
  async fn() {
    const c = certs!;
    const other = makeTestCerts(); // a different CA: baresip's certificate is not under it
    const bs = startBaresip({
      tone: sine8k(8000, THEIR_HZ),
      mediaenc: "srtp-mand",
      quitAfterSeconds: 6,
      sipTrace: true,
      tls: { certAndKeyFile: c.bundleFile, caFile: c.caFile },
    });
    const { agent, logger } = await startLoopbackAgent(
      loopbackSipConfig({ server: `sips:127.0.0.1:${bs.sipPort + 1}`, ...TRUNK }, {
        tls: { caCerts: [pem(other.caFile)] },
      }),
      { rtp: { srtp: "required" }, timers: { T1: 40 } },
    );
    try {
      await bs.ready();
      // A transport error fails the INVITE at once, as a 503 (not after Timer B).
      await assert.rejects(
        agent.call("+15557654321"),
        /503 Service Unavailable \(transport error\)/,
      );
      assert.ok(
        logger.records.some((r) => JSON.stringify(r).includes("sip tls connect failed")),
        "the failed handshake is logged",
      );
      bs.kill();
      const out = await bs.done;
      assert.doesNotMatch(out.output, /INVITE sip:/);
    } finally {
      bs.kill();
      await bs.done;
      bs.cleanup();
      await agent.close();
      Deno.removeSync(other.dir, { recursive: true });
    }
  },
});

Deno.test({
  name: "baresip tests: remove the test certificates",
  ignore,
  fn() {
    Deno.removeSync(certs!.dir, { recursive: true });
  },
});
