/**
 * The streaming STT connection state machine (providers/stt_connection.ts) against a loopback
 * WebSocket server: audio held across a redial and capped, a failed redial reported once and
 * retried after the interval, a refusal the client reports, and stop.
 */

import assert from "node:assert/strict";
import { FlowcatError } from "../core/errors.ts";
import { silentLogger } from "../core/log.ts";
import { SttConnection, type SttConnectionOptions } from "../providers/stt_connection.ts";
import { openSocket } from "../providers/ws_client.ts";

const wait = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** Until `ok()` holds, or fail after `ms`. */
async function until(ok: () => boolean, ms = 3000): Promise<void> {
  const end = performance.now() + ms;
  while (!ok()) {
    if (performance.now() > end) throw new Error("timed out waiting");
    await wait(5);
  }
}

/** A WebSocket server on 127.0.0.1 that records what each socket got; `refuse` answers 403. */
class Server {
  refuse = false;
  dials = 0;
  readonly sockets: WebSocket[] = [];
  readonly got: unknown[][] = [];
  readonly #server = Deno.serve({ hostname: "127.0.0.1", port: 0, onListen() {} }, (req) => {
    this.dials++;
    if (this.refuse) return new Response("no", { status: 403 });
    const { socket, response } = Deno.upgradeWebSocket(req);
    const got: unknown[] = [];
    this.got.push(got);
    this.sockets.push(socket);
    socket.addEventListener("message", (ev) => got.push(ev.data));
    return response;
  });
  readonly url = `ws://127.0.0.1:${this.#server.addr.port}/`;
  async close(): Promise<void> {
    for (const s of this.sockets) if (s.readyState === WebSocket.OPEN) s.close(1000);
    await this.#server.shutdown();
  }
}

function connection(
  server: Server,
  extra: Partial<SttConnectionOptions> = {},
): { conn: SttConnection; drained: Uint8Array[][] } {
  const drained: Uint8Array[][] = [];
  const conn = new SttConnection({
    provider: "test",
    log: silentLogger,
    retryIntervalMs: 200,
    reconnectDelayMs: 20,
    backlogMaxBytes: 4,
    dial: (signal) => openSocket(server.url, {}, { provider: "test", timeoutMs: 2000, signal }),
    attach: (ws) => ws.send("hello"),
    drain: (ws, held) => {
      drained.push(held);
      for (const b of held) ws.send(b);
    },
    ...extra,
  });
  return { conn, drained };
}

async function withServer(fn: (server: Server) => Promise<void>): Promise<void> {
  const server = new Server();
  try {
    await fn(server);
  } finally {
    await server.close();
  }
}

Deno.test("stt connection: audio of a redial gap is held, capped, and sent on the new socket", () =>
  withServer(async (server) => {
    const { conn, drained } = connection(server);
    try {
      assert.equal(await conn.start(), true);
      assert.equal(await conn.start(), false);
      await until(() => server.got[0]?.length === 1);
      assert.equal(conn.holding, false);
      server.sockets[0].close(1011);
      await until(() => conn.live === undefined && conn.holding);
      for (const b of [1, 2, 3]) conn.hold(new Uint8Array([b, b]));
      await until(() => conn.live !== undefined);
      // The oldest went past the 4-byte cap; what is left goes after the new socket's hello.
      assert.deepEqual(drained.at(-1), [new Uint8Array([2, 2]), new Uint8Array([3, 3])]);
      await until(() => server.got[1]?.length === 3);
      assert.equal(server.got[1][0], "hello");
      assert.deepEqual(new Uint8Array(server.got[1][2] as ArrayBuffer), new Uint8Array([3, 3]));
    } finally {
      await conn.stop();
    }
  }));

Deno.test("stt connection: a failed redial is thrown once, then redialled after the interval", () =>
  withServer(async (server) => {
    const { conn } = connection(server, { retryIntervalMs: 600 });
    try {
      await conn.start();
      await until(() => server.sockets.length === 1);
      server.refuse = true;
      server.sockets[0].close(1011);
      let thrown: unknown;
      await until(() => {
        conn.exchange(() => {}).catch((e) => (thrown = e));
        return thrown !== undefined;
      });
      assert.ok(thrown instanceof FlowcatError);
      assert.equal(thrown.kind, "auth");
      assert.match(thrown.message, /^test: connection lost/);
      // Failed: nothing is held, and the next exchange neither throws nor redials yet.
      assert.equal(conn.holding, false);
      const dials = server.dials;
      assert.deepEqual(await conn.exchange(() => {}), []);
      assert.equal(server.dials, dials);
      server.refuse = false;
      await wait(650);
      await conn.exchange(() => {});
      await until(() => conn.live !== undefined);
      assert.equal(server.dials, dials + 1);
    } finally {
      await conn.stop();
    }
  }));

Deno.test("stt connection: a refusal the client reports closes the socket and waits", () =>
  withServer(async (server) => {
    const { conn } = connection(server, { retryIntervalMs: 10_000 });
    try {
      await conn.start();
      const ws = conn.socket!;
      const refused = new FlowcatError("auth", "test: key refused");
      conn.fail(refused);
      assert.equal(conn.socket, undefined);
      await until(() => ws.readyState === WebSocket.CLOSED);
      await assert.rejects(conn.exchange(() => {}), (e) => e === refused);
      conn.report(new FlowcatError("protocol", "test: later"));
      await assert.rejects(conn.exchange(() => {}), /test: later/);
      assert.equal(server.dials, 1);
    } finally {
      await conn.stop();
    }
  }));

Deno.test("stt connection: stop says farewell once, closes every socket, ends a dial", async () => {
  await withServer(async (server) => {
    const { conn } = connection(server);
    await conn.start();
    const ws = conn.socket!;
    const frames = [{ kind: "x" }];
    conn.emit(frames[0] as never);
    assert.deepEqual(await conn.exchange(() => {}), frames);
    let farewells = 0;
    await Promise.all([conn.stop(() => farewells++), conn.stop(() => farewells++)]);
    assert.equal(farewells, 1);
    assert.equal(ws.readyState, WebSocket.CLOSED);
    conn.fail(new FlowcatError("auth", "test: late"));
    assert.deepEqual(await conn.exchange(() => {}), []);
  });
  // A server that never answers the upgrade: stop ends the dial at once.
  const listener = Deno.listen({ hostname: "127.0.0.1", port: 0 });
  const held: Deno.Conn[] = [];
  const accepting = (async () => {
    for await (const c of listener) held.push(c);
  })();
  const conn = new SttConnection({
    provider: "test",
    log: silentLogger,
    retryIntervalMs: 200,
    reconnectDelayMs: 0,
    backlogMaxBytes: 0,
    dial: (signal) =>
      openSocket(`ws://127.0.0.1:${listener.addr.port}/`, {}, {
        provider: "test",
        timeoutMs: 10_000,
        signal,
      }),
    attach: () => {},
  });
  const starting = conn.start();
  await wait(50);
  const t0 = performance.now();
  await conn.stop();
  await assert.rejects(starting, /test: connect aborted/);
  assert.ok(performance.now() - t0 < 5000);
  listener.close();
  for (const c of held) c.close();
  await accepting.catch(() => {});
});
