/**
 * `SipConfig`, what a SIP agent is started with, and its validation. The password goes
 * straight into {@link DigestCredentials} and is kept nowhere else: the resolved settings hold
 * no password, so logging them cannot leak it, and no error message quotes it.
 * @module
 */

import { FlowcatError } from "../../core/errors.ts";
import { DigestCredentials } from "./digest.ts";
import type { SipTlsOptions } from "./tcp.ts";
import type { StreamTransport, UdpAddress } from "./udp.ts";
import { parseUri } from "./uri.ts";

/** What {@link SipAgent.start} takes. */
export interface SipConfig {
  /** Registrar / proxy SIP URI (`sip:trunk.example.com`, `sip:10.0.0.5:5070`); `sip:` optional. */
  server: string;
  /** SIP auth username; also the user part of our Contact. */
  login: string;
  /** SIP auth password. Never logged, never in an error message, given to no other component. */
  password: string;
  /** Trunk number (E.164) used as the From user on outbound calls. */
  callerId: string;
  /** IPv4 address advertised in Via, Contact and SDP `c=` (NAT); default the bound address. */
  publicIp?: string;
  /** Local SIP signaling port; default 5060 (0 picks a free one, handy in tests). */
  sipPort?: number;
  /** First (even) RTP port probed; default 16000. */
  rtpPortBase?: number;
  /** Even RTP ports probed from the base; default 200 (caps concurrent calls). */
  rtpPortTries?: number;
  /** Local address to bind SIP and RTP sockets to; default 0.0.0.0 (all interfaces). */
  bindHost?: string;
  /**
   * Also accept SIP over TCP on `sipPort`; default false (true when `server` has
   * `;transport=tcp`, which also sends our requests to it over TCP).
   */
  tcp?: boolean;
  /**
   * SIP over TLS: with `cert` and `key` (PEM) the agent accepts TLS on `port` (default 5061, 0
   * picks one); `caCerts` (PEM) are the roots trusted for a `sips:` or `;transport=tls` server
   * (default the system's).
   */
  tls?: { port?: number } & SipTlsOptions;
}

/** Defaults of the optional {@link SipConfig} fields. */
export const SIP_CONFIG_DEFAULTS: Readonly<{
  sipPort: number;
  rtpPortBase: number;
  rtpPortTries: number;
  bindHost: string;
}> = Object.freeze({
  sipPort: 5060,
  rtpPortBase: 16000,
  rtpPortTries: 200,
  bindHost: "0.0.0.0",
});

/** The registrar / proxy we talk to. */
export interface SipServer {
  /** Its URI without user part, the Request-URI of REGISTER (`sip:host[:port]`). */
  uri: string;
  /** Host name or IP. */
  host: string;
  /** Port (5060 when the URI gives none). */
  port: number;
  /** `host` or `host:port` as written in our URIs. */
  hostPort: string;
  /** `tcp` or `tls` when the URI says so (`;transport=`, `sips:`); absent for UDP. */
  transport?: StreamTransport;
}

/** Where requests to `server` go: its host, port and transport. */
export function serverAddress(server: SipServer): UdpAddress {
  const to: UdpAddress = { hostname: server.host, port: server.port };
  if (server.transport !== undefined) to.transport = server.transport;
  return to;
}

/** {@link SipConfig} validated, defaults applied, without the password. */
export interface SipSettings {
  /** The registrar / proxy, parsed from {@link SipConfig.server}. */
  server: SipServer;
  /** SIP auth username; also the user part of our Contact. */
  login: string;
  /** Trunk number (E.164), trimmed; the From user on outbound calls. */
  callerId: string;
  /** IPv4 address advertised in Via, Contact and SDP `c=`, when configured. */
  publicIp?: string;
  /** Local SIP signaling port (0: a free one was requested). */
  sipPort: number;
  /** First (even) RTP port probed. */
  rtpPortBase: number;
  /** How many even RTP ports are probed from {@link SipSettings.rtpPortBase}. */
  rtpPortTries: number;
  /** Local address the SIP and RTP sockets bind to. */
  bindHost: string;
  /** Whether SIP over TCP is accepted on the SIP port. */
  tcp: boolean;
  /** The TLS listening port, when the agent accepts SIP over TLS. */
  tlsPort?: number;
}

const IPV4 = /^(25[0-5]|2[0-4]\d|1\d\d|[1-9]?\d)(\.(25[0-5]|2[0-4]\d|1\d\d|[1-9]?\d)){3}$/;

/** True for a dotted-quad IPv4 address. */
export function isIpv4(value: string): boolean {
  return IPV4.test(value);
}

function port(name: string, value: number | undefined, dflt: number, min: number): number {
  const v = value ?? dflt;
  if (!Number.isInteger(v) || v < min || v > 65535) {
    throw new FlowcatError("config", `SipConfig.${name} must be an integer ${min}..65535`);
  }
  return v;
}

