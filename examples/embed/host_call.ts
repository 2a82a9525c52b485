/**
 * What an embedding host brings to Flowcat, shared by the two example hosts (ws_host.ts,
 * sip_host.ts): a control plane (here the core's {@link InMemorySessions}; a real host keeps
 * runs in its database), conversation logic (a {@link staticBrain}), and {@link runEchoCall},
 * which runs one call on any media leg with the local echo model (no key, no network).
 * @module
 */

import {
  buildS2sTask,
  type InMemorySessions,
  type Logger,
  type MediaTransport,
  silentLogger,
  staticBrain,
} from "@flowcat/flowcat";
import { EchoRealtime } from "@flowcat/flowcat/realtime/echo";

/** The desk's instructions: the echo model ignores them, a real model follows them. */
export const DESK_PROMPT = "You are the front desk. Greet the caller, help briefly, then call " +
  "end_call.";

/** The run a call belongs to: its id and the token its media leg presented. */
export interface HostRun {
  runId: number;
  token: string;
}

/** Inputs of {@link runEchoCall}. */
export interface EchoCallOptions {
  transport: MediaTransport;
  sessions: InMemorySessions;
  run: HostRun;
  logger?: Logger;
}

/**
 * Run one call on `transport` with a one-node brain that hangs up on `end_call`, and the local
 * echo model (it greets with a chime, says back each caller turn, and calls `end_call` on
 * keypad `#`). Resolves once the call is over and finalized.
 */
export async function runEchoCall(opts: EchoCallOptions): Promise<void> {
  const task = buildS2sTask({
    transport: opts.transport,
    realtime: new EchoRealtime(),
    model: "echo",
    brain: staticBrain(DESK_PROMPT, { nodeId: "desk" }),
    session: opts.sessions,
    runId: opts.run.runId,
    token: opts.run.token,
    logger: opts.logger ?? silentLogger,
    taskParams: { idleTimeoutMs: 120_000 },
  });
  await task.run();
}
