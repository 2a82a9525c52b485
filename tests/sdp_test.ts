import assert from "node:assert/strict";
import {
  acceptAnswer,
  buildAnswer,
  buildOffer,
  formatSdp,
  nextSessionVersion,
  parseSdp,
  type SdpSession,
} from "../telephony/sip/sdp.ts";

const lines = (...l: string[]) => l.join("\r\n") + "\r\n";

/** The reference notes' G.711 offer (sip-rtp.md §5). */
const REFERENCE_OFFER = lines(
  "v=0",
  "o=- 3894561230 3894561230 IN IP4 192.0.2.10",
  "s=-",
  "c=IN IP4 192.0.2.10",
  "t=0 0",
  "m=audio 40000 RTP/AVP 0 8 101",
  "a=rtpmap:0 PCMU/8000",
  "a=rtpmap:8 PCMA/8000",
  "a=rtpmap:101 telephone-event/8000",
  "a=fmtp:101 0-16",
  "a=ptime:20",
  "a=sendrecv",
);

function parse(text: string): SdpSession {
  const r = parseSdp(text);
  if (!r.ok) throw new Error(r.reason);
  return r.value;
}

const LOCAL = { address: "198.51.100.7", port: 16000, sessionId: "42", sessionVersion: "42" };

Deno.test("parse: c=, m=, rtpmap, fmtp, ptime, direction", () => {
  const s = parse(REFERENCE_OFFER);
  assert.equal(s.origin.sessionId, "3894561230");
  assert.equal(s.connection?.address, "192.0.2.10");
  const m = s.media[0];
  assert.equal(m.media, "audio");
  assert.equal(m.port, 40000);
  assert.equal(m.proto, "RTP/AVP");
  assert.deepEqual(m.formats, ["0", "8", "101"]);
  assert.deepEqual(m.rtpmaps.map((r) => [r.payloadType, r.encoding, r.clockRate]), [
    [0, "PCMU", 8000],
    [8, "PCMA", 8000],
    [101, "telephone-event", 8000],
  ]);
  assert.equal(m.fmtp.get(101), "0-16");
  assert.equal(m.ptime, 20);
  assert.equal(m.direction, "sendrecv");
});

Deno.test("parse: media-level c= overrides, session direction, unknown lines kept or skipped", () => {
  const s = parse(lines(
    "v=0",
    "o=bob 1 2 IN IP4 203.0.113.1",
    "s=call",
    "i=info",
    "c=IN IP4 203.0.113.1/127",
    "b=AS:64",
    "t=0 0",
    "r=7d 1h 0 25h",
    "a=recvonly",
    "a=tool:x",
    "m=audio 5004/2 RTP/AVP 8",
    "c=IN IP4 203.0.113.2",
    "a=rtpmap:8 PCMA/8000",
    "a=rtpmap:96 junk",
    "a=maxptime:40",
  ));
  assert.equal(s.connection?.address, "203.0.113.1");
  assert.equal(s.direction, "recvonly");
  assert.deepEqual(s.attributes, [{ name: "tool", value: "x" }]);
  assert.equal(s.media[0].connection?.address, "203.0.113.2");
  assert.equal(s.media[0].portCount, 2);
  assert.equal(s.media[0].rtpmaps.length, 1, "a malformed rtpmap is not used as a codec");
  assert.ok(s.media[0].attributes.some((a) => a.name === "maxptime" && a.value === "40"));
  assert.deepEqual(s.bandwidth, ["AS:64"]);
  assert.deepEqual(parse(formatSdp(s)), s, "format then parse round-trips");
});

Deno.test("parse: malformed SDP gives a reason", () => {
  for (
    const [text, reason] of [
      ["", /v=0/],
      ["v=1\r\n", /v=0/],
      [lines("v=0", "s=-"), /o= line/],
      [lines("v=0", "o=- x 1 IN IP4 1.2.3.4"), /bad o=/],
      [lines("v=0", "o=- 1 1 IN IP4 1.2.3.4", "m=audio port RTP/AVP 0"), /bad m=/],
      [lines("v=0", "o=- 1 1 IN IP4 1.2.3.4", "c=IN IP4"), /bad c=/],
      [lines("v=0", "garbage"), /bad SDP line/],
    ] as [string, RegExp][]
  ) {
    const r = parseSdp(text);
    assert.ok(!r.ok, text);
    assert.match(r.reason, reason);
  }
});

