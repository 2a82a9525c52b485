import assert from "node:assert/strict";
import {
  formatCSeq,
  formatNameAddr,
  formatVia,
  parseCSeq,
  parseNameAddr,
  parseVia,
} from "../telephony/sip/address.ts";
import { formatUri, parseHostPort, parseUri } from "../telephony/sip/uri.ts";
import { canonicalHeaderName, splitOutside } from "../telephony/sip/headers.ts";
import { parseParams } from "../telephony/sip/params.ts";
import {
  buildResponse,
  cseqOf,
  newBranch,
  newCallId,
  newTag,
  reasonPhrase,
  tagOf,
  topVia,
} from "../telephony/sip/build.ts";
import { getHeaders, parseSipMessage, type SipRequest } from "../telephony/sip/message.ts";

Deno.test("URI: user, password, host, port, params, headers", () => {
  const r = parseUri("sip:alice:pw@192.0.2.10:5070;transport=UDP;lr?Subject=hi&Priority=urgent");
  assert.ok(r.ok);
  assert.equal(r.value.scheme, "sip");
  assert.equal(r.value.user, "alice");
  assert.equal(r.value.password, "pw");
  assert.equal(r.value.host, "192.0.2.10");
  assert.equal(r.value.port, 5070);
  assert.equal(r.value.params.get("transport"), "UDP");
  assert.equal(r.value.params.get("lr"), null);
  assert.deepEqual(r.value.headers, [["Subject", "hi"], ["Priority", "urgent"]]);
  assert.equal(
    formatUri(r.value),
    "sip:alice:pw@192.0.2.10:5070;transport=UDP;lr?Subject=hi&Priority=urgent",
  );
});

Deno.test("URI: host only, IPv6, escaped user, sips and tel", () => {
  const host = parseUri("sip:trunk.example.com");
  assert.ok(host.ok && host.value.user === undefined && host.value.port === undefined);
  const v6 = parseUri("sip:bob@[2001:db8::10]:5060");
  assert.ok(v6.ok && v6.value.host === "[2001:db8::10]" && v6.value.port === 5060);
  const esc = parseUri("sip:user;par=u%40example.net@example.com");
  assert.ok(
    esc.ok && esc.value.user === "user;par=u%40example.net" && esc.value.host === "example.com",
  );
  const sips = parseUri("SIPS:carol@secure.example.com");
  assert.ok(sips.ok && sips.value.scheme === "sips");
  const tel = parseUri("tel:+15551234567;phone-context=example.com");
  assert.ok(
    tel.ok && tel.value.user === "+15551234567" &&
      tel.value.params.get("phone-context") === "example.com",
  );
  assert.equal(formatUri(tel.value), "tel:+15551234567;phone-context=example.com");
});

Deno.test("URI: malformed input fails with a reason", () => {
  for (
    const bad of [
      "alice@example.com",
      "<sip:a@host>",
      "1http:x",
      "sip:@host",
      "sip:a@host:0",
      "sip:a@host:99999",
      "sip:a@ho st",
      "sip:a@[::1",
    ]
  ) {
    const r = parseUri(bad);
    assert.equal(r.ok, false, bad);
  }
  // Any other absolute URI is kept opaque: From, To and Contact may carry one (RFC 4475 §3.3.4).
  const http = parseUri("http://www.example.com");
  assert.ok(http.ok && http.value.opaque === "//www.example.com" && http.value.host === "");
  assert.equal(formatUri(http.value), "http://www.example.com");
  assert.deepEqual(parseHostPort("example.com:5060"), {
    ok: true,
    value: { host: "example.com", port: 5060 },
  });
});

Deno.test("name-addr: quoted, token and no display name; addr-spec params go to the header", () => {
  const q = parseNameAddr(
    '"Bob \\"B\\" Smith" <sip:bob@example.com;transport=udp>;tag=a6c85cf;expires=60',
  );
  assert.ok(q.ok);
  assert.equal(q.value.displayName, 'Bob "B" Smith');
  assert.equal(q.value.uri.params.get("transport"), "udp");
  assert.equal(q.value.params.get("tag"), "a6c85cf");
  assert.equal(q.value.params.get("expires"), "60");
  const tok = parseNameAddr("Bob  Smith <sip:bob@example.com>");
  assert.ok(tok.ok && tok.value.displayName === "Bob Smith" && tok.value.params.size === 0);
  const bare = parseNameAddr("sip:bob@example.com;tag=xyz");
  assert.ok(bare.ok);
  assert.equal(bare.value.params.get("tag"), "xyz");
  assert.equal(bare.value.uri.params.size, 0, "in addr-spec form ;tag is a header parameter");
  const round = parseNameAddr(formatNameAddr(q.value));
  assert.deepEqual(round, q);
  for (const bad of ['"open <sip:a@b>', "<sip:a@b", '"x" sip:a@b', "<sip:a@b> junk"]) {
    assert.equal(parseNameAddr(bad).ok, false, bad);
  }
});

