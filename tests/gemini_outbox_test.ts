/** The Gemini outbound log: what a resumed session gets written again, and its bound. */

import assert from "node:assert/strict";
import { OutboundLog } from "../providers/google/gemini_live_outbox.ts";

function log(maxMs = 1000) {
  const warnings: number[] = [];
  const out = new OutboundLog(maxMs, (ms) => warnings.push(ms));
  const wire: string[] = [];
  const send = (t: string) => (wire.push(t), true);
  return { out, warnings, wire, send };
}

Deno.test("outbox: a resume from a handle writes again what was sent after it, then the rest", () => {
  const { out, wire, send } = log();
  out.push("a1", 100);
  out.drain(send);
  out.mark("h-1", []);
  out.push("a2", 100);
  out.push("tool", undefined); // control: not written again
  out.push("a3", 100);
  out.drain(send);
  out.push("a4", 100); // not sent yet (the connection went away)
  wire.length = 0;
  const r = out.resend("h-1", send);
  assert.deepEqual(wire, ["a2", "a3", "a4"]);
  assert.equal(r.replayedMs, 200);
  assert.equal(r.missingMs, 0);
  // A second resume from the same handle (the new session gave none yet) needs it all again.
  out.push("a5", 100);
  out.drain(send);
  wire.length = 0;
  out.resend("h-1", send);
  assert.deepEqual(wire, ["a2", "a3", "a4", "a5"]);
});

Deno.test("outbox: a fresh session gets only what was never sent; control goes first on unshift", () => {
  const { out, wire, send } = log();
  out.push("a1", 100);
  out.drain(send);
  out.mark("h-1", []);
  out.push("a2", 100);
  out.unshift("kickoff");
  wire.length = 0;
  assert.equal(out.resend(undefined, send).replayedMs, 0);
  assert.deepEqual(wire, ["kickoff", "a2"]);
});

Deno.test("outbox: the bound drops sent audio quietly (reported at resume), unsent with a warning", () => {
  const { out, warnings, wire, send } = log(300);
  out.mark("h-1", []);
  for (let i = 1; i <= 4; i++) {
    out.push(`s${i}`, 100);
    out.drain(send);
  }
  assert.deepEqual(warnings, [], "sent audio only shortens the replay");
  for (let i = 1; i <= 4; i++) out.push(`u${i}`, 100);
  assert.deepEqual(warnings, [300], "unsent audio dropped: one warning");
  wire.length = 0;
  const r = out.resend("h-1", send);
  assert.deepEqual(wire, ["u2", "u3", "u4"]);
  assert.equal(r.missingMs, 400);
  assert.equal(out.pending, 0);
});
