import assert from "node:assert/strict";
import { createCipheriv, createHmac } from "node:crypto";
import { encodeRtp } from "../core/rtp.ts";
import { SrtpContext, type SrtpSuite } from "../telephony/sip/srtp.ts";
import { AesCounter, deriveSessionKeys } from "../telephony/sip/srtp_cipher.ts";
import { HmacSha1 } from "../telephony/sip/hmac_sha1.ts";

const hex = (s: string) =>
  Uint8Array.from(s.replace(/\s/g, "").match(/../g)!.map((b) => parseInt(b, 16)));
const toHex = (b: Uint8Array) => [...b].map((x) => x.toString(16).padStart(2, "0")).join("");

Deno.test("AES-CM keystream: RFC 3711 appendix B.2", () => {
  const aes = new AesCounter(hex("2B7E151628AED2A6ABF7158809CF4F3C"));
  const ks = aes.keystream(hex("F0F1F2F3F4F5F6F7F8F9FAFBFCFD0000"), 48);
  assert.equal(
    toHex(ks),
    "e03ead0935c95e80e166b16dd92b4eb4" + "d23513162b02d0f72a43a2fe4a5f97ab" +
      "41e95b3bb0a2e8dd477901e4fca894c0",
  );
  // And the same bytes from OpenSSL's own counter mode.
  const ctr = createCipheriv(
    "aes-128-ctr",
    hex("2B7E151628AED2A6ABF7158809CF4F3C"),
    hex("F0F1F2F3F4F5F6F7F8F9FAFBFCFD0000"),
  );
  assert.equal(toHex(ks), toHex(ctr.update(new Uint8Array(48))));
});

Deno.test("key derivation: RFC 3711 appendix B.3", () => {
  const keys = deriveSessionKeys(
    hex("E1F97A0D3E018BE0D64FA32C06DE4139"),
    hex("0EC675AD498AFEEBB6960B3AABE6"),
    false,
  );
  assert.equal(toHex(keys.salt), "30cbbc08863d8c85d49db34a9ae1");
  assert.equal(toHex(keys.auth), "cebe321f6ff7716b6fd4ab49af256a156d38baa4");
  // The cipher key itself is checked through its keystream: AES(C61E7A93...) of a zero block.
  const want = createCipheriv("aes-128-ecb", hex("C61E7A93744F39EE10734AFE3FF7A087"), null)
    .update(new Uint8Array(16));
  assert.equal(toHex(keys.cipher.keystream(new Uint8Array(16), 16)), toHex(want));
});

Deno.test("HMAC-SHA1 matches node:crypto for every length 0..200", () => {
  const key = crypto.getRandomValues(new Uint8Array(20));
  const mac = new HmacSha1(key);
  for (let n = 0; n <= 200; n++) {
    const data = crypto.getRandomValues(new Uint8Array(n));
    const out = new Uint8Array(20);
    mac.sign(data, 0xdeadbeef, out, 0, 20);
    const want = createHmac("sha1", key).update(data).update(hex("deadbeef")).digest();
    assert.equal(toHex(out), toHex(want), `length ${n}`);
  }
});

const KEY = hex("E1F97A0D3E018BE0D64FA32C06DE4139");
const SALT = hex("0EC675AD498AFEEBB6960B3AABE6");

Deno.test("protect: libsrtp's AES_CM_128_HMAC_SHA1_80 reference packet", () => {
  const tx = new SrtpContext({ suite: "AES_CM_128_HMAC_SHA1_80", key: KEY, salt: SALT });
  const rtp = hex("800f1234decafbadcafebabe" + "ab".repeat(16));
  const wire = tx.protect(rtp);
  assert.equal(
    toHex(wire),
    "800f1234decafbadcafebabe4e55dc4ce79978d88ca4d215949d2402b78d6acc99ea179b8dbb",
  );
  const rx = new SrtpContext({ suite: "AES_CM_128_HMAC_SHA1_80", key: KEY, salt: SALT });
  assert.equal(toHex(rx.unprotect(wire.slice())!), toHex(rtp));
});

