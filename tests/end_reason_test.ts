/** server/end_reason.ts: every way a call ends, as the word operators count. */
import assert from "node:assert/strict";
import { endReason, stopDetail } from "../server/end_reason.ts";

Deno.test("end reason: each stop the server and the pipeline make maps to one word", () => {
  const cases: [Parameters<typeof endReason>, string][] = [
    [[{ kind: "end", reason: "caller hung up" }], "caller_hung_up"],
    // The peer hung up as it took the transfer, before the agent's own End.
    [[{ kind: "end", reason: "caller hung up" }, { disposition: "transferred" }], "transferred"],
    [[{ kind: "end", reason: "caller hung up" }, { disposition: "booked" }], "caller_hung_up"],
    [[{ kind: "end", reason: "brain: booked" }, { disposition: "booked" }], "agent_ended"],
    [[{ kind: "end", reason: "brain: end" }], "agent_ended"],
    [
      [{ kind: "end", reason: "brain: transferred" }, { disposition: "transferred" }],
      "transferred",
    ],
    [[{ kind: "end", reason: "brain: x" }, { disposition: "transfer_to_sales" }], "transferred"],
    [[{ kind: "end", reason: "model closed: socket closed (1011)" }], "model_error"],
    [[{ kind: "end", reason: "model failed: boom" }], "model_error"],
    [[{ kind: "cancel", reason: "idle timeout" }], "timeout"],
    [[{ kind: "cancel", reason: "call too long" }], "limit"],
    [[{ kind: "cancel", reason: "server shutting down" }], "drain"],
    [[{ kind: "cancel", reason: "fatal error: x" }, { fatalFromProvider: true }], "model_error"],
    [[{ kind: "cancel", reason: "fatal error: media leg failed" }], "error"],
    [[undefined], "error"],
    [[{ kind: "stop" }], "other"],
    [[{ kind: "end" }], "other"],
  ];
  for (const [args, want] of cases) assert.equal(endReason(...args), want, JSON.stringify(args));
});

Deno.test("end reason: the detail is the task's own stop reason", () => {
  assert.equal(stopDetail({ kind: "end", reason: "caller hung up" }), "end: caller hung up");
  assert.equal(stopDetail({ kind: "cancel" }), "cancel");
  assert.equal(stopDetail(undefined), "error");
});
