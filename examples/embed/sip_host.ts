/**
 * Example: a host program that answers SIP calls with Flowcat's in-process SIP agent, its own
 * control plane and brain, and the local echo model (no key, no network beyond the sockets).
 * Every INVITE sent straight to the agent's UDP port opens a run and is answered (100, 180,
 * 200 with PCMU/RFC 4733); the echo model greets with a chime, says back each caller turn, and
 * hangs up (BYE) on keypad `#`.
 *
 * Nothing registers: there is no trunk here, so `server` in the SIP config is only where a
 * `register()` would go (see README.md here to answer a real trunk instead).
 *
 * Run: `deno run --allow-net=127.0.0.1 examples/embed/sip_host.ts --sip-port 5070`, then call
 * `sip:+15550001234@127.0.0.1:5070` from a softphone or sipp on this machine.
 * @module
 */

import { parseArgs } from "node:util";
import {
  consoleLogger,
  errorMessage,
  InMemorySessions,
  type Logger,
  silentLogger,
} from "@flowcat/flowcat";
import { SipAgent, type SipInvite } from "@flowcat/flowcat/sip";
import { runEchoCall } from "./host_call.ts";

/** Options of {@link startSipHost}. */
export interface SipHostOptions {
  /** UDP port for SIP (default 0: a free one). */
  sipPort?: number;
  /** Address to bind SIP and RTP to (default 127.0.0.1). */
  bindHost?: string;
  /** First even RTP port probed (default 16000). */
  rtpPortBase?: number;
  /** Even RTP ports probed from the base, one per concurrent call (default 16). */
  rtpPortTries?: number;
  logger?: Logger;
}

/** A running SIP host. */
export interface SipHost {
  /** The bound SIP port. */
  port: number;
  /** The host's control plane (runs, finalize reports, artifacts). */
  sessions: InMemorySessions;
  /** Hang up running calls (BYE), then close the sockets. */
  close(): Promise<void>;
}

/** Start the SIP agent on `bindHost` and answer every inbound call with the echo agent. */
export async function startSipHost(opts: SipHostOptions = {}): Promise<SipHost> {
  const log = opts.logger ?? silentLogger;
  const bindHost = opts.bindHost ?? "127.0.0.1";
  const sessions = new InMemorySessions();
  const agent = await SipAgent.start({
    server: `sip:${bindHost}`,
    login: "flowcat",
    password: "unused-without-a-trunk",
    callerId: "+15550000000",
    bindHost,
    sipPort: opts.sipPort ?? 0,
    rtpPortBase: opts.rtpPortBase ?? 16000,
    rtpPortTries: opts.rtpPortTries ?? 16,
  }, { logger: log });
  const calls = new Set<Promise<void>>();
  const serving = (async () => {
    for (let invite = await agent.nextInbound(); invite; invite = await agent.nextInbound()) {
      const call = answer(invite, sessions, log).finally(() => calls.delete(call));
      calls.add(call);
    }
  })();
  return {
    port: agent.local.port,
    sessions,
    close: async () => {
      await agent.close();
      await serving;
      await Promise.allSettled(calls);
    },
  };
}

/** Open a run, answer the INVITE and run the call to its end. */
async function answer(invite: SipInvite, sessions: InMemorySessions, log: Logger): Promise<void> {
  const run = sessions.open();
  try {
    const call = await invite.answer();
    log.info("call answered", { runId: run.runId, caller: invite.caller, to: invite.dialled });
    await runEchoCall({ transport: call.transport, sessions, run, logger: log });
    log.info("call ended", { runId: run.runId, reason: await call.ended });
  } catch (err) {
    log.error("call failed", { runId: run.runId, err: errorMessage(err) });
  }
}

/** `--sip-port N` and `--rtp-port-base N`, with a clear error for bad ones. */
function cliOptions(args: string[]): SipHostOptions {
  const { values } = parseArgs({
    args,
    options: {
      "sip-port": { type: "string", default: "5070" },
      "rtp-port-base": { type: "string", default: "16000" },
    },
  });
  const port = (name: string, text: string) => {
    const n = Number(text);
    if (!Number.isInteger(n) || n < 0 || n > 65535) {
      throw new Error(`--${name} must be a port number (0-65535), got ${JSON.stringify(text)}`);
    }
    return n;
  };
  return {
    sipPort: port("sip-port", values["sip-port"]),
    rtpPortBase: port("rtp-port-base", values["rtp-port-base"]),
    logger: consoleLogger("info", "sip-host"),
  };
}

if (import.meta.main) {
  let host: SipHost;
  try {
    host = await startSipHost(cliOptions(Deno.args));
  } catch (err) {
    console.error(errorMessage(err));
    Deno.exit(2);
  }
  console.log(
    `answering SIP on udp 127.0.0.1:${host.port}: call sip:+15550001234@127.0.0.1:${host.port}`,
  );
  Deno.addSignalListener("SIGINT", () => host.close().then(() => Deno.exit(0)));
}
