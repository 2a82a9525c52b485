/**
 * The connection guard's stream follower: HTTP request framing and WebSocket message lengths,
 * fed byte streams split at every awkward place.
 */
import assert from "node:assert/strict";
import {
  FEED_BAD_REQUEST,
  FEED_HEAD_TOO_LARGE,
  FEED_MESSAGE_TOO_BIG,
  FEED_OK,
  requestFraming,
  RequestStream,
  StreamState,
} from "../server/guard_stream.ts";

const enc = new TextEncoder();
const LIMITS = { maxHeadBytes: 1024, maxMessageBytes: 1000 };

/** Feed `bytes` in pieces of `size`; the first verdict that is not OK, else OK. */
function feedIn(s: RequestStream, bytes: Uint8Array, size: number): number {
  for (let i = 0; i < bytes.length; i += size) {
    const piece = bytes.slice(i, i + size);
    const v = s.feed(piece, piece.length);
    if (v !== FEED_OK) return v;
  }
  return FEED_OK;
}

/** A masked client frame header (the payload follows separately). */
function frameHeader(opcode: number, fin: boolean, len: number): Uint8Array {
  const b0 = (fin ? 0x80 : 0) | opcode;
  const mask = [1, 2, 3, 4];
  if (len < 126) return Uint8Array.from([b0, 0x80 | len, ...mask]);
  if (len < 65536) return Uint8Array.from([b0, 0x80 | 126, len >> 8, len & 255, ...mask]);
  const hi = Math.floor(len / 2 ** 32);
  const lo = len >>> 0;
  return Uint8Array.from([
    b0,
    0x80 | 127,
    hi >>> 24,
    (hi >> 16) & 255,
    (hi >> 8) & 255,
    hi & 255,
    lo >>> 24,
    (lo >> 16) & 255,
    (lo >> 8) & 255,
    lo & 255,
    ...mask,
  ]);
}

function frame(opcode: number, fin: boolean, len: number): Uint8Array {
  const h = frameHeader(opcode, fin, len);
  const out = new Uint8Array(h.length + len);
  out.set(h);
  out.fill(0x61, h.length);
  return out;
}

function concat(...parts: Uint8Array[]): Uint8Array {
  const out = new Uint8Array(parts.reduce((n, p) => n + p.length, 0));
  let off = 0;
  for (const p of parts) {
    out.set(p, off);
    off += p.length;
  }
  return out;
}

/** A stream that has passed an upgrade request and seen the 101. */
function upgraded(): RequestStream {
  const s = new RequestStream(LIMITS);
  const head = enc.encode("GET /ws HTTP/1.1\r\nHost: a\r\nUpgrade: websocket\r\n\r\n");
  assert.equal(s.feed(head, head.length), FEED_OK);
  assert.equal(s.state, StreamState.UpgradeWait);
  s.answered(true);
  return s;
}

Deno.test("guard stream: heads, bodies and keep-alive requests, split anywhere", () => {
  const bytes = enc.encode(
    "GET / HTTP/1.1\r\nHost: a\r\n\r\n" +
      "POST /x HTTP/1.1\r\nHost: a\r\nContent-Length: 5\r\n\r\nhello" +
      "POST /y HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\n" +
      "3;ext=1\r\nabc\r\n10\r\n0123456789abcdef\r\n0\r\nX-Trailer: 1\r\n\r\n" +
      "GET /z HTTP/1.1\nHost: a\n\n" +
      "GET /partial HTTP/1.1\r\nHost:",
  );
  for (const size of [1, 2, 3, 7, 64, bytes.length]) {
    const s = new RequestStream(LIMITS);
    assert.equal(feedIn(s, bytes, size), FEED_OK, `pieces of ${size}`);
    assert.equal(s.heads, 4, `pieces of ${size}`);
    assert.equal(s.state, StreamState.Head);
    assert.equal(s.headBytes, "GET /partial HTTP/1.1\r\nHost:".length);
  }
});

