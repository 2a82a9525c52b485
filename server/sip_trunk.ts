/**
 * The agent server's SIP trunk: registers at start (refresh and backoff run on their own),
 * answers every INVITE with a new run on the server's agent, and places outbound calls for
 * `POST /calls` with `via: "sip"`. The trunk password is read from the variable the config
 * names and handed to the SIP agent only.
 *
 * Inbound identity comes from the route (this server serves one agent), never from the
 * INVITE body.
 * @module
 */

import { errorMessage, FlowcatError } from "../core/errors.ts";
import type { Logger } from "../core/log.ts";
import { SipAgent } from "../telephony/sip/agent.ts";
import type { CallManager, EnvGet } from "./calls.ts";
import type { SipTrunkConfig } from "./config.ts";
import type { SipDialFn } from "./outbound.ts";
import type { MemorySessionSource } from "./session_store.ts";

/** A running trunk. */
export interface SipTrunk {
  /** Send the INVITE for a run; resolves at once, the call runs when answered. */
  dial: SipDialFn;
  /** Un-register and close the sockets. */
  close(): Promise<void>;
}

/** Options of {@link startSipTrunk}. */
export interface SipTrunkOptions {
  sip: SipTrunkConfig;
  calls: CallManager;
  sessions: MemorySessionSource;
  env: EnvGet;
  logger: Logger;
  /** Address to bind (default 0.0.0.0). */
  bindHost?: string;
}

/** Start the SIP agent, register, and serve inbound calls until closed. */
export async function startSipTrunk(opts: SipTrunkOptions): Promise<SipTrunk> {
  const { sip, calls, sessions, logger } = opts;
  const password = opts.env(sip.passwordEnv);
  if (password === undefined || password === "") {
    throw new FlowcatError("config", `${sip.passwordEnv} is not set (the SIP trunk password)`);
  }
  const agent = await SipAgent.start({
    server: sip.server,
    login: sip.login,
    password,
    callerId: sip.callerId,
    sipPort: sip.sipPort,
    rtpPortBase: sip.rtpPortBase,
    rtpPortTries: sip.rtpPortTries,
    ...(sip.publicIp !== undefined ? { publicIp: sip.publicIp } : {}),
    ...(opts.bindHost !== undefined ? { bindHost: opts.bindHost } : {}),
  }, { logger });
  agent.register().then(
    () => logger.info("sip: registered", { server: sip.server }),
    (err) => logger.warn("sip: registration failed; retrying", { err: errorMessage(err) }),
  );
  const serving = (async () => {
    for (;;) {
      const invite = await agent.nextInbound();
      if (invite === undefined) return;
      const refused = calls.refusal();
      if (refused !== undefined) {
        invite.reject(refused === "server is draining" ? 503 : 486);
        continue;
      }
      const run = await sessions.createRun("sip");
      invite.answer().then(
        (call) => calls.run(call.transport, run),
        (err) => logger.warn("sip: answer failed", { runId: run.runId, err: errorMessage(err) }),
      ).catch((err) => logger.warn("sip: call failed", { err: errorMessage(err) }));
    }
  })();
  return {
    // The INVITE goes out now; the call runs once answered (POST /calls does not wait for it).
    dial: (to, runId) => {
      const run = sessions.get(runId);
      if (run === undefined) return Promise.reject(new FlowcatError("other", "no such run"));
      agent.call(to).then(
        (call) => calls.run(call.transport, run),
        (err) => logger.warn("sip: outbound call not answered", { runId, err: errorMessage(err) }),
      ).catch((err) => logger.warn("sip: outbound call failed", { runId, err: errorMessage(err) }));
      return Promise.resolve({ callId: `sip-run-${runId}` });
    },
    close: async () => {
      await agent.close();
      await serving;
    },
  };
}
