/**
 * The agent server's SIP trunk: registers at start when `register` is on (refresh and backoff
 * run on their own), otherwise serves as a trunk by IP behind a carrier, SBC, PBX or proxy;
 * applies the inbound source allowlist and digest challenge, keeps the NAT mapping open,
 * answers every admitted INVITE with a new run on the server's agent, answers OPTIONS and new
 * INVITEs 503 while draining, and places outbound calls for `POST /calls` with `via: "sip"`.
 * Passwords are read from the variables the config names and handed to the SIP agent only.
 *
 * Inbound identity comes from the route (this server serves one agent), never from the
 * INVITE body.
 * @module
 */

import { errorMessage, FlowcatError } from "../core/errors.ts";
import type { Logger } from "../core/log.ts";
import { SipAgent, type SipAgentOptions } from "../telephony/sip/agent.ts";
import { DigestCredentials } from "../telephony/sip/digest.ts";
import type { InboundPolicy } from "../telephony/sip/inbound_gate.ts";
import type { LatchMode } from "../telephony/sip/rtp_source.ts";
import { parseIp } from "../telephony/sip/source_filter.ts";
import { parseUri } from "../telephony/sip/uri.ts";
import type { CallManager, EnvGet } from "./calls.ts";
import type { SipTrunkConfig } from "./config.ts";
import { readSipTlsFiles } from "./sip_tls.ts";
import { readHoldAudio } from "./hold_audio.ts";
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
  /** Transaction timers (tests shorten T1). */
  timers?: SipAgentOptions["timers"];
}

/** The config's `rtp_source` as the RTP session's latch mode. */
const LATCH: Readonly<Record<SipTrunkConfig["rtpSource"], LatchMode>> = {
  latch: "port",
  sdp: "off",
  any: "any",
};

/** A variable the config names, or a config error saying which one is missing. */
function secret(env: EnvGet, name: string, what: string): string {
  const value = env(name);
  if (value === undefined || value === "") {
    throw new FlowcatError("config", `${name} is not set (${what})`);
  }
  return value;
}

/**
 * The inbound policy of `sip`: with the filter on, the allowed sources are `inbound.allow` plus
 * the server's address when it is an IP (a hostname's addresses must be listed).
 */
export function inboundPolicy(sip: SipTrunkConfig, env: EnvGet): InboundPolicy {
  const policy: InboundPolicy = { refused: sip.inbound.refused };
  if (sip.inbound.filter) {
    const allow = [...sip.inbound.allow];
    const uri = parseUri(sip.server);
    const host = uri.ok ? uri.value.host.replace(/^\[(.*)\]$/, "$1") : "";
    if (parseIp(host) !== undefined && !allow.includes(host)) allow.push(host);
    policy.allow = allow;
  }
  const auth = sip.inbound.auth;
  if (auth !== undefined) {
    const password = secret(env, auth.passwordEnv, "the password inbound SIP callers present");
    policy.auth = {
      realm: auth.realm,
      credentials: new DigestCredentials(auth.username, password),
      proxy: auth.challenge === 407,
      algorithms: auth.algorithms,
    };
  }
  return policy;
}

/** Start the SIP agent, register when configured, and serve inbound calls until closed. */
export async function startSipTrunk(opts: SipTrunkOptions): Promise<SipTrunk> {
  const { sip, calls, sessions, logger } = opts;
  const password = sip.register
    ? secret(opts.env, sip.passwordEnv ?? "", "the SIP trunk password")
    : (sip.passwordEnv === undefined ? "" : opts.env(sip.passwordEnv) ?? "");
  const inbound = inboundPolicy(sip, opts.env);
  const tls = sip.tls === undefined ? undefined : await readSipTlsFiles(sip.tls);
  const holdFile = sip.transfer.holdAudioFile;
  const holdAudio = holdFile === undefined ? undefined : await readHoldAudio(holdFile);
  const agent = await SipAgent.start({
    server: sip.server,
    login: sip.login,
    password,
    callerId: sip.callerId,
    sipPort: sip.sipPort,
    tcp: sip.tcp,
    ...(tls !== undefined ? { tls } : {}),
    rtpPortBase: sip.rtpPortBase,
    rtpPortTries: sip.rtpPortTries,
    ...(sip.publicIp !== undefined ? { publicIp: sip.publicIp } : {}),
    ...(opts.bindHost !== undefined ? { bindHost: opts.bindHost } : {}),
  }, {
    logger,
    inbound,
    registration: { expires: sip.registerExpires },
    rtp: { latch: LATCH[sip.rtpSource], srtp: sip.srtp },
    unavailable: () => calls.draining,
    transfer: {
      bridgeFallback: sip.transfer.bridgeFallback,
      dialTimeoutMs: sip.transfer.dialTimeoutSeconds * 1000,
      ...(holdAudio !== undefined ? { holdAudio } : {}),
      // A bridged call has left the pipeline, but a drain still waits for it (up to its
      // deadline): the caller is talking to a person.
      onBridge: (ended) => {
        const ticket = calls.admit();
        void ended.finally(() => ticket.release());
      },
    },
    streamIdleMs: sip.streamIdleSeconds * 1000,
    ...(sip.keepalive.mode === "off" ? {} : {
      keepAlive: { mode: sip.keepalive.mode, intervalMs: sip.keepalive.intervalSeconds * 1000 },
    }),
    ...(opts.timers !== undefined ? { timers: opts.timers } : {}),
  });
  if (sip.register) {
    agent.register().then(
      () => logger.info("sip: registered", { server: sip.server }),
      (err) => logger.warn("sip: registration failed; retrying", { err: errorMessage(err) }),
    );
  } else {
    logger.info("sip: not registering (register: false)", {
      server: sip.server,
      sources: inbound.allow?.join(", ") ?? "any",
      auth: inbound.auth === undefined ? "none" : `digest ${inbound.auth.proxy ? 407 : 401}`,
    });
  }
  const serving = (async () => {
    for (;;) {
      const invite = await agent.nextInbound();
      if (invite === undefined) return;
      const refused = calls.refusal();
      if (refused !== undefined) {
        invite.reject(refused === "server is draining" ? 503 : 486);
        continue;
      }
      // Accepted now: the call starts once answered even if a drain begins meanwhile.
      const ticket = calls.admit();
      const run = await sessions.createRun("sip");
      invite.answer().then(
        (call) => calls.run(call.transport, run, {}, ticket),
        (err) => {
          ticket.release();
          logger.warn("sip: answer failed", { runId: run.runId, err: errorMessage(err) });
        },
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
