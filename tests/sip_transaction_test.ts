/**
 * The SIP transaction layer with an in-memory wire and short timers: retransmission schedules
 * (A, E, G, 2xx), timeouts (B, F, H, L), ACK for non-2xx, absorbed request retransmissions,
 * CANCEL matching and stray responses.
 */

import assert from "node:assert/strict";
import { buildResponse } from "../telephony/sip/build.ts";
import {
  getHeader,
  parseSipMessage,
  type SipMessage,
  type SipRequest,
  type SipResponse,
} from "../telephony/sip/message.ts";
import { type ServerTransaction, TransactionLayer } from "../telephony/sip/transaction.ts";
import type { UdpAddress } from "../telephony/sip/udp.ts";

const PEER: UdpAddress = { hostname: "127.0.0.1", port: 5099 };
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** A layer whose wire is an array, and whose TU records requests. */
function harness(timers = { T1: 10, T2: 40, T4: 50 }) {
  const sent: { msg: SipMessage; to: UdpAddress }[] = [];
  const requests: { req: SipRequest; txn: ServerTransaction | undefined }[] = [];
  const layer = new TransactionLayer(
    (msg, to) => sent.push({ msg, to }),
    (req, txn) => requests.push({ req, txn }),
    { timers },
  );
  return { layer, sent, requests };
}

function parse(text: string): SipMessage {
  const r = parseSipMessage(text.replace(/\n/g, "\r\n"));
  if (!r.ok) throw new Error(r.reason);
  return r.message;
}

function request(method: string, branch: string, cseq = 1, extra = ""): SipRequest {
  return parse(
    `${method} sip:bob@127.0.0.1 SIP/2.0
Via: SIP/2.0/UDP 127.0.0.1:5099;branch=${branch}
From: <sip:alice@127.0.0.1>;tag=ft
To: <sip:bob@127.0.0.1>${extra}
Call-ID: call-1@test
CSeq: ${cseq} ${method}
Max-Forwards: 70
Content-Length: 0

`,
  ) as SipRequest;
}

function responseTo(req: SipRequest, status: number, toTag = "tt"): SipResponse {
  return buildResponse(req, status, { toTag });
}

const statuses = (sent: { msg: SipMessage }[]) =>
  sent.map((s) => s.msg.kind === "response" ? String(s.msg.status) : s.msg.method);

Deno.test("non-INVITE client: Timer E doubles up to T2, Timer F gives a local 408", async () => {
  const { layer, sent } = harness();
  const txn = layer.request(request("OPTIONS", "z9hG4bKe1"), PEER);
  const res = await txn.response; // F = 64*T1 = 640 ms
  assert.equal(res.status, 408);
  assert.equal(txn.timedOut, true);
  assert.equal(txn.state, "terminated");
  // Sends at 0, 10, 30, 70, 110, ... (capped at T2 = 40): about 17 in 640 ms.
  assert.ok(sent.length >= 8 && sent.length <= 18, `sent ${sent.length}`);
  assert.ok(sent.every((s) => s.msg.kind === "request" && s.msg.method === "OPTIONS"));
  assert.equal(layer.counters.timeouts, 1);
  assert.equal(layer.size, 0);
  layer.close();
});

Deno.test("non-INVITE client: a provisional keeps retransmits going at T2; the final resolves it", async () => {
  const { layer, sent } = harness({ T1: 10, T2: 100, T4: 20 });
  const req = request("BYE", "z9hG4bKe2");
  const txn = layer.request(req, PEER);
  layer.receive(responseTo(req, 100), PEER);
  assert.equal(txn.state, "proceeding");
  const before = sent.length;
  await sleep(250);
  const during = sent.length - before;
  assert.ok(during >= 1 && during <= 3, `retransmits at T2: ${during}`);
  layer.receive(responseTo(req, 200), PEER);
  assert.equal((await txn.response).status, 200);
  assert.equal(txn.state, "completed");
  // A copy of the final in Completed is absorbed quietly; Timer K (T4) then ends it.
  layer.receive(responseTo(req, 200), PEER);
  await sleep(60);
  assert.equal(txn.state, "terminated");
  assert.equal(layer.size, 0);
  layer.close();
});

