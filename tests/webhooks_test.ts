// Carrier webhook verification: every scheme accepts a correctly signed request (signatures made
// independently here with node:crypto, or taken from the carrier's published example) and refuses
// tampering, wrong signatures, missing headers, stale times, replays and missing secrets.
import assert from "node:assert/strict";
import { Buffer } from "node:buffer";
import { createHash, createHmac, generateKeyPairSync, sign } from "node:crypto";
import { ReplayGuard, type Verdict } from "../telephony/security.ts";
import {
  type CarrierWebhookSecrets,
  plivoSignedBase,
  verifyCarrierWebhook,
  type WebhookRequest,
  webhookSecretsFromEnv,
} from "../telephony/webhooks.ts";

const NOW = 1_767_225_600_000; // 2026-01-01T00:00:00Z
const enc = new TextEncoder();

function request(
  url: string,
  body: string,
  headers: Record<string, string>,
  method = "POST",
): WebhookRequest {
  return { url, body: enc.encode(body), headers: new Headers(headers), method };
}

function refused(v: Verdict, why: RegExp, label = ""): void {
  assert.equal(v.ok, false, `expected refusal ${label}`);
  assert.match((v as { reason: string }).reason, why, label);
}

// Twilio's documented example: URL, POST params and auth token "12345".
const TW_URL = "https://mycompany.com/myapp.php?foo=1&bar=2";
const TW_FORM = new URLSearchParams({
  CallSid: "CA1234567890ABCDE",
  Caller: "+12349013030",
  Digits: "1234",
  From: "+12349013030",
  To: "+18005551212",
}).toString();
const TW_SIG = "0/KCTR6DLpKmkAf8muzZqo1nDgQ=";

Deno.test("twilio: published example passes; tamper, wrong, missing, replay refused", async () => {
  const secrets = { twilio: "12345" };
  const replay = new ReplayGuard();
  const opts = { now: NOW, replay };
  const good = request(TW_URL, TW_FORM, { "X-Twilio-Signature": TW_SIG });
  assert.deepEqual(await verifyCarrierWebhook("twilio", good, secrets, opts), { ok: true });
  refused(await verifyCarrierWebhook("twilio", good, secrets, opts), /replayed/);

  const tampered = request(TW_URL, TW_FORM.replace("1234", "1235"), {
    "X-Twilio-Signature": TW_SIG,
  });
  refused(await verifyCarrierWebhook("twilio", tampered, secrets, { now: NOW }), /mismatch/);
  const otherUrl = request(TW_URL + "&x=1", TW_FORM, { "X-Twilio-Signature": TW_SIG });
  refused(await verifyCarrierWebhook("twilio", otherUrl, secrets, { now: NOW }), /mismatch/);
  refused(
    await verifyCarrierWebhook("twilio", good, { twilio: "12346" }, { now: NOW }),
    /mismatch/,
  );
  const missing = request(TW_URL, TW_FORM, {});
  refused(await verifyCarrierWebhook("twilio", missing, secrets), /missing X-Twilio-Signature/i);
});

Deno.test("twilio: JSON body covered by bodySHA256 in the signed URL", async () => {
  // Body and hash from Twilio's published JSON example; the signature is HMAC-SHA1 of the URL.
  const body = '{"CallSid":"CA1234567890ABCDE","Caller":"+12349013030"}';
  const url =
    "https://example.com/myapp?bodySHA256=5ccde7145dfb8f56479710896586cb9d5911809d83afbe34627818790db0aec9";
  const sig = createHmac("sha1", "12345").update(url).digest("base64");
  const ok = request(url, body, { "x-twilio-signature": sig, "content-type": "application/json" });
  assert.deepEqual(await verifyCarrierWebhook("twilio", ok, { twilio: "12345" }), { ok: true });
  const tampered = request(url, body.replace("CA12", "CA99"), { "x-twilio-signature": sig });
  refused(await verifyCarrierWebhook("twilio", tampered, { twilio: "12345" }), /bodySHA256/);
});