Deno.test("Via: branch, received, rport (empty and filled), spacing, IPv6", () => {
  const a = parseVia("SIP/2.0/UDP 192.0.2.10:5060;branch=z9hG4bK7a1f;rport");
  assert.ok(a.ok);
  assert.equal(a.value.transport, "UDP");
  assert.equal(a.value.branch, "z9hG4bK7a1f");
  assert.equal(a.value.rport, true);
  assert.equal(formatVia(a.value), "SIP/2.0/UDP 192.0.2.10:5060;branch=z9hG4bK7a1f;rport");
  const b = parseVia(
    "SIP / 2.0 / tcp  10.0.0.1 : 5070 ;branch=z9hG4bKx;received=198.51.100.4;rport=40123",
  );
  assert.ok(b.ok);
  assert.deepEqual([b.value.transport, b.value.host, b.value.port], ["TCP", "10.0.0.1", 5070]);
  assert.equal(b.value.received, "198.51.100.4");
  assert.equal(b.value.rport, 40123);
  const v6 = parseVia("SIP/2.0/UDP [2001:db8::1]:5060;branch=z9hG4bKv6");
  assert.ok(v6.ok && v6.value.host === "[2001:db8::1]" && v6.value.port === 5060);
  for (
    const bad of ["SIP/3.0/UDP h", "SIP/2.0/UDP", "SIP/2.0/UDP h;rport=abc", "SIP/2.0/UDP h:0"]
  ) {
    assert.equal(parseVia(bad).ok, false, bad);
  }
});

Deno.test("CSeq: number and method, range checks", () => {
  assert.deepEqual(parseCSeq(" 4711  REGISTER "), {
    ok: true,
    value: { seq: 4711, method: "REGISTER" },
  });
  assert.equal(formatCSeq({ seq: 2, method: "BYE" }), "2 BYE");
  assert.equal(parseCSeq("2147483648 INVITE").ok, false);
  assert.equal(parseCSeq("INVITE 1").ok, false);
  assert.equal(parseCSeq("1").ok, false);
});

Deno.test("header helpers: canonical names, quote-aware split, params", () => {
  assert.equal(canonicalHeaderName("i"), "Call-ID");
  assert.equal(canonicalHeaderName("cseq"), "CSeq");
  assert.equal(canonicalHeaderName("proxy-authenticate"), "Proxy-Authenticate");
  assert.equal(canonicalHeaderName("X-Custom"), "X-Custom");
  assert.deepEqual(splitOutside('"a,b" <sip:c,d@e>, f', ","), ['"a,b" <sip:c,d@e>', "f"]);
  assert.equal(splitOutside('"unterminated, x', ","), undefined);
  assert.deepEqual([...parseParams(';tag=1;lr;x="a;b"')!], [["tag", "1"], ["lr", null], [
    "x",
    "a;b",
  ]]);
});

const INVITE = [
  "INVITE sip:agent@192.0.2.10 SIP/2.0",
  "Via: SIP/2.0/UDP proxy.example.com;branch=z9hG4bKp, SIP/2.0/UDP 198.51.100.2;branch=z9hG4bKu;rport=5062",
  "Record-Route: <sip:proxy.example.com;lr>",
  'From: "Caller" <sip:+15550001111@example.com>;tag=from1',
  "To: <sip:agent@192.0.2.10>",
  "Call-ID: abc@198.51.100.2",
  "CSeq: 101 INVITE",
  "Max-Forwards: 69",
  "Content-Length: 0",
  "",
  "",
].join("\r\n");

Deno.test("buildResponse copies Via/From/To/Call-ID/CSeq, tags To, keeps Record-Route", () => {
  const parsed = parseSipMessage(INVITE);
  assert.ok(parsed.ok);
  const req = parsed.message as SipRequest;
  const trying = buildResponse(req, 100, { toTag: "never" });
  assert.equal(tagOf(trying, "To"), undefined, "100 Trying carries no To tag");
  assert.equal(trying.reason, "Trying");
  const ok = buildResponse(req, 200, {
    toTag: "uas1",
    headers: [{ name: "Contact", value: "<sip:agent@192.0.2.10:5060>" }],
    body: "v=0\r\n",
    contentType: "application/sdp",
  });
  assert.deepEqual(getHeaders(ok, "Via"), getHeaders(req, "Via"));
  assert.equal(tagOf(ok, "To"), "uas1");
  assert.equal(tagOf(ok, "From"), "from1");
  assert.deepEqual(getHeaders(ok, "Record-Route"), ["<sip:proxy.example.com;lr>"]);
  assert.deepEqual(cseqOf(ok), { seq: 101, method: "INVITE" });
  assert.equal(topVia(ok)?.branch, "z9hG4bKp");
  assert.deepEqual(getHeaders(ok, "Content-Type"), ["application/sdp"]);
  const busy = buildResponse(req, 486, { toTag: "uas1" });
  assert.deepEqual(getHeaders(busy, "Record-Route"), []);
  assert.equal(busy.reason, "Busy Here");
});

Deno.test("random ids: branch cookie, uniqueness, reason phrases", () => {
  const b = newBranch();
  assert.match(b, /^z9hG4bK[0-9a-f]{16}$/);
  assert.notEqual(newBranch(), b);
  assert.notEqual(newTag(), newTag());
  assert.match(newCallId("192.0.2.10"), /^[0-9a-f]{32}@192\.0\.2\.10$/);
  assert.equal(reasonPhrase(488), "Not Acceptable Here");
  assert.equal(reasonPhrase(499), "Client Error");
});