Deno.test("INVITE client: Timer A doubles until a provisional, then stops", async () => {
  const { layer, sent } = harness();
  const req = request("INVITE", "z9hG4bKa1");
  const txn = layer.request(req, PEER);
  await sleep(80); // sends at 0, 10, 30, 70
  const count = sent.length;
  assert.ok(count >= 3 && count <= 5, `INVITE sent ${count} times`);
  layer.receive(responseTo(req, 180), PEER);
  assert.equal(txn.provisionalSeen, true);
  await sleep(150);
  assert.equal(sent.length, count, "no retransmission after a provisional");
  // An INVITE in Proceeding does not time out on Timer B.
  await sleep(600);
  assert.equal(txn.state, "proceeding");
  layer.close();
  assert.equal((await txn.response).status, 408);
});

Deno.test("INVITE client: Timer B times out an unanswered INVITE", async () => {
  const { layer } = harness({ T1: 5, T2: 40, T4: 50 });
  const txn = layer.request(request("INVITE", "z9hG4bKb1"), PEER);
  const res = await txn.response; // 320 ms
  assert.equal(res.status, 408);
  assert.equal(txn.timedOut, true);
  layer.close();
});

Deno.test("INVITE client: a non-2xx final is ACKed on the INVITE's branch, and re-ACKed when repeated", async () => {
  const { layer, sent } = harness();
  const req = request("INVITE", "z9hG4bKn1");
  const txn = layer.request(req, PEER);
  layer.receive(responseTo(req, 486, "busy"), PEER);
  assert.equal((await txn.response).status, 486);
  const ack = sent.at(-1)!.msg as SipRequest;
  assert.equal(ack.method, "ACK");
  assert.equal(ack.uri, req.uri);
  assert.equal(getHeader(ack, "Via"), getHeader(req, "Via"));
  assert.equal(getHeader(ack, "CSeq"), "1 ACK");
  assert.match(getHeader(ack, "To")!, /tag=busy/);
  layer.receive(responseTo(req, 486, "busy"), PEER);
  assert.deepEqual(statuses(sent).filter((s) => s === "ACK").length, 2);
  assert.equal(layer.counters.acksForNon2xx, 1);
  layer.close();
});

Deno.test("INVITE client: a 2xx moves to Accepted and its retransmissions reach the TU", async () => {
  const { layer } = harness();
  const req = request("INVITE", "z9hG4bKo1");
  let again = 0;
  const txn = layer.request(req, PEER, { on2xxRetransmit: () => again++ });
  layer.receive(responseTo(req, 200), PEER);
  assert.equal((await txn.response).status, 200);
  assert.equal(txn.state, "accepted");
  layer.receive(responseTo(req, 200), PEER);
  layer.receive(responseTo(req, 200), PEER);
  assert.equal(again, 2);
  layer.close();
});

Deno.test("INVITE server: retransmitted INVITEs are absorbed (TU sees one) and get the last provisional", () => {
  const { layer, sent, requests } = harness();
  const invite = request("INVITE", "z9hG4bKs1");
  layer.receive(invite, PEER);
  layer.receive(invite, PEER);
  assert.equal(requests.length, 1);
  assert.equal(sent.length, 0, "nothing to re-send before the TU responded");
  const txn = requests[0].txn!;
  txn.respond(responseTo(invite, 100));
  txn.respond(responseTo(invite, 180));
  layer.receive(invite, PEER);
  layer.receive(invite, PEER);
  assert.deepEqual(statuses(sent), ["100", "180", "180", "180"]);
  assert.equal(requests.length, 1);
  assert.equal(layer.counters.absorbed, 3);
  assert.deepEqual(sent[0].to, PEER);
  layer.close();
});

