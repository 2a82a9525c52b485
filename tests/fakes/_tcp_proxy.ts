/**
 * A TCP relay in front of a local fake server, so a test can cut one connection the way a
 * network does: both TCP sockets closed, no WebSocket close frame, the client sees code 1006.
 * @module
 */

interface Pair {
  client: Deno.Conn;
  upstream: Deno.Conn;
}

/** Relays 127.0.0.1:<port> to an upstream port; connections are known by their upstream port. */
export class TcpProxy {
  readonly #listener: Deno.Listener;
  readonly #pairs = new Map<number, Pair>();
  readonly #tasks = new Set<Promise<void>>();
  #closed = false;

  /** Listen on an ephemeral 127.0.0.1 port and relay to `upstreamPort`. */
  constructor(readonly upstreamPort: number) {
    this.#listener = Deno.listen({ hostname: "127.0.0.1", port: 0 });
    this.#track(this.#acceptLoop());
  }

  /** The port clients dial. */
  get port(): number {
    return (this.#listener.addr as Deno.NetAddr).port;
  }

  /** Cut the connection whose upstream side has local port `upstreamLocalPort`. */
  cut(upstreamLocalPort: number): void {
    const pair = this.#pairs.get(upstreamLocalPort);
    if (!pair) throw new Error(`TcpProxy: no connection from port ${upstreamLocalPort}`);
    this.#pairs.delete(upstreamLocalPort);
    for (const c of [pair.client, pair.upstream]) {
      try {
        c.close();
      } catch { /* already closed */ }
    }
  }

  /** Stop listening and cut every connection. */
  async close(): Promise<void> {
    this.#closed = true;
    this.#listener.close();
    for (const port of [...this.#pairs.keys()]) this.cut(port);
    await Promise.allSettled([...this.#tasks]);
  }

  async #acceptLoop(): Promise<void> {
    while (!this.#closed) {
      let client: Deno.Conn;
      try {
        client = await this.#listener.accept();
      } catch {
        return;
      }
      let upstream: Deno.Conn;
      try {
        upstream = await Deno.connect({ hostname: "127.0.0.1", port: this.upstreamPort });
      } catch {
        client.close();
        continue;
      }
      const port = (upstream.localAddr as Deno.NetAddr).port;
      this.#pairs.set(port, { client, upstream });
      this.#track(this.#pipe(client, upstream, port));
      this.#track(this.#pipe(upstream, client, port));
    }
  }

  async #pipe(from: Deno.Conn, to: Deno.Conn, port: number): Promise<void> {
    const buf = new Uint8Array(64 * 1024);
    try {
      for (;;) {
        const n = await from.read(buf);
        if (n === null) break;
        let off = 0;
        while (off < n) off += await to.write(buf.subarray(off, n));
      }
    } catch { /* cut */ }
    // One side ended: end the pair, as a relay in the path would.
    if (this.#pairs.has(port)) this.cut(port);
  }

  #track(p: Promise<void>): void {
    this.#tasks.add(p);
    p.finally(() => this.#tasks.delete(p));
  }
}
