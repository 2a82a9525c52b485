import assert from "node:assert/strict";
import {
  encodeSipMessage,
  getHeader,
  getHeaders,
  isKeepAlive,
  parseSipMessage,
  removeHeader,
  serializeSipMessage,
  setHeader,
  type SipMessage,
  type SipRequest,
  utf8Length,
} from "../telephony/sip/message.ts";
import { parseNameAddr, parseVia } from "../telephony/sip/address.ts";
import { parseSdp } from "../telephony/sip/sdp.ts";

const crlf = (...lines: string[]) => lines.join("\r\n");

/** Captured byte for byte from `sipp -sn uac 127.0.0.1:5099 -i 127.0.0.1 -p 5098 -m 1` (3.6.1). */
const SIPP_INVITE = crlf(
  "INVITE sip:service@127.0.0.1:5099 SIP/2.0",
  "Via: SIP/2.0/UDP 127.0.0.1:5098;branch=z9hG4bK-4386-1-0",
  "From: sipp <sip:sipp@127.0.0.1:5098>;tag=4386SIPpTag001",
  "To: service <sip:service@127.0.0.1:5099>",
  "Call-ID: 1-4386@127.0.0.1",
  "CSeq: 1 INVITE",
  "Contact: sip:sipp@127.0.0.1:5098",
  "Max-Forwards: 70",
  "Subject: Performance Test",
  "Content-Type: application/sdp",
  "Content-Length:   129",
  "",
  "v=0",
  "o=user1 53655765 2353687637 IN IP4 127.0.0.1",
  "s=-",
  "c=IN IP4 127.0.0.1",
  "t=0 0",
  "m=audio 6000 RTP/AVP 0",
  "a=rtpmap:0 PCMU/8000",
  "",
);

/** The 180 that `sipp -sn uas` sent back to that INVITE (captured). */
const SIPP_180 = crlf(
  "SIP/2.0 180 Ringing",
  "Via: SIP/2.0/UDP 127.0.0.1:5098;branch=z9hG4bK-4386-1-0",
  "From: sipp <sip:sipp@127.0.0.1:5098>;tag=4386SIPpTag001",
  "To: service <sip:service@127.0.0.1:5097>;tag=4412SIPpTag011",
  "Call-ID: 1-4386@127.0.0.1",
  "CSeq: 1 INVITE",
  "Contact: <sip:127.0.0.1:5097;transport=UDP>",
  "Content-Length: 0",
  "",
  "",
);

/** Modelled on RFC 4475 §3.1.1.1 "wsinv": folding, odd spacing, case, compact forms. */
const TORTUOUS = crlf(
  "INVITE sip:vivekg@chair-dnrc.example.com;unknownparam SIP/2.0",
  "TO :",
  " sip:vivekg@chair-dnrc.example.com ;   tag    = 1918181833n",
  'from   : "J Rosenberg \\\\\\""       <sip:jdrosen@example.com>',
  "  ;",
  "  tag = 98asjd8",
  "MaX-fOrWaRdS: 0068",
  "Call-ID: wsinv.ndaksdj@192.0.2.1",
  "Content-Length   : 150",
  "cseq: 0009",
  "  INVITE",
  "Via  : SIP  /   2.0",
  " /UDP",
  "    192.0.2.2;branch=390skdjuw",
  "s :",
  "NewFangledHeader:   newfangled value",
  " continued newfangled value",
  "UnknownHeaderWithUnusualValue: ;;,,;;,;",
  "Content-Type: application/sdp",
  "Route:",
  " <sip:services.example.com;lr;unknownwith=value;unknown-no-value>",
  "v:  SIP  / 2.0  / TCP     spindle.example.com   ;",
  "  branch  =   z9hG4bK9ikj8  ,",
  " SIP  /    2.0   / UDP  192.168.255.111   ; branch=",
  " z9hG4bK30239",
  'm:"Quoted string \\"\\"" <sip:jdrosen@example.com> ; newparam =',
  "\tnewvalue ;",
  "  secondparam ; q = 0.33",
  "",
  "v=0",
  "o=mhandley 29739 7272939 IN IP4 192.0.2.3",
  "s=-",
  "c=IN IP4 192.0.2.4",
  "t=0 0",
  "m=audio 49217 RTP/AVP 0 12",
  "m=video 3227 RTP/AVP 31",
  "a=rtpmap:31 LPC",
  "",
);

function parseOk(input: string | Uint8Array, stream = false): SipMessage {
  const r = parseSipMessage(input, { stream });
  if (!r.ok) throw new Error(`expected a message, got: ${r.reason}`);
  return r.message;
}

