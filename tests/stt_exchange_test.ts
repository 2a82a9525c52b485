/**
 * What the streaming STT clients share (providers/stt_exchange.ts): frames handed to the next
 * runStt, a failure thrown once and nothing sent meanwhile, the retry interval, and held audio
 * capped oldest-first.
 */

import assert from "node:assert/strict";
import { FlowcatError } from "../core/errors.ts";
import { makeFrame } from "../core/frames.ts";
import { HeldAudio, SttExchange } from "../providers/stt_exchange.ts";

const text = (t: string) => makeFrame("Transcription", { text: t, userId: "user", final: true });

Deno.test("stt exchange: frames go to the next take; a failure is thrown once, nothing sent", async () => {
  const x = new SttExchange(1000);
  let sends = 0;
  x.emit(text("one"));
  assert.deepEqual((await x.take(() => sends++)).map((f) => f.kind), ["Transcription"]);
  assert.deepEqual(await x.take(() => sends++), []);
  x.report(new FlowcatError("closed", "first"));
  x.report(new FlowcatError("auth", "second"));
  assert.equal(x.pending?.message, "second");
  await assert.rejects(x.take(() => sends++), { message: "second" });
  assert.equal(sends, 2, "the take that threw sent nothing");
  assert.equal(x.pending, undefined);
  assert.deepEqual(await x.take(() => sends++), []);
  assert.equal(sends, 3);
});

Deno.test("stt exchange: a failure holds retries off for the interval", async () => {
  const x = new SttExchange(40);
  assert.equal(x.retryDue, true, "no failure yet");
  x.failed();
  assert.equal(x.retryDue, false);
  await new Promise((r) => setTimeout(r, 50));
  assert.equal(x.retryDue, true);
  assert.equal(new SttExchange(0).retryDue, true);
});

Deno.test("held audio: capped in bytes, oldest dropped first, emptied by take", () => {
  const held = new HeldAudio(10);
  for (const v of [1, 2, 3]) held.push(new Uint8Array(4).fill(v));
  const a = held.take();
  assert.equal(a.bytes, 8);
  assert.deepEqual(a.chunks.map((c) => c[0]), [2, 3], "the oldest went first");
  assert.deepEqual(held.take(), { chunks: [], bytes: 0 });
  held.push(new Uint8Array(3));
  held.clear();
  assert.equal(held.take().bytes, 0);
  const none = new HeldAudio(0);
  none.push(new Uint8Array(1));
  assert.equal(none.take().chunks.length, 0);
});
