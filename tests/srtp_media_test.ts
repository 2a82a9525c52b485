/**
 * SRTP in SDP (SDES, RFC 4568) and on the wire: offers and answers under each policy, 488
 * reasons, keys mirrored between the two sides, and two RtpSessions talking SRTP through a
 * relay that replays and tampers with packets.
 */

import assert from "node:assert/strict";
import { ulawDecode, ulawEncode } from "../core/audio/g711.ts";
import type { KeypadEntry } from "../core/frames.ts";
import { decodeRtp } from "../core/rtp.ts";
import { RtpSession } from "../telephony/sip/rtp_session.ts";
import {
  acceptAnswer,
  buildAnswer,
  buildOffer,
  formatSdp,
  type NegotiatedMedia,
  parseSdp,
  type SdpSession,
} from "../telephony/sip/sdp.ts";
import { formatCrypto, newSrtpKey, parseCrypto } from "../telephony/sip/sdes.ts";
import { freeEvenPortBase, sine8k } from "./_sipp.ts";

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
async function until(cond: () => boolean, ms = 3000, what = "condition"): Promise<void> {
  const end = performance.now() + ms;
  while (!cond()) {
    if (performance.now() > end) throw new Error(`timed out waiting for ${what}`);
    await sleep(5);
  }
}

const LOCAL = { address: "192.0.2.10", port: 40000 };
const reparse = (s: SdpSession): SdpSession => {
  const r = parseSdp(formatSdp(s));
  assert.ok(r.ok);
  return r.value;
};
const cryptoOf = (s: SdpSession) =>
  s.media[0].attributes.filter((a) => a.name === "crypto").map((a) => a.value!);

function peerOffer(proto: string, crypto: string[] = []): SdpSession {
  const text = [
    "v=0",
    "o=peer 1 1 IN IP4 198.51.100.7",
    "s=-",
    "c=IN IP4 198.51.100.7",
    "t=0 0",
    `m=audio 30000 ${proto} 8 0 101`,
    "a=rtpmap:101 telephone-event/8000",
    ...crypto.map((c) => `a=crypto:${c}`),
    "",
  ].join("\r\n");
  const r = parseSdp(text);
  assert.ok(r.ok);
  return r.value;
}

Deno.test("a=crypto: format and parse round trip; unusable lines skipped", () => {
  const key = newSrtpKey("AES_CM_128_HMAC_SHA1_32");
  const line = parseCrypto(formatCrypto(3, key));
  assert.ok(line);
  assert.equal(line.tag, 3);
  assert.deepEqual(line.key, key);
  const inline = "inline:" + new Uint8Array(30).fill(1).toBase64();
  assert.ok(parseCrypto(`1 AES_CM_128_HMAC_SHA1_80 ${inline}|2^31`), "a lifetime is fine");
  assert.equal(parseCrypto(`1 AES_CM_128_HMAC_SHA1_80 ${inline}|2^20|1:4`), undefined, "MKI");
  assert.equal(parseCrypto(`1 AES_256_CM_HMAC_SHA1_80 ${inline}`), undefined, "suite");
  assert.equal(parseCrypto(`1 AES_CM_128_HMAC_SHA1_80 inline:AAAA`), undefined, "key length");
  assert.equal(parseCrypto(`1 AES_CM_128_HMAC_SHA1_80 ${inline} UNENCRYPTED_SRTP`), undefined);
});

Deno.test("offers: off is plain, optional is best-effort AVP + crypto, required is SAVP", () => {
  const off = reparse(buildOffer(LOCAL));
  assert.equal(off.media[0].proto, "RTP/AVP");
  assert.deepEqual(cryptoOf(off), []);
  const opt = reparse(buildOffer({ ...LOCAL, srtp: "optional" }));
  assert.equal(opt.media[0].proto, "RTP/AVP");
  assert.deepEqual(cryptoOf(opt).map((c) => c.split(" ").slice(0, 2).join(" ")), [
    "1 AES_CM_128_HMAC_SHA1_80",
    "2 AES_CM_128_HMAC_SHA1_32",
  ]);
  const req = reparse(buildOffer({ ...LOCAL, srtp: "required" }));
  assert.equal(req.media[0].proto, "RTP/SAVP");
  assert.equal(cryptoOf(req).length, 2);
  assert.notEqual(cryptoOf(req)[0], cryptoOf(opt)[0], "fresh keys per offer");
});