Deno.test("buildOffer: PCMU/0, PCMA/8, telephone-event/101 0-16, ptime 20, sendrecv", () => {
  const text = formatSdp(
    buildOffer({ address: "192.0.2.10", port: 40000, sessionId: "3894561230" }),
  );
  assert.equal(text, REFERENCE_OFFER);
  const noDtmf = buildOffer({
    address: "2001:db8::5",
    port: 16002,
    codecs: ["PCMA"],
    telephoneEventPt: null,
  });
  assert.deepEqual(noDtmf.media[0].formats, ["8"]);
  assert.equal(noDtmf.connection?.addrType, "IP6");
  assert.match(noDtmf.origin.sessionId, /^\d+$/);
  assert.equal(nextSessionVersion("18446744073709551615"), "18446744073709551616");
});

Deno.test("answer: codec chosen by the peer's order among ours; peer's PT numbers kept", () => {
  const offer = parse(REFERENCE_OFFER.replace("RTP/AVP 0 8 101", "RTP/AVP 8 0 101"));
  const ans = buildAnswer(offer, LOCAL);
  assert.ok(ans.ok);
  assert.equal(ans.media.codec, "PCMA");
  assert.equal(ans.media.payloadType, 8);
  assert.equal(ans.media.telephoneEventPt, 101);
  assert.equal(ans.media.remoteAddress, "192.0.2.10");
  assert.equal(ans.media.remotePort, 40000);
  const text = formatSdp(ans.answer);
  assert.match(text, /\r\nm=audio 16000 RTP\/AVP 8 101\r\n/);
  assert.match(text, /\r\nc=IN IP4 198\.51\.100\.7\r\n/);
  assert.match(text, /a=fmtp:101 0-16/);
  assert.match(text, /a=sendrecv/);
  const pcmuOnly = buildAnswer(offer, { ...LOCAL, codecs: ["PCMU"] });
  assert.ok(pcmuOnly.ok && pcmuOnly.media.codec === "PCMU" && pcmuOnly.media.payloadType === 0);
});

Deno.test("answer: telephone-event PT taken from the peer's rtpmap (e.g. 96), fmtp echoed", () => {
  const offer = parse(lines(
    "v=0",
    "o=- 1 1 IN IP4 10.1.1.1",
    "s=-",
    "c=IN IP4 10.1.1.1",
    "t=0 0",
    "m=audio 30000 RTP/AVP 18 0 96",
    "a=rtpmap:18 G729/8000",
    "a=rtpmap:96 telephone-event/8000",
    "a=fmtp:96 0-15",
  ));
  const ans = buildAnswer(offer, LOCAL);
  assert.ok(ans.ok);
  assert.equal(ans.media.codec, "PCMU", "G.729 is skipped, static PT 0 without rtpmap is PCMU");
  assert.equal(ans.media.telephoneEventPt, 96);
  assert.deepEqual(ans.answer.media[0].formats, ["0", "96"]);
  assert.equal(ans.answer.media[0].fmtp.get(96), "0-15");
});

