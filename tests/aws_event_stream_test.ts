/**
 * The AWS event-stream codec against the SDK's published vectors
 * (tests/fixtures/aws_event_stream_vectors.json): decoding, re-encoding to the same bytes,
 * rejecting each corruption; every header type round trips; the streaming decoder reassembles
 * messages split at any byte; a body cut inside a message is an error.
 */

import assert from "node:assert/strict";
import { FlowcatError } from "../core/errors.ts";
import {
  crc32,
  decodeMessage,
  encodeMessage,
  type EventHeaders,
  EventStreamDecoder,
  readEventStream,
} from "../providers/aws/event_stream.ts";

interface Vector {
  expectation: "success" | "failure";
  encoded: string;
  headers?: Record<string, { type: string; value: string | number }>;
  payload?: string;
}

const fixture = JSON.parse(
  await Deno.readTextFile(new URL("./fixtures/aws_event_stream_vectors.json", import.meta.url)),
) as { vectors: Record<string, Vector> };

const fromHex = (h: string) => Uint8Array.fromHex(h);

for (const [name, v] of Object.entries(fixture.vectors)) {
  Deno.test(`event stream vector ${name}: ${v.expectation}`, () => {
    const bytes = fromHex(v.encoded);
    if (v.expectation === "failure") {
      assert.throws(
        () => decodeMessage(bytes),
        (e) => e instanceof FlowcatError && e.kind === "protocol",
      );
      assert.throws(() => new EventStreamDecoder().push(bytes), FlowcatError);
      return;
    }
    const msg = decodeMessage(bytes);
    assert.deepEqual(Object.keys(msg.headers), Object.keys(v.headers!));
    for (const [k, h] of Object.entries(v.headers!)) {
      assert.equal(msg.headers[k].type, h.type);
      assert.equal(msg.headers[k].value, h.value);
    }
    assert.deepEqual(msg.payload, fromHex(v.payload!));
    assert.deepEqual(encodeMessage(msg), bytes, "re-encodes to the same bytes");
  });
}

Deno.test("event stream: crc32 is the IEEE CRC (check value of '123456789')", () => {
  assert.equal(crc32(new TextEncoder().encode("123456789")), 0xcbf43926);
  assert.equal(crc32(new Uint8Array(0)), 0);
});

Deno.test("event stream: every header type round trips", () => {
  const headers: EventHeaders = {
    t: { type: "boolean", value: true },
    f: { type: "boolean", value: false },
    b: { type: "byte", value: -7 },
    s: { type: "short", value: -1234 },
    i: { type: "integer", value: 0x7fffffff },
    l: { type: "long", value: -(2n ** 62n) },
    bin: { type: "binary", value: Uint8Array.of(0, 1, 255) },
    str: { type: "string", value: "ünïcode ✓" },
    ts: { type: "timestamp", value: 1_700_000_000_123n },
    u: { type: "uuid", value: Uint8Array.from({ length: 16 }, (_, i) => i * 7) },
  };
  const payload = new TextEncoder().encode('{"a":1}');
  const back = decodeMessage(encodeMessage({ headers, payload }));
  assert.deepEqual(back.headers, headers);
  assert.deepEqual(back.payload, payload);
});

Deno.test("event stream: the decoder reassembles messages split at every byte", () => {
  const msgs = [1, 2, 3].map((n) =>
    encodeMessage({
      headers: { ":event-type": { type: "string", value: `E${n}` } },
      payload: new Uint8Array(n * 10).fill(n),
    })
  );
  const all = new Uint8Array(msgs.reduce((s, m) => s + m.length, 0));
  let o = 0;
  for (const m of msgs) all.set(m, (o += m.length) - m.length);
  for (const step of [1, 3, 17, all.length]) {
    const d = new EventStreamDecoder();
    const got = [];
    for (let i = 0; i < all.length; i += step) got.push(...d.push(all.subarray(i, i + step)));
    assert.deepEqual(got.map((m) => m.headers[":event-type"].value), ["E1", "E2", "E3"], `${step}`);
    assert.equal(d.pending, 0);
  }
});

Deno.test("event stream: a flipped payload bit fails the message CRC", () => {
  const bytes = encodeMessage({ headers: {}, payload: new Uint8Array(8) });
  bytes[13] ^= 1;
  assert.throws(() => decodeMessage(bytes), /message CRC mismatch/);
});

Deno.test("event stream: a body cut inside a message is a closed error", async () => {
  const bytes = encodeMessage({ headers: {}, payload: new Uint8Array(40) });
  const body = new ReadableStream<Uint8Array>({
    start(c) {
      c.enqueue(bytes);
      c.enqueue(bytes.subarray(0, 20));
      c.close();
    },
  });
  const seen: number[] = [];
  await assert.rejects(
    (async () => {
      for await (const m of readEventStream(body)) seen.push(m.payload.length);
    })(),
    (e) => e instanceof FlowcatError && e.kind === "closed",
  );
  assert.deepEqual(seen, [40]);
});
