// Over 400 lines: one class, SipAgent; sockets, transactions and dialogs are modules.
/**
 * `SipAgent`: Flowcat's in-process SIP user agent over UDP. It binds the SIP port, registers
 * the trunk (`register()`), hands inbound calls to the embedder (`nextInbound()` ->
 * {@link SipInvite} -> `answer()` -> {@link SipCall} whose `transport` is a MediaTransport),
 * places outbound calls (`call(e164)`), answers OPTIONS 200, BYE/CANCEL for unknown dialogs
 * 481, INVITEs without a common codec 488, what RFC 3261 §8.2 refuses (405/501, 416, 420,
 * 415, 406, 482, 483: `uas_checks.ts`), and absorbs retransmissions in its transaction layer. A
 * malformed request that can still be answered gets 400 (505 for another SIP version) with the
 * reason; other malformed datagrams are dropped with a logged reason. The password lives only
 * in the digest credentials: never logged, never in an error message.
 *
 * @example
 * ```ts
 * import { SipAgent } from "@flowcat/flowcat/sip";
 * import type { MediaTransport } from "@flowcat/flowcat";
 * declare const secret: string;
 * declare function runPipeline(transport: MediaTransport): void;
 * const agent = await SipAgent.start({ server: "sip:trunk.example.com", login: "alice",
 *   password: secret, callerId: "+15550001111", publicIp: "203.0.113.7" });
 * await agent.register();
 * for (let inv = await agent.nextInbound(); inv; inv = await agent.nextInbound()) {
 *   const call = await inv.answer();
 *   runPipeline(call.transport); // call.ended resolves on BYE either side
 * }
 * await agent.close();
 * ```
 * @module
 */

import type { SrtpPolicy } from "./sdes.ts";
import { bindSipSockets, type SipSockets } from "./sip_sockets.ts";
import { overStream } from "./tcp_via.ts";
import { type Logger, silentLogger } from "../../core/log.ts";
import { AsyncQueue } from "./async_queue.ts";
import { buildResponse, newBranch, newTag, tagOf } from "./build.ts";
import type { SipCall } from "./call.ts";
import {
  advertisedAddress,
  resolveSipConfig,
  serverAddress,
  type SipConfig,
  type SipSettings,
} from "./config.ts";
import { type AgentCore, ALLOWED_METHODS } from "./core.ts";
import { dialogKeyOfRequest } from "./dialog.ts";
import { type DialOptions, dialTarget } from "./dial.ts";
import type { SipTransferPolicy } from "./transfer_flow.ts";
import { DigestClient } from "./digest.ts";
import { fromCalledPeer, handleInDialog } from "./in_dialog.ts";
import { acceptInvite, type SipInvite } from "./inbound.ts";
import { InboundGate } from "./inbound_gate.ts";
import { KeepAlive } from "./keepalive.ts";
import {
  encodeSipMessage,
  isKeepAlive,
  parseSipMessage,
  type SipHeader,
  type SipRequest,
} from "./message.ts";
import { type CallOptions, placeCall } from "./outbound.ts";
import { Registration, type RegistrationState } from "./register.ts";
import { RtpSession } from "./rtp_session.ts";
import { type ServerTransaction, TransactionLayer } from "./transaction.ts";
import { answerMalformed, checkRequest } from "./uas_checks.ts";
import { warmSipMedia } from "./warm.ts";
import type { StreamTransport, UdpAddress } from "./udp.ts";

import type { SipAgentCounters, SipAgentOptions } from "./agent_options.ts";

export type { SipAgentCounters, SipAgentOptions };

/**
 * The SIP user agent; see the module doc.
 *
 * @example
 * ```ts
 * import { SipAgent } from "@flowcat/flowcat/sip";
 * import type { MediaTransport } from "@flowcat/flowcat";
 * declare const secret: string;
 * declare function runPipeline(transport: MediaTransport): void;
 * const agent = await SipAgent.start({ server: "sip:trunk.example.com", login: "alice",
 *   password: secret, callerId: "+15550001111" });
 * await agent.register();
 * const call = await agent.call("+15550002222"); // resolves once answered
 * runPipeline(call.transport);
 * ```
 */