Deno.test("no secret configured: refused by name unless allowUnsigned", async () => {
  const req = request(TW_URL, TW_FORM, { "X-Twilio-Signature": TW_SIG });
  for (const carrier of ["twilio", "telnyx", "plivo", "vonage", "sinch", "genesys"]) {
    const v = await verifyCarrierWebhook(carrier, req, {});
    assert.deepEqual(v, { ok: false, reason: `no webhook secret configured for ${carrier}` });
  }
  assert.deepEqual(await verifyCarrierWebhook("plivo", req, {}, { allowUnsigned: true }), {
    ok: true,
  });
  // A configured secret is still checked when unsigned requests are allowed.
  refused(
    await verifyCarrierWebhook("twilio", req, { twilio: "nope" }, { allowUnsigned: true }),
    /mismatch/,
  );
  refused(await verifyCarrierWebhook("acme", req, { twilio: "12345" }), /unknown carrier/);
});

Deno.test("signalwire: Twilio scheme under X-SignalWire-Signature, and hex JSON scheme", async () => {
  const key = "PSK_0123456789abcdef";
  const url = "https://agent.example.com/telephony/answer/signalwire/42";
  const form = "CallSid=c-1&From=%2B15550001111&To=%2B15550002222";
  const data = url + "CallSidc-1" + "From+15550001111" + "To+15550002222";
  const formSig = createHmac("sha1", key).update(data).digest("base64");
  const secrets = { signalwire: key };
  const ok = request(url, form, { "X-SignalWire-Signature": formSig });
  assert.deepEqual(await verifyCarrierWebhook("signalwire", ok, secrets), { ok: true });
  const legacy = request(url, form, { "X-Twilio-Signature": formSig });
  assert.deepEqual(await verifyCarrierWebhook("signalwire", legacy, secrets), { ok: true });
  const tampered = request(url, form.replace("c-1", "c-2"), { "X-SignalWire-Signature": formSig });
  refused(await verifyCarrierWebhook("signalwire", tampered, secrets), /mismatch/);

  const json = '{"call_id":"c-1","event":"calling.call.state"}';
  const hexSig = createHmac("sha1", key).update(url + json).digest("hex");
  const jsonReq = request(url, json, { "X-SignalWire-Signature": hexSig });
  const replay = new ReplayGuard();
  assert.deepEqual(await verifyCarrierWebhook("signalwire", jsonReq, secrets, { replay }), {
    ok: true,
  });
  refused(await verifyCarrierWebhook("signalwire", jsonReq, secrets, { replay }), /replayed/);
  const jsonTampered = request(url, json.replace("c-1", "c-9"), {
    "X-SignalWire-Signature": hexSig,
  });
  refused(await verifyCarrierWebhook("signalwire", jsonTampered, secrets), /mismatch/);
  refused(await verifyCarrierWebhook("signalwire", request(url, json, {}), secrets), /missing/);
});

function telnyxKeys() {
  const { publicKey, privateKey } = generateKeyPairSync("ed25519");
  const jwk = publicKey.export({ format: "jwk" }) as { x: string };
  return { publicKey: Buffer.from(jwk.x, "base64url").toString("base64"), privateKey };
}

