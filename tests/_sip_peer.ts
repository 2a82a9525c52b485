/** Test helper: a hand-driven SIP peer on a raw UDP socket (127.0.0.1). */

import { memoryLogger } from "../core/log.ts";
import {
  buildResponse,
  encodeSipMessage,
  getHeader,
  parseSipMessage,
  type ResponseOptions,
  SipAgent,
  type SipAgentOptions,
  type SipConfig,
  type SipMessage,
  type SipRequest,
  type SipResponse,
} from "../telephony/sip/mod.ts";
import { freeEvenPortBase } from "./_sipp.ts";

/** A SipConfig for an agent on 127.0.0.1 with a free RTP range of 4 ports. */
export function loopbackSipConfig(
  trunk: Pick<SipConfig, "server" | "login" | "password" | "callerId">,
  extra: Partial<SipConfig> = {},
): SipConfig {
  return {
    ...trunk,
    bindHost: "127.0.0.1",
    sipPort: 0,
    rtpPortBase: freeEvenPortBase(4),
    rtpPortTries: 4,
    ...extra,
  };
}

/** Start an agent that logs into memory (tests then check the password never shows). */
export async function startLoopbackAgent(config: SipConfig, opts: SipAgentOptions = {}) {
  const logger = memoryLogger();
  const agent = await SipAgent.start(config, { logger, ...opts });
  return { agent, logger };
}

/** A hand-driven SIP peer on a raw UDP socket. */
export class RawPeer {
  readonly conn = Deno.listenDatagram({ transport: "udp", hostname: "127.0.0.1", port: 0 });
  readonly port = (this.conn.addr as Deno.NetAddr).port;
  readonly received: SipMessage[] = [];
  readonly #loop: Promise<void>;

  constructor() {
    this.#loop = (async () => {
      try {
        for (;;) {
          const [bytes] = await this.conn.receive();
          const r = parseSipMessage(bytes);
          if (r.ok) this.received.push(r.message);
        }
      } catch {
        // closed
      }
    })();
  }

  async send(text: string, port: number, hostname = "127.0.0.1"): Promise<void> {
    const wire = text.replace(/\r?\n/g, "\r\n");
    await this.conn.send(new TextEncoder().encode(wire), { transport: "udp", hostname, port });
  }

  async response(status: number, method: string, ms = 2000): Promise<SipResponse> {
    const end = performance.now() + ms;
    for (;;) {
      const m = this.received.find((x) =>
        x.kind === "response" && x.status === status && getHeader(x, "CSeq")?.endsWith(method)
      );
      if (m !== undefined) return m as SipResponse;
      if (performance.now() > end) {
        const seen = this.received.map((x) => x.kind === "response" ? x.status : x.method);
        throw new Error(`no ${status} for ${method}; saw ${seen.join(",")}`);
      }
      await new Promise((r) => setTimeout(r, 5));
    }
  }

  /** The `n`-th (0-based) request of `method` received, waiting up to `ms`. */
  async request(method: string, n = 0, ms = 2000): Promise<SipRequest> {
    const end = performance.now() + ms;
    for (;;) {
      const reqs = this.received.filter((x) => x.kind === "request" && x.method === method);
      if (reqs.length > n) return reqs[n] as SipRequest;
      if (performance.now() > end) throw new Error(`no ${method} #${n}`);
      await new Promise((r) => setTimeout(r, 5));
    }
  }

  /** Answer `req` with `status`, sent to `port`. */
  async reply(req: SipRequest, status: number, port: number, opts: ResponseOptions = {}) {
    await this.conn.send(encodeSipMessage(buildResponse(req, status, opts)), {
      transport: "udp",
      hostname: "127.0.0.1",
      port,
    });
  }

  async close(): Promise<void> {
    this.conn.close();
    await this.#loop;
  }
}