export class SipAgent implements AgentCore {
  /** Validated settings (no password). */
  readonly settings: SipSettings;
  /** Address advertised in Via, Contact and SDP. */
  readonly advertised: string;
  /** The bound SIP socket address (the real port when sipPort was 0). */
  readonly local: UdpAddress;
  /** The transaction layer (internal; exposed for the call handlers and diagnostics). */
  readonly layer: TransactionLayer;
  /** Where the agent logs. */
  readonly log: Logger;
  /** Answers digest challenges; holds the password privately and never reveals it. */
  readonly digest: DigestClient;
  /** Whether a new INVITE is answered 180 Ringing. */
  readonly sendRinging: boolean;
  /** Unanswered INVITEs get 480 after this long, ms (0: never). */
  readonly answerTimeoutMs: number;
  /** Whether media is encrypted (SRTP with SDES keys). */
  readonly srtp: SrtpPolicy;
  /** How long hangup() waits for the BYE's response, ms. */
  readonly byeWaitMs: number;
  readonly #wire: SipSockets;
  readonly #opts: SipAgentOptions;
  readonly #registration: Registration;
  readonly #inbound = new AsyncQueue<SipInvite>();
  readonly #calls = new Map<string, SipCall>();
  readonly #ringing = new Map<ServerTransaction, SipInvite>();
  readonly #gate: InboundGate;
  readonly #keepAlive: KeepAlive | undefined;
  #malformed = 0;
  #closing: Promise<void> | undefined;

