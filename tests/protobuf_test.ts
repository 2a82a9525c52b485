/**
 * The hand-written protobuf codec against protobufjs (an independent implementation) and the
 * gRPC status mapping.
 */

import assert from "node:assert/strict";
import protobuf from "npm:protobufjs@7.6.6";
import { ProtoWriter, readMessage } from "../providers/protobuf.ts";
import { grpcError, grpcStatusName, grpcTarget } from "../providers/grpc.ts";
import { FlowcatError } from "../core/errors.ts";

const PROTO = `
syntax = "proto3";
message Inner { string name = 1; repeated string tags = 2; }
message Outer {
  int32 count = 1; bool flag = 2; float ratio = 3; string text = 4; bytes blob = 5;
  Inner inner = 6; repeated Inner items = 7; map<string, string> attrs = 24; int32 neg = 9;
  int64 big = 10;
}`;
const root = protobuf.parse(PROTO, { keepCase: true }).root;
const Outer = root.lookupType("Outer");

Deno.test("protobuf: what ProtoWriter writes, protobufjs reads", () => {
  const bytes = new ProtoWriter()
    .int(1, 300)
    .bool(2, true)
    .float(3, 0.5)
    .string(4, "héllo")
    .bytes(5, new Uint8Array([1, 2, 255]))
    .message(6, new ProtoWriter().string(1, "in").string(2, "a").string(2, "b"))
    .message(7, new ProtoWriter().string(1, "x"))
    .message(7, new ProtoWriter())
    .map(24, { k: "v", l: "w" })
    .int(9, -2)
    .finish();
  const got = Outer.toObject(Outer.decode(bytes), { longs: Number, bytes: Array });
  assert.deepEqual(got, {
    count: 300,
    flag: true,
    ratio: 0.5,
    text: "héllo",
    blob: [1, 2, 255],
    inner: { name: "in", tags: ["a", "b"] },
    items: [{ name: "x" }, {}],
    attrs: { k: "v", l: "w" },
    neg: -2,
  });
});

Deno.test("protobuf: defaults are not written (proto3), sub-messages are", () => {
  const empty = new ProtoWriter().int(1, 0).bool(2, false).float(3, 0).string(4, "").finish();
  assert.equal(empty.length, 0);
  const withEmpty = new ProtoWriter().message(6, new ProtoWriter()).finish();
  assert.deepEqual([...withEmpty], [0x32, 0x00]);
});

Deno.test("protobuf: what protobufjs writes, readMessage reads (unknown fields skipped)", () => {
  const bytes = Outer.encode(Outer.fromObject({
    count: 7,
    flag: true,
    ratio: 0.25,
    text: "t",
    blob: new Uint8Array([9]),
    inner: { name: "n" },
    items: [{ name: "a" }, { name: "b" }],
    neg: -5,
    big: 2 ** 40,
  })).finish();
  const m = readMessage(bytes);
  assert.equal(m.int(1), 7);
  assert.equal(m.bool(2), true);
  assert.equal(m.float(3), 0.25);
  assert.equal(m.string(4), "t");
  assert.deepEqual([...m.bytes(5)], [9]);
  assert.equal(m.message(6)?.string(1), "n");
  assert.deepEqual(m.messages(7).map((i) => i.string(1)), ["a", "b"]);
  assert.equal(m.int(9), -5);
  assert.equal(m.int(10), 2 ** 40);
  assert.equal(m.has(8), false);
  assert.equal(m.message(8), undefined);
  assert.equal(m.string(99), "");
});

Deno.test("protobuf: a truncated message is a protocol error", () => {
  const bytes = new ProtoWriter().string(4, "hello").finish();
  assert.throws(() => readMessage(bytes.subarray(0, 4)), (e: unknown) => {
    assert.ok(e instanceof FlowcatError && e.kind === "protocol");
    return true;
  });
});

Deno.test("grpc: statuses map to error kinds; targets from URLs", () => {
  const kinds = [16, 7, 4, 14, 1, 8, 13, 3].map((
    c,
  ) => [grpcStatusName(c), grpcError("p", c, "d").kind]);
  assert.deepEqual(kinds, [
    ["UNAUTHENTICATED", "auth"],
    ["PERMISSION_DENIED", "auth"],
    ["DEADLINE_EXCEEDED", "timeout"],
    ["UNAVAILABLE", "closed"],
    ["CANCELLED", "closed"],
    ["RESOURCE_EXHAUSTED", "protocol"],
    ["INTERNAL", "protocol"],
    ["INVALID_ARGUMENT", "protocol"],
  ]);
  assert.equal(grpcError("riva", 8, "busy").message, "riva: gRPC RESOURCE_EXHAUSTED: busy");
  assert.deepEqual(grpcTarget("https://speech.googleapis.com"), {
    address: "speech.googleapis.com:443",
    tls: true,
  });
  assert.deepEqual(grpcTarget("http://[::1]:50051"), { address: "[::1]:50051", tls: false });
  assert.throws(() => grpcTarget("grpc://x:1"), /must be http:\/\/ or https:\/\//);
});