Deno.test("answer: no common codec gives 488; other streams rejected with port 0", () => {
  const g729 = parse(
    REFERENCE_OFFER.replace("RTP/AVP 0 8 101", "RTP/AVP 18 101").replace(
      "a=rtpmap:0 PCMU/8000",
      "a=rtpmap:18 G729/8000",
    ),
  );
  const no = buildAnswer(g729, LOCAL);
  assert.ok(!no.ok);
  assert.equal(no.status, 488);
  assert.equal(no.reason, "no common codec");
  const wideband = parse(
    REFERENCE_OFFER.replace("a=rtpmap:0 PCMU/8000", "a=rtpmap:0 PCMU/16000")
      .replace("RTP/AVP 0 8 101", "RTP/AVP 0 101"),
  );
  assert.ok(!buildAnswer(wideband, LOCAL).ok, "a PCMU rtpmap at 16 kHz is not our PCMU");
  const video = parse(
    lines(
      "v=0",
      "o=- 1 1 IN IP4 10.0.0.1",
      "s=-",
      "c=IN IP4 10.0.0.1",
      "t=0 0",
      "m=video 5000 RTP/AVP 31",
    ),
  );
  const nv = buildAnswer(video, LOCAL);
  assert.ok(!nv.ok && nv.reason === "no usable audio stream");
  const mixed = parse(lines(
    "v=0",
    "o=- 1 1 IN IP4 10.0.0.1",
    "s=-",
    "c=IN IP4 10.0.0.1",
    "t=0 0",
    "m=video 5000 RTP/AVP 31",
    "m=audio 5002 RTP/SAVP 0",
    "m=audio 5004 RTP/AVP 0",
    "m=audio 5006 RTP/AVP 8",
  ));
  const ans = buildAnswer(mixed, LOCAL);
  assert.ok(ans.ok);
  assert.deepEqual(ans.answer.media.map((m) => [m.media, m.port, m.proto]), [
    ["video", 0, "RTP/AVP"],
    ["audio", 0, "RTP/SAVP"],
    ["audio", 16000, "RTP/AVP"],
    ["audio", 0, "RTP/AVP"],
  ]);
  assert.equal(ans.media.remotePort, 5004);
});

Deno.test("answer: direction and hold", () => {
  const dir = (offerDir: string, want?: "sendrecv" | "sendonly" | "recvonly" | "inactive") => {
    const ans = buildAnswer(parse(REFERENCE_OFFER.replace("a=sendrecv", `a=${offerDir}`)), {
      ...LOCAL,
      direction: want,
    });
    assert.ok(ans.ok);
    return [ans.media.localDirection, ans.answer.media[0].direction, ans.media.hold];
  };
  assert.deepEqual(dir("sendrecv"), ["sendrecv", "sendrecv", false]);
  assert.deepEqual(dir("sendonly"), ["recvonly", "recvonly", true]);
  assert.deepEqual(dir("recvonly"), ["sendonly", "sendonly", false]);
  assert.deepEqual(dir("inactive"), ["inactive", "inactive", true]);
  assert.deepEqual(dir("sendonly", "sendonly"), ["inactive", "inactive", true]);
  const oldHold = buildAnswer(
    parse(REFERENCE_OFFER.replace("c=IN IP4 192.0.2.10", "c=IN IP4 0.0.0.0")),
    LOCAL,
  );
  assert.ok(oldHold.ok && oldHold.media.hold);
});

Deno.test("acceptAnswer (UAC): codec, telephone-event and address from the peer's answer", () => {
  const answer = parse(lines(
    "v=0",
    "o=user1 53655765 2353687637 IN IP4 127.0.0.1",
    "s=-",
    "c=IN IP4 127.0.0.1",
    "t=0 0",
    "m=audio 6000 RTP/AVP 8 101",
    "a=rtpmap:8 PCMA/8000",
    "a=rtpmap:101 telephone-event/8000",
    "a=ptime:30",
  ));
  const neg = acceptAnswer(answer);
  assert.ok(neg.ok);
  assert.deepEqual(
    [
      neg.value.codec,
      neg.value.payloadType,
      neg.value.telephoneEventPt,
      neg.value.remoteAddress,
      neg.value.remotePort,
      neg.value.ptime,
    ],
    ["PCMA", 8, 101, "127.0.0.1", 6000, 30],
  );
  const rejected = parse(
    lines("v=0", "o=- 1 1 IN IP4 1.2.3.4", "s=-", "t=0 0", "m=audio 0 RTP/AVP 0"),
  );
  assert.ok(!acceptAnswer(rejected).ok);
  const noConn = parse(
    lines("v=0", "o=- 1 1 IN IP4 1.2.3.4", "s=-", "t=0 0", "m=audio 7000 RTP/AVP 0"),
  );
  const nc = acceptAnswer(noConn);
  assert.ok(!nc.ok && /connection/.test(nc.reason));
});