function parseFail(input: string | Uint8Array): string {
  const r = parseSipMessage(input);
  assert.equal(r.ok, false, "expected a parse failure");
  return r.ok ? "" : r.reason;
}

/** A minimal valid request with `extra` header lines and `body`. */
function request(extra: string[], body = "", method = "OPTIONS"): string {
  return crlf(
    `${method} sip:bob@example.com SIP/2.0`,
    "Via: SIP/2.0/UDP 192.0.2.1:5060;branch=z9hG4bKabc",
    "From: <sip:alice@example.com>;tag=1",
    "To: <sip:bob@example.com>",
    "Call-ID: c1@192.0.2.1",
    `CSeq: 7 ${method}`,
    ...extra,
    "",
    body,
  );
}

Deno.test("sipp INVITE: start line, headers, Content-Length with padding, SDP body", () => {
  const msg = parseOk(new TextEncoder().encode(SIPP_INVITE)) as SipRequest;
  assert.equal(msg.kind, "request");
  assert.equal(msg.method, "INVITE");
  assert.equal(msg.uri, "sip:service@127.0.0.1:5099");
  assert.equal(getHeader(msg, "call-id"), "1-4386@127.0.0.1");
  assert.equal(getHeader(msg, "Content-Length"), "129");
  assert.equal(msg.headers.length, 10);
  assert.equal(utf8Length(msg.body), 129);
  assert.ok(msg.body.startsWith("v=0\r\n") && msg.body.endsWith("PCMU/8000\r\n"));
  const via = parseVia(getHeader(msg, "v")!);
  assert.ok(via.ok);
  assert.equal(via.value.branch, "z9hG4bK-4386-1-0");
  assert.equal(via.value.port, 5098);
  const sdp = parseSdp(msg.body);
  assert.ok(sdp.ok);
  assert.equal(sdp.value.media[0].port, 6000);
});

Deno.test("sipp 180 Ringing response parses, To carries the UAS tag", () => {
  const msg = parseOk(SIPP_180);
  assert.equal(msg.kind, "response");
  if (msg.kind !== "response") return;
  assert.equal(msg.status, 180);
  assert.equal(msg.reason, "Ringing");
  assert.match(getHeader(msg, "To")!, /;tag=4412SIPpTag011$/);
  assert.equal(msg.body, "");
});

Deno.test("tortuous INVITE: folding, spacing, case, compact forms, multi-Via", () => {
  const msg = parseOk(TORTUOUS) as SipRequest;
  assert.equal(getHeader(msg, "To"), "sip:vivekg@chair-dnrc.example.com ;   tag    = 1918181833n");
  const from = parseNameAddr(getHeader(msg, "From")!);
  assert.ok(from.ok);
  assert.equal(from.value.displayName, 'J Rosenberg \\"');
  assert.equal(from.value.params.get("tag"), "98asjd8");
  const to = parseNameAddr(getHeader(msg, "To")!);
  assert.ok(to.ok && to.value.params.get("tag") === "1918181833n");
  assert.equal(getHeader(msg, "CSeq"), "0009 INVITE");
  assert.equal(getHeader(msg, "Subject"), "");
  assert.equal(getHeader(msg, "NewFangledHeader"), "newfangled value continued newfangled value");
  assert.equal(getHeader(msg, "UnknownHeaderWithUnusualValue"), ";;,,;;,;");
  const vias = getHeaders(msg, "Via").map((v) => parseVia(v));
  assert.deepEqual(vias.map((v) => v.ok && [v.value.transport, v.value.host, v.value.branch]), [
    ["UDP", "192.0.2.2", "390skdjuw"],
    ["TCP", "spindle.example.com", "z9hG4bK9ikj8"],
    ["UDP", "192.168.255.111", "z9hG4bK30239"],
  ]);
  assert.equal(getHeaders(msg, "Contact").length, 1);
  assert.equal(utf8Length(msg.body), 150);
  assert.ok(msg.body.endsWith("a=rtpmap:31 LPC\r\n"));
});