  private constructor(
    settings: SipSettings,
    digest: DigestClient,
    gate: InboundGate,
    sockets: SipSockets,
    opts: SipAgentOptions,
  ) {
    this.settings = settings;
    this.digest = digest;
    this.#gate = gate;
    this.#wire = sockets;
    this.#opts = opts;
    this.log = opts.logger ?? silentLogger;
    this.local = sockets.udp.local;
    const adv = advertisedAddress(settings);
    this.advertised = adv.address;
    if (adv.guessed) {
      this.log.warn("sip: publicIp not set; advertising a guessed address", {
        address: adv.address,
      });
    }
    this.sendRinging = opts.ringing ?? true;
    this.answerTimeoutMs = opts.answerTimeoutMs ?? 60_000;
    this.srtp = opts.rtp?.srtp ?? "off";
    this.byeWaitMs = opts.byeWaitMs ?? 2000;
    this.layer = new TransactionLayer(
      (msg, to) => {
        const kind = to.transport;
        this.#wire.send(
          kind === undefined
            ? encodeSipMessage(msg)
            : (port) => encodeSipMessage(overStream(msg, kind, port)),
          to,
        );
      },
      (req, txn, from) => this.#onRequest(req, txn, from),
      { timers: opts.timers, logger: this.log },
    );
    this.#registration = new Registration({
      layer: this.layer,
      log: this.log,
      server: settings.server,
      login: settings.login,
      digest,
      advertised: this.advertised,
      contactUri: () => this.contactUri(settings.server.transport),
      via: () => this.via(),
      commonHeaders: () => this.commonHeaders(),
    }, opts.registration);
    if (opts.keepAlive !== undefined) {
      const server = settings.server;
      this.#keepAlive = new KeepAlive(
        {
          layer: this.layer,
          log: this.log,
          sendRaw: (bytes, to) => this.#wire.send(bytes, to),
          via: () => this.via(),
          contactUri: () => this.contactUri(settings.server.transport),
          commonHeaders: () => this.commonHeaders(),
        },
        server.uri,
        serverAddress(server),
        opts.keepAlive,
      );
      this.#keepAlive.start();
    }
    sockets.start(
      (bytes, from) => this.#onDatagram(bytes, from),
      (to) => this.layer.unreachable(to),
      { idleMs: opts.streamIdleMs ?? 300_000, inUse: (callId) => this.#streamInUse(callId) },
    );
  }

  /**
   * Validate `config`, bind the SIP port and start receiving. Throws a FlowcatError for a bad
   * config or a SIP port already in use. Does not register: call {@link register}.
   */
  static start(config: SipConfig, opts: SipAgentOptions = {}): Promise<SipAgent> {
    try {
      return Promise.resolve(SipAgent.#startNow(config, opts));
    } catch (err) {
      return Promise.reject(err);
    }
  }

  static #startNow(config: SipConfig, opts: SipAgentOptions): SipAgent {
    const { settings, credentials } = resolveSipConfig(config);
    const gate = new InboundGate(opts.inbound);
    const log = opts.logger ?? silentLogger;
    const sockets = bindSipSockets(settings, config.tls ?? {}, log);
    // Before the first call, not during it: the codecs and the resampler's WebAssembly.
    warmSipMedia();
    const agent = new SipAgent(settings, new DigestClient(credentials), gate, sockets, opts);
    log.info("sip agent started", {
      local: `${agent.local.hostname}:${agent.local.port}`,
      advertised: agent.advertised,
      server: settings.server.hostPort,
    });
    return agent;
  }

  /** The TLS listening address, when the agent accepts SIP over TLS. */
  get tlsLocal(): UdpAddress | undefined {
    return this.#wire.tlsLocal;
  }

  /** True once {@link close} started. */
  get closing(): boolean {
    return this.#closing !== undefined;
  }

  /** Whether a Call-ID is the registration's (while not unregistered), a call's or a ringing INVITE's. */
  #streamInUse(callId: string): boolean {
    const reg = this.#registration;
    if (callId === reg.callId && reg.state !== "unregistered") return true;
    for (const call of this.#calls.values()) if (call.callId === callId) return true;
    for (const invite of this.#ringing.values()) if (invite.callId === callId) return true;
    return false;
  }

  /** Registration state. */
  get registrationState(): RegistrationState {
    return this.#registration.state;
  }

  /** The registration (state, granted expiry, failures). */
  get registration(): Registration {
    return this.#registration;
  }

  /** Calls in progress. */
  get calls(): SipCall[] {
    return [...this.#calls.values()];
  }

  /** Transaction and datagram counters. */
  get counters(): SipAgentCounters {
    return {
      ...this.layer.counters,
      malformed: this.#malformed,
      refusedSources: this.#gate.refusedSources,
    };
  }

  /**
   * REGISTER with the server (digest auth on 401/407). Resolves once registered; rejects with
   * a FlowcatError otherwise, and retries with backoff in the background either way.
   */
  register(): Promise<void> {
    return this.#registration.register();
  }

  /** The next inbound call offer; undefined once the agent is closed. */
  nextInbound(): Promise<SipInvite | undefined> {
    return this.#inbound.next();
  }

  /** Place a call to `toNumber` (E.164, From user = callerId). Resolves once answered. */
  call(toNumber: string, opts?: CallOptions): Promise<SipCall> {
    return placeCall(this, toNumber, opts);
  }

  /** Dial a transfer target (a SIP URI, or a number through the trunk): a second leg. */
  dial(target: string, opts?: DialOptions): Promise<SipCall> {
    return dialTarget(this, target, opts);
  }

  /** How calls transfer beyond REFER (the bridge fallback, warm transfers). */
  get transferPolicy(): SipTransferPolicy | undefined {
    return this.#opts.transfer;
  }

  // ------------------------------------------------------------ AgentCore

  /** A Via for a new request: our advertised address, a fresh branch, rport. */
  via(): string {
    return `SIP/2.0/UDP ${this.advertised}:${this.local.port};branch=${newBranch()};rport`;
  }

  /**
   * `sip:login@advertised:port`; for a dialog or registration over TCP or TLS, the port and
   * `;transport=` of that listener, so the peer's requests come back the same way.
   */
  contactUri(transport?: StreamTransport): string {
    const base = `sip:${this.settings.login}@${this.advertised}`;
    if (transport === "tls" && this.tlsLocal !== undefined) {
      return `${base}:${this.tlsLocal.port};transport=tls`;
    }
    if (transport === "tcp" && this.#wire.tcp !== undefined) {
      return `${base}:${this.local.port};transport=tcp`;
    }
    return `${base}:${this.local.port}`;
  }

  /** User-Agent. */
  commonHeaders(): SipHeader[] {
    return [{ name: "User-Agent", value: this.#opts.userAgent ?? "Flowcat" }];
  }

  /** Bind an RTP port from the configured range. */
  openRtp(): RtpSession {
    const s = this.settings;
    return RtpSession.open({
      bindHost: s.bindHost,
      portBase: s.rtpPortBase,
      portTries: s.rtpPortTries,
      logger: this.log,
      jitterDepth: this.#opts.rtp?.jitterDepth,
      latch: this.#opts.rtp?.latch,
      keepAliveSilence: this.#opts.rtp?.keepAliveSilence,
      rtcpIntervalMs: this.#opts.rtp?.rtcpIntervalMs,
    });
  }

  /** Track an established call until it ends. */
  addCall(call: SipCall): void {
    this.#calls.set(call.key, call);
  }

  /** Forget an ended call. */
  forgetCall(key: string): void {
    this.#calls.delete(key);
  }

  /** Forget a settled INVITE. */
  inviteSettled(txn: ServerTransaction): void {
    this.#ringing.delete(txn);
  }

  // ------------------------------------------------------------ receive path

  #onDatagram(bytes: Uint8Array, from: UdpAddress): void {
    if (isKeepAlive(bytes)) return;
    const r = parseSipMessage(bytes);
    const request = r.ok ? (r.message.kind === "request" ? r.message : undefined) : r.request;
    // The source filter is for who may start things: a called peer's in-dialog requests pass.
    const called = request !== undefined && tagOf(request, "To") !== undefined &&
      fromCalledPeer(this.#calls.get(dialogKeyOfRequest(request)), from);
    if (request !== undefined && !called) {
      const refused = this.#gate.screen(request, from, this.commonHeaders());
      if (refused !== undefined) {
        this.log.debug("sip request from a refused source", {
          from: `${from.hostname}:${from.port}`,
          method: request.method,
          answered: refused?.status ?? "no",
        });
        if (refused !== null) this.layer.sendStateless(refused, from);
        return;
      }
    }
    if (!r.ok) {
      this.#malformed++;
      const answer = answerMalformed(r, this.commonHeaders());
      this.log.debug("sip datagram dropped", {
        reason: r.reason,
        from: `${from.hostname}:${from.port}`,
        answered: answer?.status ?? "no",
      });
      if (answer !== undefined) this.layer.sendStateless(answer, from);
      return;
    }
    this.layer.receive(r.message, from);
  }

  #onRequest(req: SipRequest, txn: ServerTransaction | undefined, _from: UdpAddress): void {
    if (txn === undefined) return; // an ACK that matched nothing: nothing to do
    const reply = (status: number, headers: SipHeader[] = [], reason?: string) =>
      txn.respond(
        buildResponse(req, status, {
          reason,
          toTag: newTag(),
          headers: [...headers, ...this.commonHeaders()],
        }),
      );
    const refusal = checkRequest(req, { merged: this.layer.isMerged(txn) });
    if (refusal !== undefined) {
      this.log.debug("sip request refused", { method: req.method, status: refusal.status });
      return reply(refusal.status, refusal.headers, refusal.reason);
    }
    const unavailable = this.#opts.unavailable?.() === true;
    switch (req.method) {
      case "INVITE": {
        if (tagOf(req, "To") !== undefined) {
          handleInDialog(this, this.#calls.get(dialogKeyOfRequest(req)), txn);
          return;
        }
        if (unavailable) return reply(503);
        const challenge = this.#gate.authorize(req);
        if (challenge !== undefined) return reply(challenge.status, challenge.headers);
        const invite = acceptInvite(this, txn);
        if (invite === undefined) return;
        this.#ringing.set(txn, invite);
        this.log.info("sip inbound invite", { callId: invite.callId, dialled: invite.dialled });
        this.#inbound.push(invite);
        return;
      }
      case "CANCEL": {
        const inviteTxn = this.layer.matchingInvite(req);
        if (inviteTxn === undefined) return reply(481);
        reply(200);
        this.#ringing.get(inviteTxn)?.cancelByCaller();
        return;
      }
      case "OPTIONS":
        if (unavailable) return reply(503);
        return reply(200, [
          { name: "Allow", value: ALLOWED_METHODS },
          { name: "Accept", value: "application/sdp" },
        ]);
      default:
        // BYE and INFO: checkRequest has refused every method the agent does not take.
        return handleInDialog(this, this.#calls.get(dialogKeyOfRequest(req)), txn);
    }
  }

  /**
   * Shut down: ringing invites get 503, calls are hung up (BYE), the binding is removed
   * (Expires: 0), then every timer and socket is closed. Idempotent.
   */
  close(): Promise<void> {
    this.#closing ??= this.#shutdown();
    return this.#closing;
  }

  async #shutdown(): Promise<void> {
    this.#keepAlive?.stop();
    this.#inbound.end();
    for (const invite of [...this.#ringing.values()]) invite.reject(503, "Service Unavailable");
    this.#ringing.clear();
    await Promise.all([
      ...this.calls.map((c) => c.hangup("agent closed")),
      this.#registration.unregister(Math.min(2000, this.byeWaitMs)).catch(() => {}),
    ]);
    this.#registration.close();
    this.layer.close();
    await this.#wire.close();
    this.log.info("sip agent closed", { ...this.counters });
  }
}
