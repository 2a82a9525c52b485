import assert from "node:assert/strict";
import {
  decodeTelephoneEvent,
  dtmfEventPackets,
  encodeTelephoneEvent,
  eventToKey,
  keyToEvent,
  Rfc4733Receiver,
} from "../core/audio/dtmf_rfc4733.ts";
import { DTMF_KEYS } from "../core/audio/dtmf_keys.ts";
import type { KeypadEntry } from "../core/frames.ts";
import { FlowcatError } from "../core/errors.ts";

Deno.test("rfc4733: payload layout is event, E|R|volume, 16-bit duration", () => {
  const p = encodeTelephoneEvent({ event: 11, end: true, volume: 10, duration: 0x0320 });
  assert.deepEqual([...p], [0x0b, 0x8a, 0x03, 0x20]);
  const q = encodeTelephoneEvent({ event: 5, end: false, volume: 63, duration: 65535 });
  assert.deepEqual([...q], [0x05, 0x3f, 0xff, 0xff]);
});

Deno.test("rfc4733: decode reads every field and ignores the reserved bit", () => {
  assert.deepEqual(decodeTelephoneEvent(new Uint8Array([0x0c, 0xc7, 0x01, 0x40])), {
    event: 12,
    end: true,
    volume: 7,
    duration: 320,
  });
  for (let e = 0; e < 256; e += 17) {
    for (const end of [false, true]) {
      const ev = { event: e, end, volume: e % 64, duration: (e * 257) & 0xffff };
      assert.deepEqual(decodeTelephoneEvent(encodeTelephoneEvent(ev)), ev);
    }
  }
});

Deno.test("rfc4733: event codes map to keys (0-9, *, #, A-D)", () => {
  const expected = [..."0123456789*#ABCD"];
  for (let e = 0; e < 16; e++) {
    assert.equal(eventToKey(e), expected[e]);
    assert.equal(keyToEvent(expected[e] as KeypadEntry), e);
  }
  assert.equal(eventToKey(16), undefined); // flash and other events are not keys
  for (const k of DTMF_KEYS) assert.equal(eventToKey(keyToEvent(k)), k);
});

Deno.test("rfc4733: bad fields and short payloads throw FlowcatError", () => {
  assert.throws(
    () => encodeTelephoneEvent({ event: 256, end: false, volume: 0, duration: 0 }),
    FlowcatError,
  );
  assert.throws(
    () => encodeTelephoneEvent({ event: 1, end: false, volume: 64, duration: 0 }),
    FlowcatError,
  );
  assert.throws(
    () => encodeTelephoneEvent({ event: 1, end: false, volume: 1, duration: 65536 }),
    FlowcatError,
  );
  assert.throws(
    () => encodeTelephoneEvent({ event: 1, end: false, volume: 1, duration: -1 }),
    FlowcatError,
  );
  assert.throws(() => decodeTelephoneEvent(new Uint8Array(3)), FlowcatError);
  assert.throws(() => keyToEvent("E" as KeypadEntry), FlowcatError);
});

Deno.test("rfc4733: encode writes into a caller buffer", () => {
  const buf = new Uint8Array(4);
  assert.equal(encodeTelephoneEvent({ event: 9, end: false, volume: 10, duration: 160 }, buf), buf);
  assert.deepEqual([...buf], [9, 10, 0, 160]);
});

Deno.test("rfc4733: one key press is start, updates, and three end packets", () => {
  const packets = dtmfEventPackets("5", { durationMs: 100 });
  assert.equal(packets.length, 4 + 3);
  assert.deepEqual(packets.map((p) => p.duration), [160, 320, 480, 640, 800, 800, 800]);
  assert.deepEqual(packets.map((p) => p.marker), [true, false, false, false, false, false, false]);
  assert.deepEqual(packets.map((p) => p.end), [false, false, false, false, true, true, true]);
  assert.deepEqual(packets.map((p) => p.sendAtMs), [20, 40, 60, 80, 100, 100, 100]);
  for (const p of packets) {
    const ev = decodeTelephoneEvent(p.payload);
    assert.equal(ev.event, 5);
    assert.equal(ev.volume, 10);
    assert.equal(ev.duration, p.duration);
    assert.equal(ev.end, p.end);
  }
});

Deno.test("rfc4733: packet sequence options (clock, packet time, odd length)", () => {
  const p = dtmfEventPackets("#", {
    durationMs: 50,
    packetMs: 20,
    clockRate: 16000,
    volume: 6,
    endRepeats: 2,
  });
  assert.deepEqual(p.map((x) => x.duration), [320, 640, 800, 800]);
  assert.equal(decodeTelephoneEvent(p[0].payload).event, 11);
  assert.equal(decodeTelephoneEvent(p[0].payload).volume, 6);
  const short = dtmfEventPackets("1", { durationMs: 10 });
  assert.deepEqual(short.map((x) => [x.duration, x.marker, x.end]), [
    [80, true, false],
    [80, false, true],
    [80, false, true],
    [80, false, true],
  ]);
  assert.throws(() => dtmfEventPackets("1", { durationMs: 9000 }), FlowcatError);
  assert.throws(() => dtmfEventPackets("1", { durationMs: 0 }), FlowcatError);
});

Deno.test("rfc4733: receiver reports each press once, even if the start is lost", () => {
  const rx = new Rfc4733Receiver();
  const got: (KeypadEntry | undefined)[] = [];
  let ts = 1000;
  for (const key of ["1", "1", "#"] as KeypadEntry[]) {
    for (const p of dtmfEventPackets(key)) got.push(rx.push(p.payload, ts));
    ts += 1600;
  }
  assert.deepEqual(got.filter((k) => k !== undefined), ["1", "1", "#"]);
  // Start and updates lost: the first end packet still yields the key, repeats do not.
  const ends = dtmfEventPackets("9").filter((p) => p.end);
  assert.deepEqual(ends.map((p) => rx.push(p.payload, ts)), ["9", undefined, undefined]);
  assert.equal(rx.push(new Uint8Array(2), ts + 1), undefined);
  assert.equal(
    rx.push(encodeTelephoneEvent({ event: 16, end: false, volume: 0, duration: 1 }), 5),
    undefined,
  );
  rx.reset();
  assert.equal(rx.push(ends[0].payload, ts), "9");
});
