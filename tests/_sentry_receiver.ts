/**
 * A local Sentry-compatible receiver for tests: it accepts `POST /api/<project>/envelope/` and
 * decodes each envelope as Sentry's protocol defines it (a header line, then an item header line
 * and a payload line per item), keeping the raw body and the auth header of every request.
 */

/** One envelope as received. */
export interface ReceivedEnvelope {
  /** Request path (`/api/42/envelope/`). */
  path: string;
  /** The `X-Sentry-Auth` header. */
  auth: string | null;
  contentType: string | null;
  /** The raw body, for looking for secrets. */
  raw: string;
  /** The envelope header (event_id, sent_at, ...). */
  header: Record<string, unknown>;
  /** Items: their header and parsed payload. */
  items: { header: Record<string, unknown>; payload: Record<string, unknown> }[];
}

/** The receiver, on 127.0.0.1 at an ephemeral port from construction. */
export class SentryReceiver {
  readonly envelopes: ReceivedEnvelope[] = [];
  /** Answer every envelope with this status (default 200). */
  status = 200;
  readonly #server: Deno.HttpServer<Deno.NetAddr>;

  constructor() {
    this.#server = Deno.serve(
      { hostname: "127.0.0.1", port: 0, onListen: () => {} },
      (req) => this.#handle(req),
    );
  }

  /** A DSN pointing here, for project `project` with public key `key`. */
  dsn(key = "publickey0123", project = "42"): string {
    return `http://${key}@127.0.0.1:${this.#server.addr.port}/${project}`;
  }

  /** Every event payload received, in order. */
  get events(): Record<string, unknown>[] {
    return this.envelopes.flatMap((e) =>
      e.items.filter((i) => i.header.type === "event").map((i) => i.payload)
    );
  }

  /** Stop listening. */
  async close(): Promise<void> {
    await this.#server.shutdown();
  }

  async #handle(req: Request): Promise<Response> {
    const path = new URL(req.url).pathname;
    const raw = await req.text();
    if (req.method !== "POST" || !/^\/api\/[^/]+\/envelope\/$/.test(path)) {
      return new Response("not found", { status: 404 });
    }
    const lines = raw.split("\n").filter((l) => l !== "");
    const items: ReceivedEnvelope["items"] = [];
    for (let i = 1; i + 1 < lines.length; i += 2) {
      items.push({ header: JSON.parse(lines[i]), payload: JSON.parse(lines[i + 1]) });
    }
    this.envelopes.push({
      path,
      auth: req.headers.get("x-sentry-auth"),
      contentType: req.headers.get("content-type"),
      raw,
      header: JSON.parse(lines[0] ?? "{}"),
      items,
    });
    return Response.json({ id: (JSON.parse(lines[0] ?? "{}") as { event_id?: string }).event_id }, {
      status: this.status,
    });
  }
}
