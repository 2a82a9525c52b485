/**
 * Binding the agent's signalling sockets: UDP on the SIP port and, when TCP is on, a TCP
 * listener on the same port number. With port 0 (tests) a free UDP port is taken and TCP
 * follows it; when that number is taken for TCP, another UDP port is tried. TLS listens on its
 * own port when a certificate and key are configured, and can always connect out.
 * @module
 */

import { errorMessage, FlowcatError } from "../../core/errors.ts";
import type { Logger } from "../../core/log.ts";
import type { SipSettings } from "./config.ts";
import type { StreamIdlePolicy } from "./stream_idle.ts";
import { SipTcpTransport, type SipTlsOptions, type StreamPayload } from "./tcp.ts";
import { type DatagramHandler, type UdpAddress, UdpEndpoint } from "./udp.ts";

/** The bound signalling sockets, and sending by the transport a destination names. */
export class SipSockets {
  /** UDP on the SIP port. */
  readonly udp: UdpEndpoint;
  /** TCP on the same port, when TCP is on. */
  readonly tcp: SipTcpTransport | undefined;
  /** TLS: a listener on `tlsPort` when configured; connects out either way. */
  readonly tls: SipTcpTransport;
  readonly #tlsListening: boolean;
  readonly #log: Logger;

  /** Wrap sockets already bound. */
  constructor(
    udp: UdpEndpoint,
    tcp: SipTcpTransport | undefined,
    tls: SipTcpTransport,
    tlsListening: boolean,
    log: Logger,
  ) {
    this.udp = udp;
    this.tcp = tcp;
    this.tls = tls;
    this.#tlsListening = tlsListening;
    this.#log = log;
  }

  /** The TLS listening address, when TLS is accepted. */
  get tlsLocal(): UdpAddress | undefined {
    return this.#tlsListening ? this.tls.local : undefined;
  }

  /**
   * Receive on every socket; a stream that cannot be opened goes to `unreachable`, and stream
   * connections `idle` finds unused are closed.
   */
  start(
    handler: DatagramHandler,
    unreachable: (to: UdpAddress) => void,
    idle?: StreamIdlePolicy,
  ): void {
    this.udp.start(handler);
    this.tcp?.start(handler, unreachable, idle);
    this.tls.start(handler, unreachable, idle);
  }

  /**
   * Put a message on the wire the way `to` is reached: its TCP or TLS connection, or a datagram
   * (a payload encoded per connection is encoded with the UDP port for a datagram).
   */
  send(payload: StreamPayload, to: UdpAddress): void {
    if (to.transport === "tls") this.tls.send(payload, to);
    else if (to.transport === undefined) {
      this.udp.send(typeof payload === "function" ? payload(this.udp.local.port) : payload, to);
    } else if (this.tcp !== undefined) this.tcp.send(payload, to);
    else this.#log.warn("sip: a TCP destination but TCP is off", { to: to.hostname });
  }

  /** Close every socket and wait for their loops. */
  async close(): Promise<void> {
    await Promise.all([this.udp.close(), this.tcp?.close(), this.tls.close()]);
  }
}

function inUse(what: string, host: string, port: number, err: unknown): FlowcatError {
  const why = err instanceof Deno.errors.AddrInUse ? "is already in use" : errorMessage(err);
  return new FlowcatError("config", `${what} ${host}:${port} ${why}`, { cause: err });
}

/** Bind the SIP port(s) of `settings`. Throws a FlowcatError when a port is taken. */
export function bindSipSockets(
  settings: SipSettings,
  tlsOptions: SipTlsOptions,
  log: Logger,
): SipSockets {
  const { udp, tcp } = bindUdpTcp(settings, log);
  const tlsPort = settings.tlsPort;
  try {
    const tls = SipTcpTransport.tls(
      settings.bindHost,
      tlsPort ?? 0,
      tlsPort === undefined ? { caCerts: tlsOptions.caCerts } : tlsOptions,
      log,
    );
    return new SipSockets(udp, tcp, tls, tlsPort !== undefined, log);
  } catch (err) {
    void udp.close();
    void tcp?.close();
    if (err instanceof Deno.errors.AddrInUse) {
      throw inUse("SIP TLS port", settings.bindHost, tlsPort ?? 0, err);
    }
    throw new FlowcatError(
      "config",
      `SIP TLS: the certificate or key cannot be used (${errorMessage(err)})`,
      { cause: err },
    );
  }
}

function bindUdpTcp(
  settings: SipSettings,
  log: Logger,
): { udp: UdpEndpoint; tcp: SipTcpTransport | undefined } {
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