Deno.test("answers: each policy against plain, best-effort and SAVP offers", () => {
  const key = formatCrypto(7, newSrtpKey("AES_CM_128_HMAC_SHA1_32"));
  const plain = peerOffer("RTP/AVP");
  const bestEffort = peerOffer("RTP/AVP", [key]);
  const savp = peerOffer("RTP/SAVP", ["1 AES_256_CM_HMAC_SHA1_80 inline:xyz", key]);
  const savpNoCrypto = peerOffer("RTP/SAVP");

  const cases: [string, SdpSession, "off" | "optional" | "required", string | undefined][] = [
    ["plain/off", plain, "off", "RTP/AVP"],
    ["plain/optional", plain, "optional", "RTP/AVP"],
    ["plain/required", plain, "required", undefined],
    ["best-effort/off", bestEffort, "off", "RTP/AVP"],
    ["best-effort/optional", bestEffort, "optional", "RTP/AVP+srtp"],
    ["best-effort/required", bestEffort, "required", "RTP/AVP+srtp"],
    ["savp/off", savp, "off", undefined],
    ["savp/optional", savp, "optional", "RTP/SAVP+srtp"],
    ["savp/required", savp, "required", "RTP/SAVP+srtp"],
    ["savp without crypto/required", savpNoCrypto, "required", undefined],
  ];
  for (const [name, offer, srtp, want] of cases) {
    const ans = buildAnswer(offer, { ...LOCAL, srtp });
    if (want === undefined) {
      assert.ok(!ans.ok, name);
      assert.equal(ans.status, 488);
      assert.match(ans.reason, new RegExp(`SRTP policy \\(${srtp}\\)`), name);
      continue;
    }
    assert.ok(ans.ok, name);
    const m = reparse(ans.answer).media[0];
    const lines = cryptoOf(reparse(ans.answer));
    assert.equal(m.proto + (lines.length > 0 ? "+srtp" : ""), want, name);
    if (lines.length > 0) {
      // The answer echoes the offer's tag and suite with our own key.
      const ours = parseCrypto(lines[0])!;
      assert.equal(ours.tag, 7, name);
      assert.equal(ours.key.suite, "AES_CM_128_HMAC_SHA1_32", name);
      assert.deepEqual(ans.media.srtp?.receive, parseCrypto(key)!.key, name);
      assert.deepEqual(ans.media.srtp?.send, ours.key, name);
    } else assert.equal(ans.media.srtp, undefined, name);
  }
});

Deno.test("offer, answer, accept: both sides hold mirrored keys", () => {
  for (const policy of ["optional", "required"] as const) {
    const offer = buildOffer({ ...LOCAL, srtp: policy });
    const ans = buildAnswer(reparse(offer), {
      address: "198.51.100.7",
      port: 30000,
      srtp: "required",
    });
    assert.ok(ans.ok);
    const uac = acceptAnswer(reparse(ans.answer), "sendrecv", undefined, { policy, offer });
    assert.ok(uac.ok, uac.ok ? "" : uac.reason);
    assert.deepEqual(uac.value.srtp?.send, ans.media.srtp?.receive);
    assert.deepEqual(uac.value.srtp?.receive, ans.media.srtp?.send);
    assert.equal(uac.value.srtp?.send.suite, "AES_CM_128_HMAC_SHA1_80", "the first offered suite");
  }
  // A plain answer to a required offer, or a crypto tag we never offered, fails.
  const offer = buildOffer({ ...LOCAL, srtp: "required" });
  const plainAnswer = buildAnswer(peerOffer("RTP/AVP"), { address: "198.51.100.7", port: 30000 });
  assert.ok(plainAnswer.ok);
  assert.ok(
    !acceptAnswer(plainAnswer.answer, "sendrecv", undefined, { policy: "required", offer }).ok,
  );
  const forged = buildAnswer(
    peerOffer("RTP/SAVP", [formatCrypto(9, newSrtpKey("AES_CM_128_HMAC_SHA1_80"))]),
    {
      address: "198.51.100.7",
      port: 30000,
      srtp: "required",
    },
  );
  assert.ok(forged.ok);
  assert.ok(!acceptAnswer(forged.answer, "sendrecv", undefined, { policy: "optional", offer }).ok);
  // Optional: a plain answer is plain RTP.
  const opt = buildOffer({ ...LOCAL, srtp: "optional" });
  const plainOk = acceptAnswer(plainAnswer.answer, "sendrecv", undefined, {
    policy: "optional",
    offer: opt,
  });
  assert.ok(plainOk.ok);
  assert.equal(plainOk.value.srtp, undefined);
});