Deno.test("compact header forms expand to canonical names", () => {
  const text = crlf(
    "MESSAGE sip:bob@example.com SIP/2.0",
    "v: SIP/2.0/UDP 192.0.2.1;branch=z9hG4bK1",
    "f: <sip:a@example.com>;tag=x",
    "t: <sip:bob@example.com>",
    "i: abc@host",
    "CSEQ: 1 MESSAGE",
    "m: <sip:a@192.0.2.1>",
    "c: text/plain",
    "e: gzip",
    "k: timer, 100rel",
    "s: hi",
    "l: 5",
    "",
    "hello",
  );
  const msg = parseOk(text);
  assert.deepEqual(msg.headers.map((h) => h.name), [
    "Via",
    "From",
    "To",
    "Call-ID",
    "CSeq",
    "Contact",
    "Content-Type",
    "Content-Encoding",
    "Supported",
    "Supported",
    "Subject",
    "Content-Length",
  ]);
  assert.deepEqual(getHeaders(msg, "supported"), ["timer", "100rel"]);
  assert.equal(getHeader(msg, "CALL-ID"), "abc@host");
  assert.equal(msg.body, "hello");
  // The serializer writes long forms only.
  assert.doesNotMatch(serializeSipMessage(msg), /^[a-z]:/m);
});

Deno.test("Via: many in one line, across lines, order kept; quoted commas not split", () => {
  const msg = parseOk(request([
    "Via: SIP/2.0/UDP p1.example.com;branch=z9hG4bKp1, SIP/2.0/TCP p2.example.com:5070;branch=z9hG4bKp2",
    "Via: SIP/2.0/UDP p3.example.com;branch=z9hG4bKp3;received=203.0.113.9;rport=61000",
    'Contact: "Smith, John" <sip:john@192.0.2.7>, <sip:jj@192.0.2.8;x=a,b>;expires=60',
    "Route: <sip:edge1.example.com;lr>,<sip:edge2.example.com;lr>",
    "Date: Sat, 13 Nov 2010 23:29:00 GMT",
    'WWW-Authenticate: Digest realm="a, b", nonce="n"',
  ]));
  const hosts = getHeaders(msg, "Via").map((v) => {
    const p = parseVia(v);
    return p.ok ? p.value.host : "?";
  });
  assert.deepEqual(hosts, ["192.0.2.1", "p1.example.com", "p2.example.com", "p3.example.com"]);
  const third = parseVia(getHeaders(msg, "Via")[3]);
  assert.ok(third.ok);
  assert.equal(third.value.rport, 61000);
  assert.equal(third.value.received, "203.0.113.9");
  assert.deepEqual(getHeaders(msg, "Contact"), [
    '"Smith, John" <sip:john@192.0.2.7>',
    "<sip:jj@192.0.2.8;x=a,b>;expires=60",
  ]);
  assert.equal(getHeaders(msg, "Route").length, 2);
  assert.equal(getHeader(msg, "Date"), "Sat, 13 Nov 2010 23:29:00 GMT");
  assert.equal(getHeaders(msg, "WWW-Authenticate").length, 1);
});

Deno.test("body framing: cut to Content-Length; missing Content-Length on UDP = rest", () => {
  const cut = parseOk(request(["Content-Length: 4"], "abcdEXTRA"));
  assert.equal(cut.body, "abcd");
  const rest = parseOk(request([], "all of it\r\n"));
  assert.equal(rest.body, "all of it\r\n");
  const multibyte = parseOk(request(["Content-Length: 5"], "héllo"));
  assert.equal(multibyte.body, "héll", "Content-Length counts bytes, not characters");
  assert.match(parseFail(request(["Content-Length: 50"], "short")), /shorter than Content-Length/);
});

Deno.test("stream framing: incomplete, consumed, two messages back to back", () => {
  const one = request(["Content-Length: 3"], "abc");
  const r1 = parseSipMessage(one.slice(0, 40), { stream: true });
  assert.ok(!r1.ok && r1.incomplete);
  const r2 = parseSipMessage(one.slice(0, one.length - 1), { stream: true });
  assert.ok(!r2.ok && r2.incomplete);
  const bytes = new TextEncoder().encode(one + one);
  const first = parseSipMessage(bytes, { stream: true });
  assert.ok(first.ok);
  assert.equal(first.consumed, bytes.length / 2);
  const second = parseSipMessage(bytes.subarray(first.consumed), { stream: true });
  assert.ok(second.ok && second.message.body === "abc");
  const noLength = parseSipMessage(request([]), { stream: true });
  assert.ok(!noLength.ok && /missing Content-Length/.test(noLength.reason));
});

Deno.test("leading CRLFs are skipped; CRLF-only datagrams are keep-alives", () => {
  const msg = parseOk("\r\n\r\n" + request([]));
  assert.equal(msg.kind, "request");
  const ka = parseSipMessage("\r\n\r\n");
  assert.ok(!ka.ok && ka.keepAlive);
  assert.ok(isKeepAlive(new TextEncoder().encode("\r\n")));
  assert.ok(!isKeepAlive(new TextEncoder().encode("\r\nX")));
});