Deno.test("guard stream: an upgrade refused by the server goes back to HTTP", () => {
  const s = new RequestStream(LIMITS);
  const head = enc.encode("GET /ws HTTP/1.1\r\nUpgrade: websocket\r\n\r\n");
  s.feed(head, head.length);
  s.answered(false);
  assert.equal(s.state, StreamState.Head);
  // Frames sent before the answer would pass unchecked: refused.
  const t = new RequestStream(LIMITS);
  const early = concat(head, frame(1, true, 10));
  assert.equal(t.feed(early, early.length), FEED_BAD_REQUEST);
});

Deno.test("guard stream: heads over the cap, ambiguous framing and HTTP/2 are refused", () => {
  const big = enc.encode(`GET / HTTP/1.1\r\nX: ${"a".repeat(2000)}\r\n\r\n`);
  assert.equal(feedIn(new RequestStream(LIMITS), big, 100), FEED_HEAD_TOO_LARGE);
  assert.equal(feedIn(new RequestStream(LIMITS), big, big.length), FEED_HEAD_TOO_LARGE);
  // Never ending: cut at the cap, not buffered on.
  const endless = enc.encode(`GET / HTTP/1.1\r\n${"X: y\r\n".repeat(400)}`);
  assert.equal(feedIn(new RequestStream(LIMITS), endless, 50), FEED_HEAD_TOO_LARGE);
  for (
    const head of [
      "POST / HTTP/1.1\r\nContent-Length: 5\r\nTransfer-Encoding: chunked\r\n\r\n",
      "POST / HTTP/1.1\r\nContent-Length: 5\r\nContent-Length: 6\r\n\r\n",
      "POST / HTTP/1.1\r\nContent-Length: -1\r\n\r\n",
      "POST / HTTP/1.1\r\nTransfer-Encoding: gzip\r\n\r\n",
      "PRI * HTTP/2.0\r\n\r\n",
      "GET /ws HTTP/1.1\r\nUpgrade: websocket\r\nContent-Length: 3\r\n\r\n",
    ]
  ) {
    const b = enc.encode(head);
    assert.equal(new RequestStream(LIMITS).feed(b, b.length), FEED_BAD_REQUEST, head);
  }
  assert.deepEqual(requestFraming("POST / HTTP/1.1\r\nContent-Length: 5\r\ncontent-length: 5"), {
    length: 5,
    chunked: false,
    upgrade: false,
  });
});

Deno.test("guard stream: WebSocket messages are counted from frame headers", () => {
  // Fragments and control frames within the cap, split at every byte.
  const ok = concat(
    frame(1, true, 1000),
    frame(2, false, 400),
    frame(9, true, 125), // a ping between fragments
    frame(0, false, 300),
    frame(0, true, 300),
    frame(1, true, 200),
  );
  for (const size of [1, 5, 13, ok.length]) {
    const s = upgraded();
    assert.equal(feedIn(s, ok, size), FEED_OK, `pieces of ${size}`);
  }
  // One frame over the cap: refused at its header, payload never needed.
  for (const len of [1001, 70_000, 30 * 1024 * 1024, 2 ** 40]) {
    const s = upgraded();
    const h = frameHeader(1, true, len);
    assert.equal(feedIn(s, h, 3), FEED_MESSAGE_TOO_BIG, `length ${len}`);
    assert.equal(s.refusedMessageBytes >= 1001, true);
  }
  // Fragments adding up over the cap.
  const s = upgraded();
  const parts = concat(frame(2, false, 600), frame(0, false, 300), frameHeader(0, true, 200));
  assert.equal(feedIn(s, parts, 7), FEED_MESSAGE_TOO_BIG);
  assert.equal(s.refusedMessageBytes, 1100);
  // A control frame claiming more than 125 bytes.
  const c = upgraded();
  const bad = frameHeader(9, true, 126);
  assert.equal(c.feed(bad, bad.length), FEED_MESSAGE_TOO_BIG);
});
