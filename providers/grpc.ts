/**
 * Bidirectional-streaming gRPC calls for the providers that speak gRPC (Google Cloud Speech,
 * NVIDIA Riva), on `npm:@grpc/grpc-js` over Deno's `node:http2`. Messages cross this layer as
 * encoded protobuf bytes (see protobuf.ts): each provider encodes its own requests and decodes
 * its own responses, so no `.proto` file is loaded at run time.
 *
 * A call's end is its gRPC status (grpc.github.io/grpc/core/md_doc_statuscodes.html): OK ends
 * the response stream; any other status rejects it with a {@link FlowcatError} naming the
 * provider and the status (`UNAUTHENTICATED`/`PERMISSION_DENIED` are `auth`,
 * `DEADLINE_EXCEEDED` is `timeout`, `UNAVAILABLE` (a refused or dropped connection) and
 * `CANCELLED` are `closed`, the rest `protocol`). Details are the server's; a credential is
 * never put in them.
 *
 * @example
 * ```ts
 * import { GrpcChannel, grpcTarget } from "./grpc.ts";
 * declare const config: Uint8Array;
 * const ch = await GrpcChannel.open("riva", grpcTarget("http://127.0.0.1:50051"));
 * const call = ch.bidi("/nvidia.riva.asr.RivaSpeechRecognition/StreamingRecognize", {});
 * call.write(config);
 * for await (const msg of call.responses) console.log(msg.length);
 * ch.close();
 * ```
 *
 * Permissions: none to import; a channel needs `--allow-net` to the target's `host:port` and
 * the environment grpc-js reads as it loads (`GRPC_*`), or `--ignore-env`.
 * @module
 */

import type * as grpc from "npm:@grpc/grpc-js@1.14.7";
import { Buffer } from "node:buffer";
import { FlowcatError, type FlowcatErrorKind } from "../core/errors.ts";

/** Where a gRPC service listens and how to reach it. */
export interface GrpcTarget {
  /** `host:port`. */
  address: string;
  /** TLS (`https://` URLs) or plaintext HTTP/2 (`http://`, h2c). */
  tls: boolean;
  /** PEM roots to trust instead of the system's (TLS only). */
  caPem?: string;
}

/** The target of `url`: `https://host[:443]` is TLS, `http://host[:80]` plaintext h2c. */
export function grpcTarget(url: string, caPem?: string): GrpcTarget {
  let u: URL;
  try {
    u = new URL(url);
  } catch {
    throw new FlowcatError("config", `not a URL: ${url}`);
  }
  if (u.protocol !== "https:" && u.protocol !== "http:") {
    throw new FlowcatError("config", `gRPC URL must be http:// or https:// (got ${u.protocol})`);
  }
  const tls = u.protocol === "https:";
  // An IPv6 hostname keeps its brackets in a URL, as `host:port` wants it.
  const port = u.port || (tls ? "443" : "80");
  return { address: `${u.hostname}:${port}`, tls, ...(caPem !== undefined ? { caPem } : {}) };
}

/** gRPC status code names, by number. */
const STATUS_NAMES = [
  "OK",
  "CANCELLED",
  "UNKNOWN",
  "INVALID_ARGUMENT",
  "DEADLINE_EXCEEDED",
  "NOT_FOUND",
  "ALREADY_EXISTS",
  "PERMISSION_DENIED",
  "RESOURCE_EXHAUSTED",
  "FAILED_PRECONDITION",
  "ABORTED",
  "OUT_OF_RANGE",
  "UNIMPLEMENTED",
  "INTERNAL",
  "UNAVAILABLE",
  "DATA_LOSS",
  "UNAUTHENTICATED",
];

/** The name of gRPC status `code` (`UNAVAILABLE` for 14). */
export function grpcStatusName(code: number): string {
  return STATUS_NAMES[code] ?? `STATUS_${code}`;
}

function statusKind(code: number, details: string): FlowcatErrorKind {
  if (code === 16 || code === 7) return "auth";
  if (code === 4) return "timeout";
  if (code === 14 || code === 1) return "closed";
  // grpc-js reports a connection cut mid-stream as UNAVAILABLE or, depending on which side of
  // HTTP/2 notices first, as INTERNAL with the stream's reset: both are a closed connection.
  if (
    code === 13 && /RST_STREAM|ECONNRESET|socket hang up|connection (dropped|closed)/i.test(details)
  ) {
    return "closed";
  }
  return "protocol";
}

