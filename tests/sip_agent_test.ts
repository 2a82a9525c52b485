/**
 * SipAgent against real sipp (Debian sip-tester) on 127.0.0.1: inbound call with media and
 * RFC 4733, registrar with digest auth and refresh, outbound call to a sipp UAS with RTP echo,
 * CANCEL before answer, retransmitted INVITE absorbed, lost ACK answered by 200 retransmits,
 * and the trunk password never appearing in any log line or error.
 */

import assert from "node:assert/strict";
import { ulawDecode, ulawEncode } from "../core/audio/g711.ts";
import { FlowcatError } from "../core/errors.ts";
import type { KeypadEntry } from "../core/frames.ts";
import type { memoryLogger } from "../core/log.ts";
import type { MediaIn } from "../core/seams.ts";
import type { SipAgentOptions, SipConfig } from "../telephony/sip/mod.ts";
import { loopbackSipConfig, startLoopbackAgent } from "./_sip_peer.ts";
import {
  freeUdpPort,
  pcmuPcap,
  runSipp,
  sine8k,
  SIPP_SCENARIOS,
  sippArgs,
  sippUasEchoArgs,
} from "./_sipp.ts";

const PASSWORD = "s3cret";
const SCENARIOS = SIPP_SCENARIOS;

const config = (extra: Partial<SipConfig> = {}) =>
  loopbackSipConfig({
    server: `sip:127.0.0.1:${freeUdpPort()}`,
    login: "alice",
    password: PASSWORD,
    callerId: "+15550001111",
  }, extra);

const startAgent = (extra: Partial<SipConfig> = {}, opts: SipAgentOptions = {}) =>
  startLoopbackAgent(config(extra), opts);

/** Every log record as text must be free of the password. */
function assertNoPassword(logger: ReturnType<typeof memoryLogger>): void {
  assert.ok(logger.records.length > 0);
  const text = JSON.stringify(logger.records);
  assert.equal(text.includes(PASSWORD), false, "password leaked into a log line");
}

/** Read a transport until Stop/undefined, collecting audio and keys. */
async function drain(recv: () => Promise<MediaIn | undefined>) {
  const audio: Int16Array[] = [];
  const keys: KeypadEntry[] = [];
  const kinds: string[] = [];
  for (let m = await recv(); m !== undefined; m = await recv()) {
    kinds.push(m.type);
    if (m.type === "audio") audio.push(m.audio.pcm);
    if (m.type === "dtmf") keys.push(m.key);
  }
  return { audio, keys, kinds };
}

Deno.test("sipp UAC calls us: 100/180/200, ACK, PCMU tone and RFC 4733 key arrive, BYE ends it", async () => {
  const { agent, logger } = await startAgent();
  const dir = `./.tmp/sipp-media-${crypto.randomUUID()}`;
  Deno.mkdirSync(dir, { recursive: true });
  const tone = sine8k(8000 * 0.6, 440);
  Deno.writeFileSync(`${dir}/tone.pcap`, pcmuPcap(tone));
  const sipp = runSipp(sippArgs("uac_media.xml", agent.local.port), dir);
  try {
    const invite = await agent.nextInbound();
    assert.ok(invite !== undefined);
    assert.equal(invite.dialled, "+15557654321");
    assert.equal(invite.caller, "+15551230000");
    const call = await invite.answer();
    assert.equal(call.direction, "inbound");
    assert.equal(call.media.codec, "PCMU");
    assert.equal(call.media.telephoneEventPt, 101);
    assert.equal(call.transport.carrierRate(), 8000);
    // Our side talks too: 16 kHz in, 8 kHz PCMU out.
    await call.transport.sendAudio({
      pcm: new Int16Array(3200),
      sampleRate: 16000,
      numChannels: 1,
    });
    const got = await drain(() => call.transport.recv());
    assert.equal(await call.ended, "remote hangup");
    assert.equal(got.kinds[0], "start");
    assert.equal(got.kinds.at(-1), "stop");
    assert.deepEqual(got.keys, ["1"]);
    // Every 20 ms of the tone arrives, bit-exact after the µ-law round trip, in order.
    const expected = ulawDecode(ulawEncode(tone));
    const received = new Int16Array(got.audio.reduce((n, a) => n + a.length, 0));
    let o = 0;
    for (const a of got.audio) {
      received.set(a, o);
      o += a.length;
    }
    assert.equal(received.length, expected.length);
    assert.deepEqual(received, expected);
    assert.ok(call.stats.packetsSent >= 10);
    assert.equal(call.stats.droppedForeign, 0);
    const res = await sipp.done;
    assert.equal(res.code, 0, res.stdout.slice(-2000));
  } finally {
    sipp.kill();
    await sipp.done;
    await agent.close();
    Deno.removeSync(dir, { recursive: true });
  }
  assertNoPassword(logger);
});