Deno.test("telnyx: Ed25519 over timestamp|body, 300 s window, tamper and replay", async () => {
  const { publicKey, privateKey } = telnyxKeys();
  const body = '{"data":{"event_type":"call.initiated","id":"e-1"}}';
  const ts = String(NOW / 1000);
  const sig = sign(null, Buffer.from(`${ts}|${body}`), privateKey).toString("base64");
  const headers = { "telnyx-signature-ed25519": sig, "telnyx-timestamp": ts };
  const url = "https://agent.example.com/telephony/answer/telnyx/42";
  const secrets = { telnyx: publicKey };
  const replay = new ReplayGuard();
  const good = request(url, body, headers);
  assert.deepEqual(await verifyCarrierWebhook("telnyx", good, secrets, { now: NOW, replay }), {
    ok: true,
  });
  refused(await verifyCarrierWebhook("telnyx", good, secrets, { now: NOW, replay }), /replayed/);
  refused(
    await verifyCarrierWebhook(
      "telnyx",
      request(url, body.replace("e-1", "e-2"), headers),
      secrets,
      {
        now: NOW,
      },
    ),
    /mismatch/,
  );
  refused(
    await verifyCarrierWebhook("telnyx", good, secrets, { now: NOW + 301_000 }),
    /replay window/,
  );
  assert.deepEqual(await verifyCarrierWebhook("telnyx", good, secrets, { now: NOW + 299_000 }), {
    ok: true,
  });
  refused(
    await verifyCarrierWebhook("telnyx", request(url, body, { "telnyx-timestamp": ts }), secrets, {
      now: NOW,
    }),
    /missing telnyx-signature-ed25519/,
  );
  const other = telnyxKeys().publicKey;
  refused(await verifyCarrierWebhook("telnyx", good, { telnyx: other }, { now: NOW }), /mismatch/);
  // A malformed key is a refusal, not a crash, and the reason shows nothing of the key.
  const v = await verifyCarrierWebhook("telnyx", good, { telnyx: "bm90LWEta2V5" }, { now: NOW });
  refused(v, /could not be verified/);
  assert.ok(!(v as { reason: string }).reason.includes("bm90LWEta2V5"));
});

Deno.test("plivo: signed base string as Plivo's SDKs build it", () => {
  const post: [string, string][] = [["To", "+1"], ["From", "+2"], ["A", "z"], ["A", "a"]];
  assert.equal(
    plivoSignedBase("https://h.test/p", "POST", post),
    "https://h.test/p?AaAzFrom+2To+1",
  );
  assert.equal(
    plivoSignedBase("https://h.test/p?b=2&a=1", "POST", post),
    "https://h.test/p?a=1&b=2.AaAzFrom+2To+1",
  );
  assert.equal(plivoSignedBase("https://h.test/p?b=2&a=1", "POST", []), "https://h.test/p?a=1&b=2");
  assert.equal(plivoSignedBase("https://h.test/p", "POST", []), "https://h.test/p");
  assert.equal(
    plivoSignedBase("https://h.test:8443/p?b=2&a=1", "GET", []),
    "https://h.test:8443/p?a=1&b=2",
  );
});

Deno.test("plivo V3: HMAC-SHA256 over URL, params and nonce; tamper, missing, nonce replay", async () => {
  const token = "MAXXXXXXXXXXXXXXXXXX-token";
  const url = "https://agent.example.com/telephony/answer/plivo/42?x=1";
  const form = "CallUUID=c-1&From=15550001111&To=15550002222";
  const nonce = "05429567804466091622";
  const signed = "https://agent.example.com/telephony/answer/plivo/42?x=1." +
    "CallUUIDc-1From15550001111To15550002222" + "." + nonce;
  const sig = createHmac("sha256", token).update(signed).digest("base64");
  const secrets = { plivo: token };
  const headers = { "X-Plivo-Signature-V3": sig, "X-Plivo-Signature-V3-Nonce": nonce };
  const replay = new ReplayGuard();
  const good = request(url, form, headers);
  assert.deepEqual(await verifyCarrierWebhook("plivo", good, secrets, { replay }), { ok: true });
  refused(await verifyCarrierWebhook("plivo", good, secrets, { replay }), /replayed/);
  // Plivo may list several signatures (key rotation); any one matching is enough.
  const listed = request(url, form, { ...headers, "X-Plivo-Signature-V3": `AAAA,${sig}` });
  assert.deepEqual(await verifyCarrierWebhook("plivo", listed, secrets), { ok: true });
  refused(
    await verifyCarrierWebhook("plivo", request(url, form.replace("c-1", "c-2"), headers), secrets),
    /mismatch/,
  );
  const otherNonce = { ...headers, "X-Plivo-Signature-V3-Nonce": "1" };
  refused(await verifyCarrierWebhook("plivo", request(url, form, otherNonce), secrets), /mismatch/);
  refused(
    await verifyCarrierWebhook(
      "plivo",
      request(url, form, { "X-Plivo-Signature-V3": sig }),
      secrets,
    ),
    /missing X-Plivo-Signature-V3-Nonce/,
  );
  refused(await verifyCarrierWebhook("plivo", good, { plivo: "other-token" }), /mismatch/);
});