function packet(seq: number, ssrc = 0x11223344, payload = 160): Uint8Array {
  const body = new Uint8Array(payload).map((_, i) => (i * 7 + seq) & 0xff);
  return encodeRtp({
    marker: false,
    payloadType: 0,
    sequence: seq & 0xffff,
    timestamp: (seq * 160) >>> 0,
    ssrc,
    payload: body,
  });
}

for (const suite of ["AES_CM_128_HMAC_SHA1_80", "AES_CM_128_HMAC_SHA1_32"] as SrtpSuite[]) {
  Deno.test(`${suite}: round trip across a sequence wrap, tampering and replays dropped`, () => {
    const tx = new SrtpContext({ suite, key: KEY, salt: SALT });
    const rx = new SrtpContext({ suite, key: KEY, salt: SALT });
    const tag = suite.endsWith("80") ? 10 : 4;
    const sent: Uint8Array[] = [];
    for (let s = 65530; s < 65530 + 12; s++) {
      const plain = packet(s);
      const wire = tx.protect(plain).slice();
      assert.equal(wire.length, plain.length + tag);
      assert.notDeepEqual(wire.subarray(12, 172), plain.subarray(12));
      sent.push(wire);
      assert.deepEqual(rx.unprotect(wire.slice()), plain, `seq ${s}`);
    }
    // After the wrap the rollover counter is 1: the same sequence under ROC 0 would differ.
    const fresh = new SrtpContext({ suite, key: KEY, salt: SALT });
    assert.notDeepEqual(fresh.protect(packet(65536 + 3)).slice(), sent[9]);

    // Replays: one from before the wrap, one after.
    assert.equal(rx.unprotect(sent[2].slice()), undefined);
    assert.equal(rx.unprotect(sent[10].slice()), undefined);
    // Tampered payload and tampered tag.
    const bad = tx.protect(packet(65530 + 12)).slice();
    const badPayload = bad.slice();
    badPayload[40] ^= 1;
    const badTag = bad.slice();
    badTag[badTag.length - 1] ^= 0x80;
    assert.equal(rx.unprotect(badPayload), undefined);
    assert.equal(rx.unprotect(badTag), undefined);
    assert.equal(rx.unprotect(new Uint8Array(8)), undefined);
    assert.deepEqual(rx.stats, { authFailed: 2, replayed: 2, malformed: 1 });
    // The genuine packet still goes through: failures did not move the window.
    assert.deepEqual(rx.unprotect(bad.slice()), packet(65530 + 12));
  });
}

Deno.test("replay window: late packets inside 64 accepted once, older ones dropped", () => {
  const tx = new SrtpContext({ suite: "AES_CM_128_HMAC_SHA1_80", key: KEY, salt: SALT });
  const rx = new SrtpContext({ suite: "AES_CM_128_HMAC_SHA1_80", key: KEY, salt: SALT });
  const wire = Array.from({ length: 200 }, (_, i) => tx.protect(packet(1000 + i)).slice());
  assert.ok(rx.unprotect(wire[0].slice()));
  assert.ok(rx.unprotect(wire[100].slice())); // a jump past the window
  assert.equal(rx.unprotect(wire[36].slice()), undefined); // 64 behind: too old
  assert.ok(rx.unprotect(wire[37].slice())); // 63 behind: late but new
  assert.equal(rx.unprotect(wire[37].slice()), undefined);
  assert.ok(rx.unprotect(wire[70].slice())); // in the upper half of the window
  assert.ok(rx.unprotect(wire[140].slice())); // 40 ahead: the window slides by 40
  assert.equal(rx.unprotect(wire[70].slice()), undefined); // now 70 behind: too old
  assert.equal(rx.unprotect(wire[100].slice()), undefined); // 40 behind, seen
  assert.ok(rx.unprotect(wire[99].slice())); // 41 behind, not seen
  assert.equal(rx.unprotect(wire[140].slice()), undefined); // the newest itself, again
  assert.deepEqual(rx.stats, { authFailed: 0, replayed: 5, malformed: 0 });
});