Deno.test("sipp registrar: 401 digest challenge, authorized REGISTER, refresh, un-REGISTER on close", async () => {
  const registrarPort = freeUdpPort();
  const { agent, logger } = await startAgent({ server: `sip:127.0.0.1:${registrarPort}` });
  const sipp = runSipp([
    "-sf",
    SCENARIOS + "registrar.xml",
    "-i",
    "127.0.0.1",
    "-p",
    String(registrarPort),
    "-m",
    "1",
  ]);
  try {
    await agent.register();
    assert.equal(agent.registrationState, "registered");
    assert.equal(agent.registration.grantedExpires, 2);
    // Granted 2 s: the refresh goes out after 1 s and is accepted.
    const t0 = performance.now();
    while (agent.registration.lastStatus !== 200 || performance.now() - t0 < 1100) {
      if (performance.now() - t0 > 5000) throw new Error("no refresh");
      await new Promise((r) => setTimeout(r, 50));
    }
    assert.equal(agent.registrationState, "registered");
  } finally {
    await agent.close(); // sends REGISTER with Expires: 0, which the scenario requires
    const res = await sipp.done;
    assert.equal(res.code, 0, res.stdout.slice(-2000));
  }
  assertNoPassword(logger);
});

Deno.test("sipp registrar: a wrong password is refused with an auth error that never shows the password", async () => {
  const registrarPort = freeUdpPort();
  const wrong = "wrong-Pa55word";
  const { agent, logger } = await startAgent(
    { server: `sip:127.0.0.1:${registrarPort}`, password: wrong },
    { registration: { retryBaseMs: 60_000 } },
  );
  const sipp = runSipp([
    "-sf",
    SCENARIOS + "registrar.xml",
    "-i",
    "127.0.0.1",
    "-p",
    String(registrarPort),
    "-m",
    "1",
  ]);
  try {
    const err = await agent.register().then(() => undefined, (e) => e);
    assert.ok(err instanceof FlowcatError, String(err));
    assert.equal(err.kind, "auth");
    assert.match(err.message, /403/);
    assert.equal(err.message.includes(wrong), false);
    assert.equal(agent.registrationState, "failed");
  } finally {
    await agent.close();
    sipp.kill();
    await sipp.done;
  }
  assert.equal(JSON.stringify(logger.records).includes(wrong), false);
});

Deno.test("we call sipp UAS: E.164 INVITE, 401 digest, 180/200, ACK, RTP echoed back, our BYE", async () => {
  const sippPort = freeUdpPort();
  const { agent, logger } = await startAgent({ server: `sip:127.0.0.1:${sippPort}` });
  const sipp = runSipp(sippUasEchoArgs("uas_auth_echo.xml", sippPort));
  try {
    await assert.rejects(agent.call("555-0100"), /E\.164/);
    const progress: number[] = [];
    const call = await agent.call("+15557654321", { onProgress: (s) => progress.push(s) });
    assert.ok(progress.includes(180));
    assert.equal(call.direction, "outbound");
    assert.match(call.from, /^<sip:\+15550001111@127\.0\.0\.1>;tag=/);
    assert.match(call.to, /^<sip:\+15557654321@127\.0\.0\.1>/);
    assert.equal(call.media.codec, "PCMU");
    assert.equal((await call.transport.recv())?.type, "start");
    // Ten distinct 20 ms frames, paced like the pipeline does; sipp echoes each one back.
    const sent: Int16Array[] = [];
    for (let i = 0; i < 10; i++) {
      const frame = ulawDecode(ulawEncode(sine8k(160, 300 + 100 * i)));
      sent.push(frame);
      await call.transport.sendAudio({ pcm: frame, sampleRate: 8000, numChannels: 1 });
      await new Promise((r) => setTimeout(r, 20));
    }
    const echoed: Int16Array[] = [];
    const t0 = performance.now();
    while (echoed.length < 60 && performance.now() - t0 < 3000) {
      const m = await call.transport.recv();
      if (m?.type === "audio") echoed.push(m.audio.pcm);
      if (sent.every((s) => echoed.some((e) => sameSamples(e, s)))) break;
    }
    for (const [i, s] of sent.entries()) {
      assert.ok(echoed.some((e) => sameSamples(e, s)), `frame ${i} not echoed back`);
    }
    await call.hangup();
    assert.equal(await call.ended, "local hangup");
    assert.equal(agent.calls.length, 0);
    const res = await sipp.done;
    assert.equal(res.code, 0, res.stdout.slice(-2000));
  } finally {
    sipp.kill();
    await sipp.done;
    await agent.close();
  }
  assertNoPassword(logger);
});

