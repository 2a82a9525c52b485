import assert from "node:assert/strict";
import { inspect } from "node:util";
import {
  computeDigestResponse,
  DigestClient,
  DigestCredentials,
  digestHash,
  parseAuthParams,
  parseDigestChallenge,
  selectChallenge,
} from "../telephony/sip/digest.ts";
import { parseSipMessage, type SipResponse } from "../telephony/sip/message.ts";

Deno.test("MD5 matches the RFC 1321 test suite", () => {
  const vectors: [string, string][] = [
    ["", "d41d8cd98f00b204e9800998ecf8427e"],
    ["a", "0cc175b9c0f1b6a831c399e269772661"],
    ["abc", "900150983cd24fb0d6963f7d28e17f72"],
    ["message digest", "f96b697d7cb7938d525a2f31aaf161d0"],
    ["abcdefghijklmnopqrstuvwxyz", "c3fcd3d76192e4007dfb496cca67e13b"],
    [
      "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789",
      "d174ab98d277d9f5a5611c2c9f419d9f",
    ],
    ["1234567890".repeat(8), "57edf4a22be3c955ac49da2e2107b67a"],
  ];
  for (const [input, hex] of vectors) assert.equal(digestHash("MD5", input), hex, input);
  assert.equal(
    digestHash("SHA-256", "abc"),
    "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad",
  );
  assert.equal(
    digestHash("SHA-512-256", "abc"),
    "53048e2681941ef99b2e29b76b4c7dabe4c2d0c634fc6d46e0e2f13107e7af23",
  );
});

Deno.test("RFC 2617 §3.5 worked example (Mufasa / Circle Of Life)", () => {
  const response = computeDigestResponse({
    algorithm: "MD5",
    username: "Mufasa",
    realm: "testrealm@host.com",
    password: "Circle Of Life",
    nonce: "dcd98b7102dd2f0e8b11d0f600bfb0c093",
    method: "GET",
    uri: "/dir/index.html",
    qop: "auth",
    nc: "00000001",
    cnonce: "0a4f113b",
  });
  assert.equal(response, "6629fae49393a05397450978507c4ef1");
});

Deno.test("RFC 7616 §3.9.1 examples, MD5 and SHA-256", () => {
  const common = {
    username: "Mufasa",
    realm: "http-auth@example.org",
    password: "Circle of Life",
    nonce: "7ypf/xlj9XXwfDPEoM4URrv/xwf94BcCAzFZH4GiTo0v",
    method: "GET",
    uri: "/dir/index.html",
    qop: "auth",
    nc: "00000001",
    cnonce: "f2/wE4q74E6zIJEtWaHKaf5wv/H5QzzpXusqGemxURZJ",
  };
  assert.equal(
    computeDigestResponse({ ...common, algorithm: "MD5" }),
    "8ca523f5e9506fed4657c9700eebdbec",
  );
  assert.equal(
    computeDigestResponse({ ...common, algorithm: "SHA-256" }),
    "753927fa0e85d155564e2e272a28d1802ca10daf4496794697cf8db5856cb6c1",
  );
});

Deno.test("SIP REGISTER vector produced by sipp 3.6.1 (reference notes)", () => {
  const client = new DigestClient(new DigestCredentials("alice", "s3cret"), {
    cnonce: () => "6b8b4567",
  });
  const ch = parseDigestChallenge(
    'Digest realm="test.local", nonce="abc123nonce", qop="auth", algorithm=MD5',
  );
  assert.ok(ch.ok);
  const auth = client.authorize(ch.value, "REGISTER", "sip:127.0.0.1:5070");
  assert.ok(auth.ok);
  assert.equal(auth.value.name, "Authorization");
  const p = parseAuthParams(auth.value.value.replace(/^Digest /, ""))!;
  assert.equal(p.get("response"), "b6e481b7b6447b4c29a76d3f69e91ae1");
  assert.equal(p.get("nc"), "00000001");
  assert.match(auth.value.value, /qop=auth, nc=00000001/, "qop and nc are unquoted");
  assert.match(auth.value.value, /algorithm=MD5/);
});