Deno.test("a different SSRC has its own rollover counter and window", () => {
  const tx = new SrtpContext({ suite: "AES_CM_128_HMAC_SHA1_80", key: KEY, salt: SALT });
  const rx = new SrtpContext({ suite: "AES_CM_128_HMAC_SHA1_80", key: KEY, salt: SALT });
  const a = tx.protect(packet(5, 1)).slice();
  const b = tx.protect(packet(5, 2)).slice();
  assert.deepEqual(rx.unprotect(a), packet(5, 1));
  assert.deepEqual(rx.unprotect(b), packet(5, 2));
});

Deno.test("wrong key: every packet fails authentication", () => {
  const tx = new SrtpContext({ suite: "AES_CM_128_HMAC_SHA1_80", key: KEY, salt: SALT });
  const other = KEY.slice();
  other[0] ^= 1;
  const rx = new SrtpContext({ suite: "AES_CM_128_HMAC_SHA1_80", key: other, salt: SALT });
  for (let s = 0; s < 5; s++) assert.equal(rx.unprotect(tx.protect(packet(s)).slice()), undefined);
  assert.equal(rx.stats.authFailed, 5);
});

Deno.test("SRTCP: encrypted with the E flag and index, tamper and replay dropped", () => {
  const tx = new SrtpContext({ suite: "AES_CM_128_HMAC_SHA1_32", key: KEY, salt: SALT });
  const rx = new SrtpContext({ suite: "AES_CM_128_HMAC_SHA1_32", key: KEY, salt: SALT });
  // A receiver report: V=2, RC=0, PT=201, length 1, SSRC, then an SDES-like tail.
  const rtcp = hex("80c90001" + "11223344" + "81ca0003" + "11223344" + "01046162" + "63640000");
  const w1 = tx.protectRtcp(rtcp).slice();
  const w2 = tx.protectRtcp(rtcp).slice();
  assert.equal(w1.length, rtcp.length + 4 + 10);
  assert.equal(toHex(w1.subarray(0, 8)), toHex(rtcp.subarray(0, 8)));
  assert.notEqual(toHex(w1.subarray(8, rtcp.length)), toHex(rtcp.subarray(8)));
  assert.equal(toHex(w1.subarray(rtcp.length, rtcp.length + 4)), "80000000");
  assert.equal(toHex(w2.subarray(rtcp.length, rtcp.length + 4)), "80000001");
  assert.notEqual(toHex(w1.subarray(8, rtcp.length)), toHex(w2.subarray(8, rtcp.length)));
  assert.deepEqual(rx.unprotectRtcp(w2.slice()), rtcp);
  assert.deepEqual(rx.unprotectRtcp(w1.slice()), rtcp); // one behind: late, accepted
  assert.equal(rx.unprotectRtcp(w1.slice()), undefined); // replay
  assert.equal(rx.unprotectRtcp(w2.slice()), undefined); // replay of the newest
  const bad = tx.protectRtcp(rtcp).slice();
  bad[10] ^= 4;
  assert.equal(rx.unprotectRtcp(bad), undefined);
  assert.deepEqual(rx.stats, { authFailed: 1, replayed: 2, malformed: 0 });
});

Deno.test("protect refuses what is not RTP; wrong key sizes refused", () => {
  const tx = new SrtpContext({ suite: "AES_CM_128_HMAC_SHA1_80", key: KEY, salt: SALT });
  assert.throws(() => tx.protect(new Uint8Array(5)), RangeError);
  assert.throws(
    () => new SrtpContext({ suite: "AES_CM_128_HMAC_SHA1_80", key: KEY.subarray(1), salt: SALT }),
    RangeError,
  );
});
