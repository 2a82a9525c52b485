// Call security: expected values are computed independently here with node:crypto (HMAC,
// Ed25519) or taken from Twilio's published example; tamper and replay must be refused.
import assert from "node:assert/strict";
import { Buffer } from "node:buffer";
import { createHmac, generateKeyPairSync, sign } from "node:crypto";
import { FlowcatError } from "../core/errors.ts";
import {
  assertE164,
  checkTimestamp,
  createCallToken,
  isE164,
  ReplayGuard,
  signCallToken,
  timingSafeEqual,
  twilioSignature,
  twilioUrlForms,
  verifyCallToken,
  verifyHmacSignature,
  verifyTelnyxSignature,
  verifyTwilioSignature,
} from "../telephony/security.ts";

const SECRET = "0123456789abcdef-secret";
const NOW = 1_767_225_600_000; // 2026-01-01T00:00:00Z

Deno.test("timingSafeEqual: equal, different, different length, bytes", () => {
  assert.equal(timingSafeEqual("abc", "abc"), true);
  assert.equal(timingSafeEqual("abc", "abd"), false);
  assert.equal(timingSafeEqual("abc", "abcd"), false);
  assert.equal(timingSafeEqual("", ""), true);
  assert.equal(timingSafeEqual("", "a"), false);
  assert.equal(timingSafeEqual(new Uint8Array([1, 2]), new Uint8Array([1, 2])), true);
  assert.equal(timingSafeEqual(new Uint8Array([1, 2]), "\x01\x03"), false);
});

Deno.test("createCallToken: URL-safe, 32 random bytes by default, never repeats", () => {
  const seen = new Set<string>();
  for (let i = 0; i < 200; i++) {
    const t = createCallToken();
    assert.match(t, /^[A-Za-z0-9_-]{43}$/);
    assert.equal(encodeURIComponent(t), t);
    seen.add(t);
  }
  assert.equal(seen.size, 200);
  assert.match(createCallToken(16), /^[A-Za-z0-9_-]{22}$/);
  assert.throws(() => createCallToken(8), FlowcatError);
});

Deno.test("signed call token: MAC is HMAC-SHA256 of the body; run and expiry are bound", async () => {
  const token = await signCallToken(SECRET, { runId: 42, ttlSeconds: 600, now: NOW });
  const parts = token.split(".");
  assert.equal(parts.length, 5);
  assert.deepEqual(parts.slice(0, 3), ["v1", "42", String(NOW / 1000 + 600)]);
  const body = parts.slice(0, 4).join(".");
  assert.equal(parts[4], createHmac("sha256", SECRET).update(body).digest("base64url"));
  assert.equal(encodeURIComponent(token), token);

  assert.deepEqual(await verifyCallToken(SECRET, token, { runId: 42, now: NOW }), {
    ok: true,
    runId: "42",
    expiresAt: NOW + 600_000,
  });
  const refuse = async (t: string, expect: { runId?: number; now?: number }, why: RegExp) => {
    const v = await verifyCallToken(SECRET, t, expect);
    assert.equal(v.ok, false);
    assert.match((v as { reason: string }).reason, why);
  };
  await refuse(token, { runId: 43, now: NOW }, /another run/);
  await refuse(token, { now: NOW + 600_000 }, /expired/);
  await refuse(token.replace(".42.", ".43."), { now: NOW }, /signature/);
  await refuse(
    token.slice(0, -2) + (token.endsWith("AA") ? "BB" : "AA"),
    { now: NOW },
    /signature/,
  );
  await refuse("v1.42.1", { now: NOW }, /malformed/);
  const other = await verifyCallToken("another-secret-0123456", token, { now: NOW });
  assert.equal(other.ok, false);
  await assert.rejects(() => signCallToken("short", { runId: 1 }), FlowcatError);
  await assert.rejects(() => signCallToken(SECRET, { runId: "a.b" }), FlowcatError);
});

// Twilio's documented example: URL, POST params and auth token "12345".
const TW_URL = "https://mycompany.com/myapp.php?foo=1&bar=2";
const TW_PARAMS = {
  CallSid: "CA1234567890ABCDE",
  Caller: "+12349013030",
  Digits: "1234",
  From: "+12349013030",
  To: "+18005551212",
};

Deno.test("twilio signature: matches Twilio's published vector and node:crypto", async () => {
  assert.equal(await twilioSignature("12345", TW_URL, TW_PARAMS), "0/KCTR6DLpKmkAf8muzZqo1nDgQ=");
  const params = new URLSearchParams([["b", "2"], ["a", "9"], ["a", "1"]]);
  const data = "https://x.test/hook" + "a1" + "a9" + "b2";
  assert.equal(
    await twilioSignature("tok", "https://x.test/hook", params),
    createHmac("sha1", "tok").update(data).digest("base64"),
  );
});

