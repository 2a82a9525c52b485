/**
 * A local fake of Amazon Transcribe streaming over WebSocket
 * (`/stream-transcription-websocket`), speaking its wire (docs.aws.amazon.com/transcribe/
 * latest/dg/streaming-websocket.html):
 *
 * - the upgrade must be presigned with SigV4 for the fake's credentials, region and service
 *   `transcribe` (checked as AWS does: _aws_sigv4_verify.ts), else HTTP 403; `language-code`,
 *   `media-encoding=pcm` and `sample-rate` are required, else 400;
 * - binary messages are event-stream `AudioEvent`s, recorded per connection; an empty one ends
 *   the stream (the fake then closes); a message with other headers is answered with a
 *   `BadRequestException`;
 * - the test pushes `TranscriptEvent`s and exceptions, drops the socket, or refuses upgrades.
 *
 * Listens on 127.0.0.1 at an ephemeral port.
 * @module
 */

import {
  encodeMessage,
  EventStreamDecoder,
  headerString,
  stringHeaders,
} from "../../providers/aws/event_stream.ts";
import type { AwsCredentials } from "../../providers/aws/sigv4.ts";
import { verifyPresigned } from "./_aws_sigv4_verify.ts";
import { FAKE_AWS_CREDENTIALS } from "./aws_http_fake.ts";

/** One upgrade as the fake saw it. */
export interface TranscribeUpgrade {
  query: Record<string, string>;
  /** HTTP status answered (101 when upgraded). */
  status: number;
  /** Why it was refused. */
  reason?: string;
}

/** One accepted stream. */
export interface TranscribeConnection {
  socket: WebSocket;
  /** Audio payloads, in order (the empty end-of-stream one excluded). */
  audio: Uint8Array[];
  /** The client sent the empty AudioEvent. */
  ended: boolean;
}

/** One result as the test scripts it. */
export interface FakeTranscribeResult {
  text: string;
  partial: boolean;
  resultId?: string;
}

/** The fake server; the latest accepted connection is current. */
export class TranscribeFake {
  readonly upgrades: TranscribeUpgrade[] = [];
  readonly connections: TranscribeConnection[] = [];
  /** When set, upgrades are refused with this status. */
  refuseWith: number | undefined;
  readonly credentials: AwsCredentials;
  readonly region: string;
  #server: Deno.HttpServer<Deno.NetAddr> | undefined;

  /** A fake accepting `credentials` in `region`. */
  constructor(opts: { credentials?: AwsCredentials; region?: string } = {}) {
    this.credentials = opts.credentials ?? FAKE_AWS_CREDENTIALS;
    this.region = opts.region ?? "us-east-1";
  }

  /** Listen on 127.0.0.1 (ephemeral port). */
  start(): this {
    this.#server = Deno.serve(
      { hostname: "127.0.0.1", port: 0, onListen: () => {} },
      (req) => this.#handle(req),
    );
    return this;
  }

  /** `ws://127.0.0.1:<port>`. */
  get url(): string {
    return `ws://127.0.0.1:${this.#server!.addr.port}`;
  }

  /** The latest accepted connection. */
  get current(): TranscribeConnection | undefined {
    return this.connections.at(-1);
  }

  /** Send a TranscriptEvent with `results` on the current connection. */
  sendResults(results: FakeTranscribeResult[]): void {
    const Results = results.map((r, i) => ({
      ResultId: r.resultId ?? `r${i}`,
      IsPartial: r.partial,
      StartTime: 0.1,
      EndTime: 0.9,
      ChannelId: "ch_0",
      Alternatives: [{ Transcript: r.text, Items: [] }],
    }));
    this.#send(
      {
        ":event-type": "TranscriptEvent",
        ":content-type": "application/json",
        ":message-type": "event",
      },
      { Transcript: { Results } },
    );
  }

  /** Send an exception message (e.g. `LimitExceededException`) on the current connection. */
  sendException(code: string, message: string): void {
    this.#send(
      {
        ":exception-type": code,
        ":content-type": "application/json",
        ":message-type": "exception",
      },
      { Message: message },
    );
  }

  /** Close the current connection abruptly, as a network drop looks to the client. */
  drop(): void {
    this.current?.socket.close(4000, "dropped");
  }

  /** Stop serving and close every connection. */
  async close(): Promise<void> {
    for (const c of this.connections) {
      try {
        c.socket.close();
      } catch { /* already closed */ }
    }
    await this.#server?.shutdown();
  }

  #send(headers: Record<string, string>, body: unknown): void {
    const ws = this.current?.socket;
    if (ws?.readyState !== WebSocket.OPEN) return;
    ws.send(encodeMessage({
      headers: stringHeaders(headers),
      payload: new TextEncoder().encode(JSON.stringify(body)),
    }));
  }

  async #handle(req: Request): Promise<Response> {
    const url = new URL(req.url);
    const query = Object.fromEntries(url.searchParams);
    const refuse = (status: number, reason: string) => {
      this.upgrades.push({ query, status, reason });
      return new Response(JSON.stringify({ message: reason }), { status });
    };
    if (this.refuseWith !== undefined) return refuse(this.refuseWith, "refused by the test");
    if (url.pathname !== "/stream-transcription-websocket") return refuse(404, url.pathname);
    const bad = await verifyPresigned(req, {
      credentials: this.credentials,
      region: this.region,
      service: "transcribe",
    });
    if (bad) return refuse(403, `${bad.code}: ${bad.message}`);
    const rate = Number(query["sample-rate"]);
    if (
      !query["language-code"] || query["media-encoding"] !== "pcm" ||
      !(rate >= 8000 && rate <= 48000)
    ) {
      return refuse(400, "BadRequestException: language-code, media-encoding, sample-rate");
    }
    const { socket, response } = Deno.upgradeWebSocket(req);
    socket.binaryType = "arraybuffer";
    const conn: TranscribeConnection = { socket, audio: [], ended: false };
    this.connections.push(conn);
    this.upgrades.push({ query, status: 101 });
    const decoder = new EventStreamDecoder();
    socket.addEventListener("message", (ev) => {
      if (!(ev.data instanceof ArrayBuffer)) {
        return this.sendException("BadRequestException", "text frame");
      }
      for (const m of decoder.push(new Uint8Array(ev.data))) {
        const ok = headerString(m, ":message-type") === "event" &&
          headerString(m, ":event-type") === "AudioEvent" &&
          headerString(m, ":content-type") === "application/octet-stream";
        if (!ok) {
          this.sendException("BadRequestException", "expected an AudioEvent");
          continue;
        }
        if (m.payload.length === 0) {
          conn.ended = true;
          socket.close(1000);
        } else conn.audio.push(m.payload);
      }
    });
    return response;
  }
}