/** A gRPC status as a FlowcatError: `<provider>: gRPC <NAME>: <details>`. */
export function grpcError(provider: string, code: number, details: string): FlowcatError {
  const err = new FlowcatError(
    statusKind(code, details),
    `${provider}: gRPC ${grpcStatusName(code)}${details ? `: ${details}` : ""}`,
  );
  (err as FlowcatError & { grpcCode?: number }).grpcCode = code;
  return err;
}

/** The gRPC status code of an error from this layer, if it carries one. */
export function grpcCodeOf(err: unknown): number | undefined {
  return (err as { grpcCode?: number } | undefined)?.grpcCode;
}

/** One bidirectional-streaming call. */
export interface GrpcBidiCall {
  /** Send one encoded request message. */
  write(message: Uint8Array): void;
  /** Half-close: no more requests; responses keep coming until the server's status. */
  end(): void;
  /** Cancel the call (the responses end with a `closed` error unless already done). */
  cancel(): void;
  /** Encoded response messages; ends on status OK, throws a FlowcatError on any other. */
  responses: AsyncIterable<Uint8Array>;
}

const toBuffer = (b: Uint8Array): Buffer => Buffer.from(b.buffer, b.byteOffset, b.byteLength);
const fromBuffer = (b: Buffer): Uint8Array => new Uint8Array(b.buffer, b.byteOffset, b.byteLength);

type GrpcJs = typeof grpc;
let grpcJs: Promise<GrpcJs> | undefined;

/**
 * grpc-js, loaded at the first channel: it reads `GRPC_*` variables as it loads, so importing
 * this module (and the export paths over it) needs no permission; opening a channel needs the
 * environment, or `--ignore-env`.
 */
function loadGrpc(): Promise<GrpcJs> {
  return grpcJs ??= import("npm:@grpc/grpc-js@1.14.7");
}

/** One HTTP/2 connection to a gRPC server, shared by the calls made on it. */
export class GrpcChannel {
  readonly #provider: string;
  readonly #grpc: GrpcJs;
  readonly #client: grpc.Client;

  /** A channel to `target`, grpc-js loaded first; it connects on the first call. */
  static async open(provider: string, target: GrpcTarget): Promise<GrpcChannel> {
    return new GrpcChannel(provider, target, await loadGrpc());
  }

  private constructor(provider: string, target: GrpcTarget, grpcModule: GrpcJs) {
    this.#provider = provider;
    this.#grpc = grpcModule;
    const creds = target.tls
      ? grpcModule.credentials.createSsl(target.caPem ? Buffer.from(target.caPem) : null)
      : grpcModule.credentials.createInsecure();
    this.#client = new grpcModule.Client(target.address, creds, {
      // Keep-alive pings find a dead connection during a quiet stretch of a call.
      "grpc.keepalive_time_ms": 30_000,
      "grpc.keepalive_timeout_ms": 10_000,
    });
  }

  /** Start a bidirectional-streaming call of `path` (`/package.Service/Method`). */
  bidi(path: string, metadata: Record<string, string>): GrpcBidiCall {
    const md = new this.#grpc.Metadata();
    for (const [k, v] of Object.entries(metadata)) md.set(k, v);
    const call = this.#client.makeBidiStreamRequest<Uint8Array, Uint8Array>(
      path,
      toBuffer,
      fromBuffer,
      md,
      {},
    );
    const queue: Uint8Array[] = [];
    let done = false;
    let failure: FlowcatError | undefined;
    let wake: (() => void) | undefined;
    const notify = () => {
      const w = wake;
      wake = undefined;
      w?.();
    };
    call.on("data", (m: Uint8Array) => {
      queue.push(m);
      notify();
    });
    call.on("error", (e: grpc.ServiceError) => {
      failure ??= grpcError(this.#provider, e.code ?? 2, e.details ?? e.message);
      done = true;
      notify();
    });
    call.on("status", (s: grpc.StatusObject) => {
      if (s.code !== 0) failure ??= grpcError(this.#provider, s.code, s.details);
      done = true;
      notify();
    });
    async function* responses(): AsyncGenerator<Uint8Array> {
      for (;;) {
        const next = queue.shift();
        if (next !== undefined) {
          yield next;
          continue;
        }
        if (done) {
          if (failure) throw failure;
          return;
        }
        await new Promise<void>((r) => (wake = r));
      }
    }
    return {
      write: (m) => {
        if (!done) call.write(m);
      },
      end: () => {
        if (!done) call.end();
      },
      cancel: () => call.cancel(),
      responses: responses(),
    };
  }

  /** Close the connection; calls still open are cancelled. */
  close(): void {
    this.#client.close();
  }
}