Deno.test("twilio signature: verify accepts the real one, refuses tampering", async () => {
  const signature = "0/KCTR6DLpKmkAf8muzZqo1nDgQ=";
  const ok = await verifyTwilioSignature({
    authToken: "12345",
    url: TW_URL,
    params: TW_PARAMS,
    signature,
  });
  assert.deepEqual(ok, { ok: true });
  const tampered = { ...TW_PARAMS, Digits: "1235" };
  for (
    const bad of [
      { authToken: "12345", url: TW_URL, params: tampered, signature },
      { authToken: "12346", url: TW_URL, params: TW_PARAMS, signature },
      { authToken: "12345", url: TW_URL + "&x=1", params: TW_PARAMS, signature },
      { authToken: "12345", url: TW_URL, params: TW_PARAMS, signature: null },
    ]
  ) {
    assert.equal((await verifyTwilioSignature(bad)).ok, false);
  }
});

Deno.test("twilio signature: default port added or removed by a proxy still verifies", async () => {
  const signedWithPort = await twilioSignature("tok", "https://h.test:443/a?b=1", { X: "1" });
  const v = await verifyTwilioSignature({
    authToken: "tok",
    url: "https://h.test/a?b=1",
    params: { X: "1" },
    signature: signedWithPort,
  });
  assert.deepEqual(v, { ok: true });
  const signedWithout = await twilioSignature("tok", "https://h.test/a", {});
  const v2 = await verifyTwilioSignature({
    authToken: "tok",
    url: "https://h.test:443/a",
    signature: signedWithout,
  });
  assert.deepEqual(v2, { ok: true });
});

Deno.test("twilio signature: repeated form values are deduplicated, then sorted (twilio-node)", async () => {
  // A repeated name with a repeated value (Twilio sends e.g. two identical StirVerstat entries).
  const params = new URLSearchParams([["b", "2"], ["a", "9"], ["a", "1"], ["a", "9"], ["b", "2"]]);
  const data = "https://x.test/hook" + "a1" + "a9" + "b2";
  const expected = createHmac("sha1", "tok").update(data).digest("base64");
  assert.equal(await twilioSignature("tok", "https://x.test/hook", params), expected);
  const v = await verifyTwilioSignature({
    authToken: "tok",
    url: "https://x.test/hook",
    params,
    signature: expected,
  });
  assert.deepEqual(v, { ok: true });
});

Deno.test("twilio signature: the URL is normalized before signing, as Twilio's libraries do", async () => {
  // What the server reconstructs and what Twilio signed can differ in case, escaping and the
  // query's encoding; each normalized form twilio-node tries is accepted.
  assert.deepEqual(twilioUrlForms("https://Example.COM/a b?x=a+b&y=1&x=c"), [
    "https://Example.COM/a b?x=a+b&y=1&x=c",
    "https://example.com/a%20b?x=a+b&y=1&x=c",
    "https://example.com/a%20b?x=a%20b&x=c&y=1",
    "https://example.com:443/a%20b?x=a+b&y=1&x=c",
    "https://example.com:443/a%20b?x=a%20b&x=c&y=1",
  ]);
  const cases: [string, string][] = [
    ["https://example.com/a%20b?x=a+b", "https://Example.COM/a b?x=a+b"],
    ["https://example.com/hook?q=a%20b", "https://example.com/hook?q=a+b"],
    ["https://example.com:443/hook?q=%C3%A9", "https://example.com/hook?q=é"],
  ];
  for (const [signed, seen] of cases) {
    const signature = await twilioSignature("tok", signed, { A: "1" });
    const v = await verifyTwilioSignature({
      authToken: "tok",
      url: seen,
      params: { A: "1" },
      signature,
    });
    assert.deepEqual(v, { ok: true }, `${seen} vs signed ${signed}`);
  }
  const other = await twilioSignature("tok", "https://example.com/other", {});
  const refused = await verifyTwilioSignature({
    authToken: "tok",
    url: "https://example.com/hook",
    signature: other,
  });
  assert.equal(refused.ok, false);
});

