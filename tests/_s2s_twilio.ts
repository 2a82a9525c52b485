/**
 * A speech-to-speech call (buildS2sTask) on a given model over a local Twilio-framed socket, with
 * an in-memory control plane: the harness of the s2s call tests.
 */
import { buildS2sTask, type S2sParts, type S2sTaskOptions } from "../core/builders.ts";
import { silentLogger } from "../core/log.ts";
import type { Finalize, RealtimeLlm } from "../core/seams.ts";
import { MemorySessionSource } from "../server/session_store.ts";
import { type TwilioCall, twilioCall } from "./_twilio_client.ts";
import { movingOnBrain } from "./_graph_fixture.ts";

/** One call: the caller's side, the call's end, its control plane and its processors. */
export interface S2sTwilioCall {
  call: TwilioCall;
  /** The finalize report, once the call is completed. */
  finished: Promise<Finalize>;
  sessions: MemorySessionSource;
  runId: number;
  /** How many times the run was completed in the control plane (once, for a call done right). */
  completions(): number;
  /** The call's processors (built when the socket was accepted, before this resolves). */
  parts: S2sParts;
}

/**
 * Dial a call on `realtime` (provider name `provider` in the control plane); `opts` adds to or
 * overrides the task options (no idle timeout, silent logs, the moving-on graph brain).
 */
export async function s2sTwilioCall(
  realtime: RealtimeLlm,
  opts: Partial<S2sTaskOptions> = {},
  provider = "echo",
): Promise<S2sTwilioCall> {
  const sessions = new MemorySessionSource({ provider });
  const run = await sessions.createRun("carrier", { carrier: "twilio" });
  let completions = 0;
  const complete = sessions.complete.bind(sessions);
  sessions.complete = (id, token, f) => (completions++, complete(id, token, f));
  const finished = Promise.withResolvers<Finalize>();
  let parts: S2sParts | undefined;
  const call = await twilioCall((transport) => {
    const task = buildS2sTask({
      transport,
      realtime,
      brain: movingOnBrain(),
      session: sessions,
      runId: run.runId,
      token: run.token,
      logger: silentLogger,
      onFinalized: finished.resolve,
      taskParams: { idleTimeoutMs: null },
      ...opts,
    });
    parts = task.parts;
    task.run().catch(finished.reject);
  }, run.token);
  // The server side is built when it accepts the socket, which the client's open waited for.
  if (parts === undefined) throw new Error("the call was not built");
  return {
    call,
    finished: finished.promise,
    sessions,
    runId: run.runId,
    completions: () => completions,
    parts,
  };
}
