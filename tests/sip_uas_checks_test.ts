/**
 * RFC 3261 §8.2 request checks as a pure function (483, 405/501, 416, 482, 420, 415, 406), the
 * multipart SDP extraction they rely on, and the 400/505/501 answer to a request that did not
 * parse.
 */

import assert from "node:assert/strict";
import {
  getHeader,
  parseSipMessage,
  type SipParseFailure,
  type SipRequest,
} from "../telephony/sip/mod.ts";
import { multipartParts, sessionDescription } from "../telephony/sip/body.ts";
import { answerMalformed, checkRequest } from "../telephony/sip/uas_checks.ts";

const SDP = "v=0\r\no=- 1 1 IN IP4 192.0.2.1\r\ns=-\r\nc=IN IP4 192.0.2.1\r\nt=0 0\r\n" +
  "m=audio 4000 RTP/AVP 0\r\n";

function req(method: string, extra: string[] = [], body = "", uri = "sip:a@192.0.2.9"): SipRequest {
  const text = [
    `${method} ${uri} SIP/2.0`,
    "Via: SIP/2.0/UDP 192.0.2.1;branch=z9hG4bK1",
    "From: <sip:b@192.0.2.1>;tag=1",
    "To: <sip:a@192.0.2.9>",
    "Call-ID: c1",
    `CSeq: 1 ${method}`,
    ...extra,
    `Content-Length: ${new TextEncoder().encode(body).length}`,
    "",
    body,
  ].join("\r\n");
  const r = parseSipMessage(text);
  if (!r.ok) throw new Error(r.reason);
  return r.message as SipRequest;
}

const check = (r: SipRequest, merged = false) => checkRequest(r, { merged });

Deno.test("a well-formed INVITE or OPTIONS passes", () => {
  assert.equal(check(req("INVITE", ["Content-Type: application/sdp"], SDP)), undefined);
  assert.equal(check(req("OPTIONS", ["Max-Forwards: 0"])), undefined, "OPTIONS at MF 0");
  assert.equal(check(req("ACK", ["Require: foo", "Max-Forwards: 0"])), undefined, "ACK: never");
});

Deno.test("483, 405/501 with Allow, 416, 482 in RFC order", () => {
  assert.equal(check(req("INVITE", ["Max-Forwards: 0"]))?.status, 483);
  const subscribe = check(req("SUBSCRIBE"))!;
  assert.equal(subscribe.status, 405);
  assert.match(subscribe.headers.find((h) => h.name === "Allow")!.value, /INVITE, ACK/);
  assert.equal(check(req("NEWMETHOD"))?.status, 501);
  assert.equal(check(req("OPTIONS", [], "", "nobodyKnowsThisScheme:opaque"))?.status, 416);
  assert.equal(check(req("OPTIONS", [], "", "soap.beep://192.0.2.103:3002"))?.status, 416);
  assert.equal(check(req("OPTIONS", [], "", "tel:+15551234567")), undefined);
  const merged = check(req("INVITE", ["Content-Type: application/sdp"], SDP), true)!;
  assert.equal(merged.status, 482);
});

Deno.test("420 lists the unknown Require options in Unsupported; CANCEL is exempt", () => {
  const r = check(req("OPTIONS", ["Require: nothingSupportsThis, nothingSupportsThisEither"]))!;
  assert.equal(r.status, 420);
  assert.deepEqual(r.headers, [{
    name: "Unsupported",
    value: "nothingSupportsThis, nothingSupportsThisEither",
  }]);
  assert.equal(check(req("CANCEL", ["Require: foo"])), undefined);
  assert.equal(check(req("OPTIONS", ["Proxy-Require: foo"])), undefined, "a UAS ignores it");
});