Deno.test("INVITE server: the 2xx is re-sent until the ACK (new branch, matched by Call-ID/CSeq)", async () => {
  const { layer, sent, requests } = harness({ T1: 10, T2: 40, T4: 50 });
  const invite = request("INVITE", "z9hG4bKs2");
  layer.receive(invite, PEER);
  const txn = requests[0].txn!;
  let acked = 0;
  txn.onAck = () => acked++;
  txn.respond(responseTo(invite, 200));
  await sleep(100); // re-sent after 10, 30, 70 ms
  const okCount = statuses(sent).filter((s) => s === "200").length;
  assert.ok(okCount >= 3, `200 sent ${okCount} times`);
  layer.receive(request("ACK", "z9hG4bKack", 1, ";tag=tt"), PEER);
  assert.equal(acked, 1);
  assert.equal(requests.length, 1, "the ACK of a 2xx is consumed by its transaction");
  const after = sent.length;
  await sleep(100);
  assert.equal(sent.length, after, "no 200 after the ACK");
  layer.close();
});

Deno.test("INVITE server: no ACK for the 2xx reports a timeout after 64*T1", async () => {
  const { layer, requests } = harness({ T1: 5, T2: 40, T4: 50 });
  const invite = request("INVITE", "z9hG4bKs3");
  layer.receive(invite, PEER);
  const txn = requests[0].txn!;
  const reason = new Promise<string>((resolve) => (txn.onTimeout = resolve));
  txn.respond(responseTo(invite, 200));
  assert.equal(await reason, "no ACK for 2xx");
  assert.equal(txn.state, "terminated");
  assert.equal(layer.counters.timeouts, 1);
  layer.close();
});

Deno.test("INVITE server: a non-2xx is re-sent on Timer G until the ACK on the same branch", async () => {
  const { layer, sent, requests } = harness({ T1: 10, T2: 40, T4: 50 });
  const invite = request("INVITE", "z9hG4bKs4");
  layer.receive(invite, PEER);
  const txn = requests[0].txn!;
  txn.respond(responseTo(invite, 486));
  await sleep(60);
  assert.ok(statuses(sent).filter((s) => s === "486").length >= 3);
  layer.receive(request("ACK", "z9hG4bKs4", 1, ";tag=tt"), PEER);
  assert.equal(txn.state, "confirmed");
  assert.equal(requests.length, 1, "the ACK of a non-2xx never reaches the TU");
  const after = sent.length;
  await sleep(60);
  assert.equal(sent.length, after);
  assert.equal(txn.state, "terminated"); // Timer I = T4
  layer.close();
});

Deno.test("non-INVITE server: retransmissions re-send the final response until Timer J", async () => {
  const { layer, sent, requests } = harness({ T1: 2, T2: 40, T4: 50 });
  const bye = request("BYE", "z9hG4bKs5", 2, ";tag=tt");
  layer.receive(bye, PEER);
  requests[0].txn!.respond(responseTo(bye, 200));
  layer.receive(bye, PEER);
  assert.deepEqual(statuses(sent), ["200", "200"]);
  assert.equal(requests.length, 1);
  await sleep(200); // J = 64*T1 = 128 ms
  assert.equal(requests[0].txn!.state, "terminated");
  layer.receive(bye, PEER); // now a new transaction
  assert.equal(requests.length, 2);
  layer.close();
});

Deno.test("CANCEL finds its INVITE server transaction; stray responses are counted", () => {
  const { layer, requests } = harness();
  const invite = request("INVITE", "z9hG4bKc1");
  layer.receive(invite, PEER);
  const cancel = request("CANCEL", "z9hG4bKc1");
  layer.receive(cancel, PEER);
  assert.equal(requests.length, 2);
  assert.equal(layer.matchingInvite(requests[1].req), requests[0].txn);
  assert.equal(layer.matchingInvite(request("CANCEL", "z9hG4bKother")), undefined);
  layer.receive(responseTo(request("OPTIONS", "z9hG4bKnobody"), 200), PEER);
  assert.equal(layer.counters.strayResponses, 1);
  layer.close();
});