Deno.test("bare LF line endings are tolerated", () => {
  const msg = parseOk(request(["Content-Length: 2"], "ok").replaceAll("\r\n", "\n"));
  assert.equal(getHeader(msg, "Call-ID"), "c1@192.0.2.1");
  assert.equal(msg.body, "ok");
});

Deno.test("malformed messages give a reason and never throw", () => {
  const cases: [string, RegExp][] = [
    ["", /keep-alive/],
    ["hello world\r\n\r\n", /bad start line/],
    [request([]).replace("SIP/2.0\r\n", "SIP/7.0\r\n"), /unsupported SIP version/],
    [request([]).replace("OPTIONS sip:", "OPTIONS "), /bad Request-URI/],
    [request(["NoColonHere"]), /without ':'/],
    [request(["Bad Name: x"]), /bad header name/],
    [request([]).replace("Call-ID: c1@192.0.2.1\r\n", ""), /missing Call-ID/],
    [request([]).replace("CSeq: 7 OPTIONS", "CSeq: 7 INVITE"), /does not match/],
    [request([]).replace("CSeq: 7", "CSeq: 36893488147419103232"), /bad CSeq/],
    [request(["Content-Length: -999"]), /bad Content-Length/],
    [request(["Content-Length: 1", "l: 2"], "ab"), /conflicting Content-Length/],
    [request(['Via: SIP/2.0/UDP "oops;branch=z9hG4bK2']), /unbalanced/],
    [request([]).replace("To: <sip:bob@example.com>", "To: <sip:bob@example.com"), /bad To/],
    [request(["Max-Forwards: seventy"]), /bad Max-Forwards/],
    ["SIP/2.0 099 Too Low\r\n\r\n", /out of range/],
    [request([]).replace("\r\n\r\n", "\r\n"), /no blank line/],
    [" continuation first\r\n\r\n", /bad start line|continuation/],
  ];
  for (const [input, reason] of cases) {
    assert.match(parseFail(input), reason, JSON.stringify(input));
  }
  assert.match(parseFail(new Uint8Array(70000)), /too large/);
});

Deno.test("fuzz: random and mutated datagrams never throw", () => {
  let seed = 12345;
  const rnd = () => (seed = (seed * 1103515245 + 12345) & 0x7fffffff) / 0x7fffffff;
  const base = new TextEncoder().encode(SIPP_INVITE);
  let parsed = 0;
  for (let i = 0; i < 3000; i++) {
    const buf = i % 3 === 0
      ? Uint8Array.from({ length: Math.floor(rnd() * 300) }, () => Math.floor(rnd() * 256))
      : base.map((b) => (rnd() < 0.01 ? Math.floor(rnd() * 256) : b));
    const r = parseSipMessage(buf);
    assert.equal(typeof r.ok, "boolean");
    if (r.ok) parsed++;
  }
  assert.ok(parsed > 0, "some lightly mutated copies should still parse");
});

Deno.test("serializer: CRLF wire text, Content-Length in UTF-8 bytes, round trip", () => {
  const msg = parseOk(SIPP_INVITE);
  const wire = serializeSipMessage(msg);
  assert.doesNotMatch(wire.replaceAll("\r\n", ""), /\n/);
  assert.match(wire, /\r\nContent-Length: 129\r\n\r\nv=0/);
  assert.deepEqual(parseOk(wire), msg);
  const res: SipMessage = {
    kind: "response",
    status: 200,
    reason: "OK",
    headers: [{ name: "Content-Length", value: "999" }, { name: "l", value: "1" }],
    body: "€uro",
  };
  const bytes = encodeSipMessage(res);
  const text = new TextDecoder().decode(bytes);
  assert.equal(text, "SIP/2.0 200 OK\r\nContent-Length: 6\r\n\r\n€uro");
  assert.equal(bytes.length - text.indexOf("\r\n\r\n") - 4, 6);
});

Deno.test("setHeader / removeHeader work across compact and long names", () => {
  const msg = parseOk(request(["k: a, b"]));
  setHeader(msg, "Supported", "timer");
  assert.deepEqual(getHeaders(msg, "k"), ["timer"]);
  removeHeader(msg, "supported");
  assert.deepEqual(getHeaders(msg, "Supported"), []);
  setHeader(msg, "X-New", "1");
  assert.equal(msg.headers.at(-1)?.name, "X-New");
});