function telnyxKeys() {
  const { publicKey, privateKey } = generateKeyPairSync("ed25519");
  const jwk = publicKey.export({ format: "jwk" }) as { x: string };
  return { publicKey: Buffer.from(jwk.x, "base64url").toString("base64"), privateKey };
}
Deno.test("telnyx signature: ed25519 over `timestamp|body`, window and tamper checks", async () => {
  const { publicKey, privateKey } = telnyxKeys();
  const body = '{"data":{"event_type":"call.initiated","id":"e-1"}}';
  const timestamp = String(NOW / 1000);
  const signature = sign(null, Buffer.from(`${timestamp}|${body}`), privateKey).toString("base64");
  const base = { publicKey, body, signature, timestamp, now: NOW };
  assert.deepEqual(await verifyTelnyxSignature(base), { ok: true });
  assert.deepEqual(await verifyTelnyxSignature({ ...base, body: new TextEncoder().encode(body) }), {
    ok: true,
  });
  const refused = async (o: Partial<typeof base> & { now?: number }, why: RegExp) => {
    const v = await verifyTelnyxSignature({ ...base, ...o });
    assert.equal(v.ok, false);
    assert.match((v as { reason: string }).reason, why);
  };
  await refused({ body: body.replace("e-1", "e-2") }, /mismatch/);
  await refused({ timestamp: String(NOW / 1000 + 1) }, /mismatch/);
  await refused({ now: NOW + 301_000 }, /replay window/);
  await refused({ signature: "" }, /missing/);
  await refused({ signature: "AAAA" }, /malformed/);
  await refused({ publicKey: telnyxKeys().publicKey }, /mismatch/);
  await assert.rejects(() => verifyTelnyxSignature({ ...base, publicKey: "AAAA" }), FlowcatError);
});

Deno.test("generic HMAC: hex/base64 encodings, timestamp prefix, window", async () => {
  const body = "event=1";
  const hex = createHmac("sha256", SECRET).update(body).digest("hex");
  assert.deepEqual(await verifyHmacSignature({ secret: SECRET, message: body, signature: hex }), {
    ok: true,
  });
  assert.deepEqual(
    await verifyHmacSignature({ secret: SECRET, message: body, signature: hex.toUpperCase() }),
    { ok: true },
  );
  const ts = String(NOW / 1000);
  const b64 = createHmac("sha512", SECRET).update(`${ts}:${body}`).digest("base64");
  const opts = {
    secret: SECRET,
    message: body,
    signature: b64,
    hash: "SHA-512" as const,
    encoding: "base64" as const,
    timestamp: ts,
    separator: ":",
    now: NOW,
  };
  assert.deepEqual(await verifyHmacSignature(opts), { ok: true });
  assert.equal((await verifyHmacSignature({ ...opts, message: "event=2" })).ok, false);
  assert.equal(
    (await verifyHmacSignature({ ...opts, timestamp: String(NOW / 1000 - 1) })).ok,
    false,
  );
  assert.equal((await verifyHmacSignature({ ...opts, now: NOW - 400_000 })).ok, false);
});

Deno.test("checkTimestamp and ReplayGuard refuse stale and repeated events", () => {
  assert.equal(checkTimestamp(String(NOW / 1000 - 299), NOW).ok, true);
  assert.equal(checkTimestamp(NOW / 1000 + 301, NOW).ok, false);
  assert.equal(checkTimestamp("12abc", NOW).ok, false);
  assert.equal(checkTimestamp(undefined, NOW).ok, false);
  const guard = new ReplayGuard(300, 3);
  assert.equal(guard.firstSeen("sig-a", NOW), true);
  assert.equal(guard.firstSeen("sig-a", NOW + 1000), false, "replay inside the window");
  assert.equal(guard.firstSeen("sig-a", NOW + 601_000), true, "remembered no longer than needed");
  for (const k of ["b", "c", "d"]) guard.firstSeen(k, NOW + 602_000);
  assert.equal(guard.firstSeen("sig-a", NOW + 603_000), true, "bounded: oldest evicted");
});

Deno.test("E.164: valid and invalid numbers; assertE164 explains", () => {
  for (const ok of ["+15550001111", "+442071838750", "+919800000000", "+12", "+123456789012345"]) {
    assert.equal(isE164(ok), true, ok);
  }
  for (
    const bad of [
      "15550001111",
      "+0123456",
      "+1 555 000 1111",
      "+1-555",
      "+1234567890123456",
      "+",
      "",
      15550001111,
      null,
    ]
  ) {
    assert.equal(isE164(bad), false, String(bad));
  }
  assert.equal(assertE164("+15550001111"), "+15550001111");
  assert.throws(
    () => assertE164("555-0001", "to_number"),
    (e) =>
      e instanceof FlowcatError && e.kind === "protocol" &&
      /to_number must be an E\.164/.test(e.message) && /"555-0001"/.test(e.message),
  );
  assert.throws(() => assertE164(undefined), /got undefined/);
});