Deno.test("challenge parsing: quoted qop list, opaque, stale, algorithm case, errors", () => {
  const ch = parseDigestChallenge(
    'digest realm="trunk.example.com", nonce="5f2a9c",opaque="x1", qop="auth,auth-int", algorithm=sha-256-SESS, stale=TRUE',
    true,
  );
  assert.ok(ch.ok);
  assert.equal(ch.value.algorithm, "SHA-256-sess");
  assert.deepEqual(ch.value.qop, ["auth", "auth-int"]);
  assert.equal(ch.value.opaque, "x1");
  assert.equal(ch.value.stale, true);
  assert.equal(ch.value.proxy, true);
  const legacy = parseDigestChallenge('Digest realm="r", nonce="n"');
  assert.ok(
    legacy.ok && legacy.value.algorithm === "MD5" && !legacy.value.algorithmGiven &&
      legacy.value.qop.length === 0,
  );
  assert.match(reasonOf(parseDigestChallenge('Basic realm="r"')), /not a Digest/);
  assert.match(reasonOf(parseDigestChallenge('Digest realm="r"')), /without nonce/);
  assert.match(
    reasonOf(parseDigestChallenge('Digest realm="r", nonce="n", algorithm=SHA-1')),
    /unsupported/,
  );
  assert.match(reasonOf(parseDigestChallenge('Digest realm="r, nonce="n"')), /malformed/);
});

function reasonOf(r: { ok: boolean; reason?: string }): string {
  return r.ok ? "" : r.reason ?? "";
}

Deno.test("no-qop legacy form: response = H(HA1:nonce:HA2), no nc/cnonce/qop", () => {
  const client = new DigestClient(new DigestCredentials("alice", "pw"));
  const ch = parseDigestChallenge('Digest realm="r", nonce="n1"');
  assert.ok(ch.ok);
  const auth = client.authorize(ch.value, "INVITE", "sip:bob@example.com");
  assert.ok(auth.ok);
  const p = parseAuthParams(auth.value.value.slice(7))!;
  const ha1 = digestHash("MD5", "alice:r:pw");
  const ha2 = digestHash("MD5", "INVITE:sip:bob@example.com");
  assert.equal(p.get("response"), digestHash("MD5", `${ha1}:n1:${ha2}`));
  for (const absent of ["nc", "cnonce", "qop", "algorithm", "opaque"]) {
    assert.equal(p.has(absent), false, absent);
  }
});

Deno.test("nonce count increments per reuse of a nonce and restarts for a new one", () => {
  let n = 0;
  const client = new DigestClient(new DigestCredentials("alice", "pw"), {
    cnonce: () => `c${++n}`,
  });
  const ch1 = parseDigestChallenge('Digest realm="r", nonce="first", qop="auth"');
  const ch2 = parseDigestChallenge('Digest realm="r", nonce="second", qop="auth"');
  assert.ok(ch1.ok && ch2.ok);
  const nc = (v: string) => parseAuthParams(v.slice(7))!.get("nc");
  assert.equal(nc(value(client.authorize(ch1.value, "REGISTER", "sip:r"))), "00000001");
  assert.equal(nc(value(client.authorize(ch1.value, "REGISTER", "sip:r"))), "00000002");
  assert.equal(nc(value(client.authorize(ch2.value, "REGISTER", "sip:r"))), "00000001");
  for (let i = 0; i < 14; i++) client.authorize(ch1.value, "REGISTER", "sip:r");
  assert.equal(
    nc(value(client.authorize(ch1.value, "REGISTER", "sip:r"))),
    "00000011",
    "hex count",
  );
  assert.equal(client.nonceCount("first"), 17);
});

function value(r: { ok: true; value: { value: string } } | { ok: false; reason: string }): string {
  if (!r.ok) throw new Error(r.reason);
  return r.value.value;
}

