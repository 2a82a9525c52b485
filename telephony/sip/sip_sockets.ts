/**
 * Binding the agent's signalling sockets: UDP on the SIP port and, when TCP is on, a TCP
 * listener on the same port number. With port 0 (tests) a free UDP port is taken and TCP
 * follows it; when that number is taken for TCP, another UDP port is tried.
 * @module
 */

import { errorMessage, FlowcatError } from "../../core/errors.ts";
import type { Logger } from "../../core/log.ts";
import type { SipSettings } from "./config.ts";
import { SipTcpTransport } from "./tcp.ts";
import { UdpEndpoint } from "./udp.ts";

/** The bound signalling sockets. */
export interface SipSockets {
  /** UDP on the SIP port. */
  udp: UdpEndpoint;
  /** TCP on the same port, when TCP is on. */
  tcp: SipTcpTransport | undefined;
}

function inUse(what: string, host: string, port: number, err: unknown): FlowcatError {
  const why = err instanceof Deno.errors.AddrInUse ? "is already in use" : errorMessage(err);
  return new FlowcatError("config", `${what} ${host}:${port} ${why}`, { cause: err });
}

/** Bind the SIP port(s) of `settings`. Throws a FlowcatError when a port is taken. */
export function bindSipSockets(settings: SipSettings, log: Logger): SipSockets {
  const host = settings.bindHost;
  const tries = settings.tcp && settings.sipPort === 0 ? 20 : 1;
  for (let attempt = 1;; attempt++) {
    let udp: UdpEndpoint;
    try {
      udp = UdpEndpoint.open(host, settings.sipPort, log);
    } catch (err) {
      throw inUse("SIP port", host, settings.sipPort, err);
    }
    if (!settings.tcp) return { udp, tcp: undefined };
    try {
      return { udp, tcp: SipTcpTransport.listen(host, udp.local.port, log) };
    } catch (err) {
      void udp.close();
      if (attempt >= tries || !(err instanceof Deno.errors.AddrInUse)) {
        throw inUse("SIP TCP port", host, udp.local.port, err);
      }
    }
  }
}