/** Parse `server` (with or without `sip:`) into a {@link SipServer}. */
export function parseServer(server: string): SipServer {
  const text = /^sips?:/i.test(server.trim()) ? server.trim() : `sip:${server.trim()}`;
  const r = parseUri(text);
  if (!r.ok || r.value.host === "" || r.value.scheme === "tel") {
    throw new FlowcatError(
      "config",
      `SipConfig.server must be a SIP URI like sip:trunk.example.com (${
        r.ok ? "no host" : r.reason
      })`,
    );
  }
  const param = r.value.params.get("transport")?.toLowerCase();
  if (param !== undefined && param !== "udp" && param !== "tcp" && param !== "tls") {
    throw new FlowcatError(
      "config",
      `SipConfig.server: transport=${param} is not supported (udp, tcp or tls)`,
    );
  }
  const transport = r.value.scheme === "sips" ? "tls" : param === "udp" ? undefined : param;
  const p = r.value.port ?? (transport === "tls" ? 5061 : 5060);
  const hostPort = r.value.port === undefined ? r.value.host : `${r.value.host}:${p}`;
  const parsed: SipServer = {
    uri: r.value.scheme === "sips"
      ? `sips:${hostPort}`
      : transport === undefined
      ? `sip:${hostPort}`
      : `sip:${hostPort};transport=${transport}`,
    host: r.value.host.replace(/^\[(.*)\]$/, "$1"),
    port: p,
    hostPort,
  };
  if (transport !== undefined) parsed.transport = transport;
  return parsed;
}

/**
 * Validate `config` and split it into password-free settings and the credentials object that
 * alone holds the password.
 */
export function resolveSipConfig(
  config: SipConfig,
): { settings: SipSettings; credentials: DigestCredentials } {
  if (typeof config.login !== "string" || config.login.trim() === "") {
    throw new FlowcatError("config", "SipConfig.login must be a non-empty string");
  }
  if (typeof config.password !== "string") {
    throw new FlowcatError("config", "SipConfig.password must be a string");
  }
  if (typeof config.server !== "string") {
    throw new FlowcatError("config", "SipConfig.server must be a string");
  }
  if (config.publicIp !== undefined && !isIpv4(config.publicIp)) {
    throw new FlowcatError("config", "SipConfig.publicIp must be an IPv4 address");
  }
  const rtpPortBase = port("rtpPortBase", config.rtpPortBase, SIP_CONFIG_DEFAULTS.rtpPortBase, 2);
  if (rtpPortBase % 2 !== 0) {
    throw new FlowcatError("config", "SipConfig.rtpPortBase must be even (RTCP uses port+1)");
  }
  const tries = config.rtpPortTries ?? SIP_CONFIG_DEFAULTS.rtpPortTries;
  if (!Number.isInteger(tries) || tries < 1 || rtpPortBase + 2 * (tries - 1) > 65534) {
    throw new FlowcatError(
      "config",
      "SipConfig.rtpPortTries must be >= 1 and keep the last port at or below 65534",
    );
  }
  const server = parseServer(config.server);
  const settings: SipSettings = {
    server,
    tcp: config.tcp === true || server.transport === "tcp",
    login: config.login.trim(),
    callerId: typeof config.callerId === "string" ? config.callerId.trim() : "",
    sipPort: port("sipPort", config.sipPort, SIP_CONFIG_DEFAULTS.sipPort, 0),
    rtpPortBase,
    rtpPortTries: tries,
    bindHost: config.bindHost ?? SIP_CONFIG_DEFAULTS.bindHost,
  };
  if (config.publicIp !== undefined) settings.publicIp = config.publicIp;
  if (config.tls?.cert !== undefined && config.tls.key !== undefined) {
    settings.tlsPort = port("tls.port", config.tls.port, 5061, 0);
  } else if (config.tls?.cert !== undefined || config.tls?.key !== undefined) {
    throw new FlowcatError("config", "SipConfig.tls needs both cert and key to accept TLS");
  }
  return { settings, credentials: new DigestCredentials(settings.login, config.password) };
}

/**
 * The address to advertise when `public_ip` is unset: the bind address, or for a wildcard bind
 * the first non-loopback IPv4 interface (needs `--allow-sys=networkInterfaces`), else 127.0.0.1.
 */
export function advertisedAddress(settings: SipSettings): { address: string; guessed: boolean } {
  if (settings.publicIp !== undefined) return { address: settings.publicIp, guessed: false };
  if (settings.bindHost !== "0.0.0.0" && settings.bindHost !== "::") {
    return { address: settings.bindHost, guessed: false };
  }
  try {
    for (const nic of Deno.networkInterfaces()) {
      if (nic.family === "IPv4" && !nic.address.startsWith("127.")) {
        return { address: nic.address, guessed: true };
      }
    }
  } catch {
    // No --allow-sys: fall through to loopback and let the caller warn.
  }
  return { address: "127.0.0.1", guessed: true };
}