/** `request()` with the Request-URI, From tag and Call-ID given (for RFC 2543 matching). */
function oldStyle(method: string, branch: string | undefined, opts: {
  ruri?: string;
  fromTag?: string;
  callId?: string;
  cseq?: number;
  toTag?: string;
} = {}): SipRequest {
  const via = `SIP/2.0/UDP 127.0.0.1:5099${branch === undefined ? "" : ";branch=" + branch}`;
  return parse(
    `${method} ${opts.ruri ?? "sip:bob@127.0.0.1"} SIP/2.0
Via: ${via}
From: <sip:alice@127.0.0.1>;tag=${opts.fromTag ?? "ft"}
To: <sip:bob@127.0.0.1>${opts.toTag === undefined ? "" : ";tag=" + opts.toTag}
Call-ID: ${opts.callId ?? "old-1@test"}
CSeq: ${opts.cseq ?? 1} ${method}
Content-Length: 0

`,
  ) as SipRequest;
}

Deno.test("§17.2.3: requests reusing an old-style branch are separate transactions", () => {
  const { layer, requests } = harness();
  // Same branch without the cookie, different Call-ID and CSeq: two requests, two TU calls.
  layer.receive(oldStyle("OPTIONS", "390skdjuw", { callId: "a@x", cseq: 1 }), PEER);
  layer.receive(oldStyle("OPTIONS", "390skdjuw", { callId: "b@x", cseq: 2 }), PEER);
  assert.equal(requests.length, 2);
  // A true retransmission (every matched field equal) is absorbed.
  layer.receive(oldStyle("OPTIONS", "390skdjuw", { callId: "a@x", cseq: 1 }), PEER);
  assert.equal(requests.length, 2);
  assert.equal(layer.counters.absorbed, 1);
  // No branch at all (RFC 2543): the Request-URI and From tag take part.
  layer.receive(oldStyle("OPTIONS", undefined, { ruri: "sip:one@127.0.0.1" }), PEER);
  layer.receive(oldStyle("OPTIONS", undefined, { ruri: "sip:two@127.0.0.1" }), PEER);
  layer.receive(oldStyle("OPTIONS", undefined, { ruri: "sip:two@127.0.0.1", fromTag: "f2" }), PEER);
  assert.equal(requests.length, 5);
  layer.close();
});

Deno.test("§17.2.3: the ACK of an old-style INVITE's non-2xx matches by the response's To tag", async () => {
  const { layer, sent, requests } = harness({ T1: 10, T2: 40, T4: 50 });
  const invite = oldStyle("INVITE", undefined);
  layer.receive(invite, PEER);
  const txn = requests[0].txn!;
  txn.respond(responseTo(invite, 486, "uas-tag"));
  // An ACK carrying another To tag is not for this transaction: it reaches the TU unmatched.
  layer.receive(oldStyle("ACK", undefined, { toTag: "other" }), PEER);
  assert.equal(requests.length, 2);
  assert.equal(requests[1].txn, undefined);
  layer.receive(oldStyle("ACK", undefined, { toTag: "UAS-TAG" }), PEER);
  assert.equal(txn.state, "confirmed", "tags compare case-insensitively");
  assert.equal(requests.length, 2);
  const after = sent.length;
  await sleep(40);
  assert.equal(sent.length, after, "no 486 after the ACK");
  layer.close();
});

Deno.test("branches compare case-insensitively; a merged request is flagged (§8.2.2.2)", () => {
  const { layer, requests } = harness();
  layer.receive(request("INVITE", "z9hG4bKCase"), PEER);
  layer.receive(request("INVITE", "z9hG4bKcase"), PEER);
  assert.equal(requests.length, 1, "a retransmission with the branch in another case");
  // Same From tag, Call-ID and CSeq, no To tag, another branch: the request was merged.
  layer.receive(request("INVITE", "z9hG4bKfork"), PEER);
  assert.equal(requests.length, 2);
  assert.equal(layer.isMerged(requests[0].txn!), false);
  assert.equal(layer.isMerged(requests[1].txn!), true);
  // In-dialog requests (with a To tag) are never merged.
  layer.receive(request("BYE", "z9hG4bKb1", 2, ";tag=x"), PEER);
  layer.receive(request("BYE", "z9hG4bKb2", 2, ";tag=x"), PEER);
  assert.equal(layer.isMerged(requests[3].txn!), false);
  layer.close();
});