function jwt(secret: string, claims: Record<string, unknown>, alg = "HS256"): string {
  const part = (o: unknown) => Buffer.from(JSON.stringify(o)).toString("base64url");
  const body = `${part({ alg, typ: "JWT" })}.${part(claims)}`;
  return `${body}.${createHmac("sha256", secret).update(body).digest("base64url")}`;
}

Deno.test("vonage: HS256 JWT with payload_hash, iat window, jti replay, alg pinned", async () => {
  const secret = "vonage-signature-secret-0123";
  const url = "https://agent.example.com/telephony/event/vonage/42";
  const body = '{"uuid":"u-1","status":"answered"}';
  const claims = {
    iat: NOW / 1000,
    jti: "j-1",
    api_key: "k1",
    application_id: "app-1",
    payload_hash: createHash("sha256").update(body).digest("hex"),
  };
  const auth = { authorization: `Bearer ${jwt(secret, claims)}` };
  const secrets = { vonage: secret };
  const replay = new ReplayGuard();
  const good = request(url, body, auth);
  assert.deepEqual(await verifyCarrierWebhook("vonage", good, secrets, { now: NOW, replay }), {
    ok: true,
  });
  refused(await verifyCarrierWebhook("vonage", good, secrets, { now: NOW, replay }), /replayed/);
  refused(
    await verifyCarrierWebhook("vonage", request(url, body.replace("u-1", "u-2"), auth), secrets, {
      now: NOW,
    }),
    /payload_hash/,
  );
  refused(
    await verifyCarrierWebhook("vonage", good, { vonage: "wrong" }, { now: NOW }),
    /mismatch/,
  );
  refused(await verifyCarrierWebhook("vonage", good, secrets, { now: NOW + 600_000 }), /iat/);
  const none = request(url, body, { authorization: `Bearer ${jwt(secret, claims, "none")}` });
  refused(await verifyCarrierWebhook("vonage", none, secrets, { now: NOW }), /HS256/);
  refused(await verifyCarrierWebhook("vonage", request(url, body, {}), secrets), /missing/);

  // A bodiless GET (answer URL): the hash covers the query parameters as compact JSON.
  const getUrl = url + "?to=447700900000&from=447700900001&uuid=u-3";
  const q = { to: "447700900000", from: "447700900001", uuid: "u-3" };
  const getClaims = {
    ...claims,
    jti: "j-2",
    payload_hash: createHash("sha256").update(JSON.stringify(q)).digest("hex"),
  };
  const getReq = request(getUrl, "", { authorization: `Bearer ${jwt(secret, getClaims)}` }, "GET");
  assert.deepEqual(await verifyCarrierWebhook("vonage", getReq, secrets, { now: NOW }), {
    ok: true,
  });
});