Deno.test("qop=auth-int, -sess and userhash variants follow RFC 7616", () => {
  const client = new DigestClient(new DigestCredentials("alice", "pw"), { cnonce: () => "cn" });
  const ch = parseDigestChallenge(
    'Digest realm="r", nonce="n", qop="auth-int", algorithm=MD5-sess, userhash=true',
  );
  assert.ok(ch.ok);
  const p = parseAuthParams(
    value(client.authorize(ch.value, "INVITE", "sip:b@x", "v=0\r\n")).slice(7),
  )!;
  const h = (s: string) => digestHash("MD5", s);
  const ha1 = h(`${h("alice:r:pw")}:n:cn`);
  const ha2 = h(`INVITE:sip:b@x:${h("v=0\r\n")}`);
  assert.equal(p.get("response"), h(`${ha1}:n:00000001:cn:auth-int:${ha2}`));
  assert.equal(p.get("username"), h("alice:r"));
  assert.equal(p.get("userhash"), "true");
  const conf = parseDigestChallenge('Digest realm="r", nonce="n", qop="auth-conf"');
  assert.ok(conf.ok);
  assert.match(reasonOf(client.authorize(conf.value, "INVITE", "sip:b@x")), /unsupported qop/);
});

Deno.test("selectChallenge: 407 uses Proxy-Authenticate and prefers the strongest algorithm", () => {
  const res = parseSipMessage([
    "SIP/2.0 407 Proxy Authentication Required",
    "Via: SIP/2.0/UDP 192.0.2.10:5060;branch=z9hG4bKa",
    "From: <sip:alice@t.example>;tag=1",
    "To: <sip:bob@t.example>;tag=2",
    "Call-ID: x@y",
    "CSeq: 1 INVITE",
    'Proxy-Authenticate: Digest realm="t", nonce="m", algorithm=MD5, qop="auth"',
    'Proxy-Authenticate: Digest realm="t", nonce="s", algorithm=SHA-256, qop="auth"',
    'WWW-Authenticate: Digest realm="ignored", nonce="w"',
    "Content-Length: 0",
    "",
    "",
  ].join("\r\n"));
  assert.ok(res.ok);
  const ch = selectChallenge(res.message as SipResponse);
  assert.ok(ch.ok);
  assert.equal(ch.value.algorithm, "SHA-256");
  assert.equal(ch.value.nonce, "s");
  const client = new DigestClient(new DigestCredentials("alice", "pw"));
  const auth = client.authorize(ch.value, "INVITE", "sip:bob@t.example");
  assert.ok(auth.ok && auth.value.name === "Proxy-Authorization");
});

Deno.test("the password never appears in strings, JSON, inspection, headers or errors", () => {
  const secret = "Zq9-very-secret-pw";
  const creds = new DigestCredentials("alice", secret);
  const client = new DigestClient(creds);
  const ch = parseDigestChallenge('Digest realm="r", nonce="n", qop="auth", opaque="o"');
  assert.ok(ch.ok);
  const auth = client.authorize(ch.value, "REGISTER", "sip:r");
  const bad = parseDigestChallenge('Digest realm="r", nonce="n", qop="auth-conf"');
  assert.ok(bad.ok);
  const failed = client.authorize(bad.value, "REGISTER", "sip:r");
  const seen = [
    String(creds),
    `${client}`,
    JSON.stringify(creds),
    JSON.stringify({ client, creds }),
    Deno.inspect(creds, { showHidden: true, depth: 10 }),
    Deno.inspect(client, { showHidden: true, depth: 10 }),
    Deno.inspect({ nested: [creds, client] }),
    inspect(creds, { showHidden: true }),
    JSON.stringify(auth),
    JSON.stringify(failed),
    Object.keys(creds).join(","),
  ];
  for (const text of seen) assert.ok(!text.includes(secret), `password leaked in: ${text}`);
  assert.match(String(creds), /alice/);
  assert.ok(!failed.ok);
});