function collector() {
  const audio: Int16Array[] = [];
  const keys: KeypadEntry[] = [];
  return {
    audio,
    keys,
    handlers: {
      onAudio: (p: Int16Array) => audio.push(p),
      onDtmf: (k: KeypadEntry) => keys.push(k),
    },
  };
}

Deno.test("two RtpSessions over SRTP: audio and DTMF both ways; replayed and forged packets dropped", async () => {
  const base = freeEvenPortBase(4);
  const open = () =>
    RtpSession.open({
      bindHost: "127.0.0.1",
      portBase: base,
      portTries: 4,
      keepAliveSilence: false,
    });
  const a = open();
  const b = open();
  // A relay between a and b sees the wire: it forwards, and keeps what a sent.
  const relay = Deno.listenDatagram({ transport: "udp", hostname: "127.0.0.1", port: 0 });
  const relayPort = (relay.addr as Deno.NetAddr).port;
  const seen: Uint8Array[] = [];
  const pump = (async () => {
    try {
      for (;;) {
        const [bytes, from] = await relay.receive();
        const fromPort = (from as Deno.NetAddr).port;
        if (fromPort === a.port) seen.push(bytes.slice());
        await relay.send(bytes, {
          transport: "udp",
          hostname: "127.0.0.1",
          port: fromPort === a.port ? b.port : a.port,
        });
      }
    } catch { /* closed */ }
  })();
  const keysAtoB = {
    send: newSrtpKey("AES_CM_128_HMAC_SHA1_80"),
    receive: newSrtpKey("AES_CM_128_HMAC_SHA1_80"),
  };
  const media = (srtp: NegotiatedMedia["srtp"]): NegotiatedMedia => ({
    codec: "PCMU",
    payloadType: 0,
    telephoneEventPt: 101,
    remoteAddress: "127.0.0.1",
    remotePort: relayPort,
    ptime: 20,
    remoteDirection: "sendrecv",
    localDirection: "sendrecv",
    hold: false,
    srtp,
  });
  const ra = collector();
  const rb = collector();
  a.start(media(keysAtoB), ra.handlers);
  b.start(media({ send: keysAtoB.receive, receive: keysAtoB.send }), rb.handlers);
  const tone = sine8k(480, 1000);
  a.sendPcm8k(tone);
  b.sendPcm8k(tone.subarray(0, 160));
  await until(() => rb.audio.length === 3 && ra.audio.length === 1, 3000, "audio");
  assert.deepEqual(
    Int16Array.from(rb.audio.flatMap((x) => [...x])),
    ulawDecode(ulawEncode(tone)),
  );
  await a.sendDtmf(["7"], { durationMs: 60, gapMs: 20 });
  await until(() => rb.keys.length === 1, 3000, "key");
  assert.deepEqual(rb.keys, ["7"]);

  // On the wire the payload is not the G.711 we sent, and a tag follows it.
  const first = decodeRtp(seen[0])!;
  assert.equal(seen[0].length, 12 + 160 + 10);
  assert.notDeepEqual(first.payload.subarray(0, 160), ulawEncode(tone.subarray(0, 160)));

  const send = (bytes: Uint8Array) =>
    relay.send(bytes, { transport: "udp", hostname: "127.0.0.1", port: b.port });
  await send(seen[1]); // replay
  // A newer sequence number passes the replay check; the tag then fails.
  const forged = seen[seen.length - 1].slice();
  const view = new DataView(forged.buffer);
  view.setUint16(2, (view.getUint16(2) + 100) & 0xffff);
  await send(forged);
  await until(() => b.stats.srtpReplayed === 1 && b.stats.srtpAuthFailed === 1, 3000, "drops");
  assert.equal(b.stats.packetsReceived, seen.length, "dropped packets never reach the session");
  assert.equal(rb.audio.length, 3, "nothing played from them");
  assert.equal(a.stats.srtpAuthFailed + a.stats.srtpReplayed, 0);
  await a.close();
  await b.close();
  relay.close();
  await pump;
});