Deno.test("sinch: Sinch's published callback-signing example verifies; tamper and time checked", async () => {
  const url = "https://callbacks.yourdomain.com/sinch/callback/ace";
  const body =
    '{"event":"ace","callid":"822aa4b7-05b4-4d83-87c7-1f835ee0b6f6_257","timestamp":"2014-09-24T10:59:41Z","version":1}';
  const when = Date.parse("2014-09-24T10:59:41Z");
  const headers = {
    "content-type": "application/json",
    "x-timestamp": "2014-09-24T10:59:41Z",
    authorization:
      "application 669E367E-6BBA-48AB-AF15-266871C28135:Tg6fMyo8mj9pYfWQ9ssbx3Tc1BNC87IEygAfLbJqZb4=",
  };
  const secrets: CarrierWebhookSecrets = {
    sinch: {
      applicationKey: "669E367E-6BBA-48AB-AF15-266871C28135",
      applicationSecret: "BeIukql3pTKJ8RGL5zo0DA==",
    },
  };
  const replay = new ReplayGuard();
  const good = request(url, body, headers);
  assert.deepEqual(await verifyCarrierWebhook("sinch", good, secrets, { now: when, replay }), {
    ok: true,
  });
  refused(await verifyCarrierWebhook("sinch", good, secrets, { now: when, replay }), /replayed/);
  refused(
    await verifyCarrierWebhook(
      "sinch",
      request(url, body.replace("ace", "dice"), headers),
      secrets,
      {
        now: when,
      },
    ),
    /mismatch/,
  );
  refused(await verifyCarrierWebhook("sinch", good, secrets, { now: when + 400_000 }), /window/);
  const otherKey = { sinch: { ...secrets.sinch!, applicationKey: "00000000-0000" } };
  refused(await verifyCarrierWebhook("sinch", good, otherKey, { now: when }), /mismatch/);
  const noTime = request(url, body, { ...headers, "x-timestamp": "" });
  refused(await verifyCarrierWebhook("sinch", noTime, secrets, { now: when }), /x-timestamp/);
  refused(
    await verifyCarrierWebhook("sinch", request(url, body, {}), secrets, { now: when }),
    /Authorization/,
  );
});

Deno.test("bandwidth and exotel: Basic credentials; genesys: X-API-KEY", async () => {
  const creds = { username: "bw-user", password: "s3cret:with:colons" };
  const basic = (u: string, p: string) => `Basic ${Buffer.from(`${u}:${p}`).toString("base64")}`;
  const url = "https://agent.example.com/telephony/answer/bandwidth/42";
  for (const carrier of ["bandwidth", "exotel"] as const) {
    const secrets = { [carrier]: creds };
    const ok = request(url, "{}", { authorization: basic(creds.username, creds.password) });
    assert.deepEqual(await verifyCarrierWebhook(carrier, ok, secrets), { ok: true });
    const wrong = request(url, "{}", { authorization: basic(creds.username, "nope") });
    refused(await verifyCarrierWebhook(carrier, wrong, secrets), /mismatch/, carrier);
    refused(await verifyCarrierWebhook(carrier, request(url, "{}", {}), secrets), /missing Basic/);
    const junk = request(url, "{}", { authorization: "Basic %%%" });
    refused(await verifyCarrierWebhook(carrier, junk, secrets), /malformed/);
  }
  const secrets = { genesys: "audiohook-api-key-0123" };
  const ws = "https://agent.example.com/telephony/ws/genesys/42?token=t";
  const good = request(ws, "", { "X-API-KEY": "audiohook-api-key-0123" }, "GET");
  assert.deepEqual(await verifyCarrierWebhook("genesys", good, secrets), { ok: true });
  const bad = request(ws, "", { "X-API-KEY": "audiohook-api-key-0124" }, "GET");
  refused(await verifyCarrierWebhook("genesys", bad, secrets), /X-API-KEY mismatch/);
  refused(await verifyCarrierWebhook("genesys", request(ws, "", {}, "GET"), secrets), /missing/);
});

Deno.test("webhookSecretsFromEnv: reads the documented variables; pairs need both halves", () => {
  const env: Record<string, string> = {
    TWILIO_AUTH_TOKEN: "tw",
    TELNYX_PUBLIC_KEY: " key ",
    SINCH_APPLICATION_KEY: "sk",
    SINCH_APPLICATION_SECRET: "ss",
    BANDWIDTH_CALLBACK_USERNAME: "bu",
    PLIVO_AUTH_TOKEN: "",
  };
  const s = webhookSecretsFromEnv((n) => env[n]);
  assert.equal(s.twilio, "tw");
  assert.equal(s.telnyx, "key");
  assert.deepEqual(s.sinch, { applicationKey: "sk", applicationSecret: "ss" });
  assert.equal(s.bandwidth, undefined);
  assert.equal(s.plivo, undefined);
  assert.equal(s.vonage, undefined);
});