function sameSamples(a: Int16Array, b: Int16Array): boolean {
  return a.length === b.length && a.every((v, i) => v === b[i]);
}

Deno.test("CANCEL before answer: 200 to the CANCEL, 487 to the INVITE, the invite reports cancelled", async () => {
  const { agent, logger } = await startAgent();
  const sipp = runSipp(sippArgs("uac_cancel.xml", agent.local.port));
  try {
    const invite = await agent.nextInbound();
    assert.ok(invite !== undefined);
    assert.equal(invite.state, "ringing");
    await invite.cancelled;
    assert.equal(invite.state, "cancelled");
    await assert.rejects(invite.answer(), /cancelled/);
    const res = await sipp.done;
    assert.equal(res.code, 0, res.stdout.slice(-2000));
    assert.equal(agent.calls.length, 0);
  } finally {
    sipp.kill();
    await sipp.done;
    await agent.close();
  }
  assertNoPassword(logger);
});

Deno.test("a retransmitted INVITE is absorbed: one invite, one call, last provisional re-sent", async () => {
  const { agent, logger } = await startAgent();
  const dir = `./.tmp/sipp-rx-${crypto.randomUUID()}`;
  // sipp drops our provisionals (lost="100"), so its Timer A re-sends the INVITE.
  const sipp = runSipp(
    sippArgs("uac_retrans_invite.xml", agent.local.port, [
      "-trace_msg",
      "-message_file",
      "msgs.log",
    ]),
    dir,
  );
  try {
    const invite = await agent.nextInbound();
    assert.ok(invite !== undefined);
    // Copies arrive after 100 and 300 ms; answer after both.
    const t0 = performance.now();
    while (agent.counters.absorbed < 2 && performance.now() - t0 < 3000) {
      await new Promise((r) => setTimeout(r, 20));
    }
    assert.ok(agent.counters.absorbed >= 2, `absorbed ${agent.counters.absorbed}`);
    const call = await invite.answer();
    assert.equal(await call.ended, "remote hangup");
    const res = await sipp.done;
    assert.equal(res.code, 0, res.stdout.slice(-2000));
    const log = Deno.readTextFileSync(`${dir}/msgs.log`);
    const invitesSent = log.match(/message sent[^\n]*\n\s*INVITE /g)?.length ?? 0;
    const ringingReceived = log.match(/message received[^\n]*\n\s*SIP\/2\.0 180 /g)?.length ?? 0;
    assert.ok(invitesSent >= 3, `sipp sent ${invitesSent} INVITEs`);
    assert.ok(ringingReceived >= invitesSent, `180 re-sent ${ringingReceived} times`);
    // Exactly one invite was queued: after close, nextInbound ends with undefined.
    await agent.close();
    assert.equal(await agent.nextInbound(), undefined);
  } finally {
    sipp.kill();
    await sipp.done;
    await agent.close();
    Deno.removeSync(dir, { recursive: true });
  }
  assertNoPassword(logger);
});

Deno.test("a lost ACK makes us re-send the 200 OK until the ACK arrives", async () => {
  const { agent, logger } = await startAgent({}, { timers: { T1: 100 } });
  const dir = `./.tmp/sipp-ack-${crypto.randomUUID()}`;
  const sipp = runSipp(
    sippArgs("uac_late_ack.xml", agent.local.port, ["-trace_msg", "-message_file", "msgs.log"]),
    dir,
  );
  try {
    const invite = await agent.nextInbound();
    assert.ok(invite !== undefined);
    const call = await invite.answer();
    assert.equal(await call.ended, "remote hangup");
    const res = await sipp.done;
    assert.equal(res.code, 0, res.stdout.slice(-2000));
    // T1 = 100 ms: re-sent after 100, 300, 700 ms ... while sipp sat on its ACK for 1.2 s.
    assert.ok(agent.counters.retransmitted >= 3, `retransmitted ${agent.counters.retransmitted}`);
    const log = Deno.readTextFileSync(`${dir}/msgs.log`);
    const okReceived = log.split("message received").filter((m) =>
      /SIP\/2\.0 200 OK[\s\S]*CSeq: 1 INVITE/.test(m.split("-----")[0])
    ).length;
    assert.ok(okReceived >= 4, `sipp saw ${okReceived} copies of the 200 OK`);
  } finally {
    sipp.kill();
    await sipp.done;
    await agent.close();
    Deno.removeSync(dir, { recursive: true });
  }
  assertNoPassword(logger);
});