Deno.test("415 with Accept for a body of another type; optional bodies and INFO keys pass", () => {
  const r = check(req("INVITE", ["Content-Type: application/unknownformat"], "<audio/>"))!;
  assert.equal(r.status, 415);
  assert.deepEqual(r.headers, [{ name: "Accept", value: "application/sdp" }]);
  const gz = check(req("INVITE", ["Content-Type: application/sdp", "Content-Encoding: gzip"], SDP));
  assert.equal(gz?.status, 415);
  assert.deepEqual(gz?.headers, [{ name: "Accept-Encoding", value: "identity" }]);
  const optional = ["Content-Type: text/plain", "Content-Disposition: render;handling=optional"];
  assert.equal(check(req("BYE", optional, "bye")), undefined);
  const info = ["Content-Type: application/dtmf-relay"];
  assert.equal(check(req("INFO", info, "Signal=5\r\nDuration=160\r\n")), undefined);
  assert.equal(check(req("INFO", ["Content-Type: text/plain"], "x"))?.status, 415);
});

Deno.test("multipart/mixed: the SDP part is used; without one the INVITE gets 415", () => {
  const body = [
    "--b1",
    "Content-Type: application/isup;version=itu-t92+",
    "",
    "ISUP-BYTES",
    "--b1",
    "Content-Type: application/sdp",
    "",
    SDP,
    "--b1--",
    "",
  ].join("\r\n");
  const type = ["Content-Type: multipart/mixed;boundary=b1"];
  const invite = req("INVITE", type, body);
  assert.equal(check(invite), undefined);
  assert.equal(sessionDescription(invite), SDP);
  assert.deepEqual(multipartParts("multipart/mixed;boundary=b1", body)?.map((p) => p.type), [
    "application/isup",
    "application/sdp",
  ]);
  const noSdp = req("INVITE", type, "--b1\r\nContent-Type: text/plain\r\n\r\nhi\r\n--b1--\r\n");
  assert.equal(check(noSdp)?.status, 415);
});

Deno.test("406 when Accept rules out SDP on an INVITE", () => {
  const sdp = ["Content-Type: application/sdp"];
  assert.equal(check(req("INVITE", [...sdp, "Accept: text/nobodyKnowsThis"], SDP))?.status, 406);
  assert.equal(check(req("INVITE", [...sdp, "Accept: text/plain, application/*"], SDP)), undefined);
});

function failure(text: string): SipParseFailure {
  const r = parseSipMessage(text.replace(/\n/g, "\r\n"));
  assert.equal(r.ok, false, "expected a parse failure");
  return r as SipParseFailure;
}

const HEAD = "Via: SIP/2.0/UDP 192.0.2.1;branch=z9hG4bK1\nFrom: <sip:b@x>;tag=1\nCall-ID: c\n";

Deno.test("a malformed request that can be answered gets 400 with the reason; 505; 501", () => {
  const missingTo = answerMalformed(
    failure(`OPTIONS sip:a@x SIP/2.0\n${HEAD}CSeq: 1 OPTIONS\n\n`),
  )!;
  assert.equal(missingTo.status, 400);
  assert.equal(missingTo.reason, "Bad Request (missing To)");
  assert.equal(getHeader(missingTo, "To"), undefined, "what the request lacks stays absent");
  assert.equal(getHeader(missingTo, "CSeq"), "1 OPTIONS");
  const spaces = failure(`OPTIONS  sip:a@x  SIP/2.0\n${HEAD}To: <sip:a@x>\nCSeq: 1 OPTIONS\n\n`);
  assert.equal(answerMalformed(spaces)?.status, 400);
  const v7 = failure(`OPTIONS sip:a@x SIP/7.0\n${HEAD}To: <sip:a@x>\nCSeq: 1 OPTIONS\n\n`);
  assert.equal(answerMalformed(v7)?.status, 505);
  const mismatch = failure(`NEWMETHOD sip:a@x SIP/2.0\n${HEAD}To: <sip:a@x>\nCSeq: 8 INVITE\n\n`);
  assert.equal(answerMalformed(mismatch)?.status, 501);
  // Not answered: an ACK, a request without Via, a response, garbage.
  assert.equal(answerMalformed(failure(`ACK sip:a@x SIP/2.0\n${HEAD}CSeq: 1 ACK\n\n`)), undefined);
  assert.equal(answerMalformed(failure("OPTIONS sip:a@x SIP/2.0\nCSeq: 1 OPTIONS\n\n")), undefined);
  assert.equal(answerMalformed(failure("SIP/2.0 4294967301 big\n" + HEAD + "\n")), undefined);
  assert.equal(answerMalformed(failure("HELLO\n\n")), undefined);
});
