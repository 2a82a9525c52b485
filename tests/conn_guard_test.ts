/**
 * The connection guard over real sockets: slow request heads cut at the deadline, waiting
 * connections capped per client, idle keep-alive connections closed, WebSocket messages over
 * the cap dropped, the real client address and scheme seen by the handler, TLS.
 */
import assert from "node:assert/strict";
import { silentLogger } from "../core/log.ts";
import { type GuardLimits, serveGuarded, type ServeHandler } from "../server/conn_guard.ts";
import { clientKey } from "../server/guard_net.ts";
import { sleep, until } from "./_core_helpers.ts";

const enc = new TextEncoder();
const dec = new TextDecoder();

const LIMITS: GuardLimits = {
  headerTimeoutMs: 2000,
  idleTimeoutMs: 1500,
  bodyTimeoutMs: 30_000,
  maxHeaderBytes: 8192,
  maxPending: 100,
  maxPendingPerClient: 4,
  maxMessageBytes: 64 * 1024,
};

/** Answers with the client address and URL it saw; upgrades /ws to an echo socket. */
const echoHandler: ServeHandler = (req, info) => {
  const path = new URL(req.url).pathname;
  if (path === "/slow") return sleep(2500).then(() => new Response("late but whole"));
  if (path === "/ws") {
    const { socket, response } = Deno.upgradeWebSocket(req);
    socket.onmessage = (e) =>
      socket.send(typeof e.data === "string" ? `echo:${e.data.length}` : "bin");
    return response;
  }
  // A body cut short rejects; the guard closed that connection, nothing to answer.
  const body = req.method === "POST" ? req.text().catch(() => "") : Promise.resolve(undefined);
  return body.then((text) => Response.json({ remote: info.remoteAddr, url: req.url, text }));
};

async function guarded(limits: Partial<GuardLimits> = {}, tls?: { cert: string; key: string }) {
  return await serveGuarded(
    {
      hostname: "127.0.0.1",
      port: 0,
      limits: { ...LIMITS, ...limits },
      logger: silentLogger,
      ...(tls ? { tls } : {}),
    },
    echoHandler,
  );
}

/** Read until the peer closes; what arrived, and when it closed (ms after `t0`). */
async function readToClose(conn: Deno.Conn, t0: number): Promise<{ text: string; ms: number }> {
  const buf = new Uint8Array(4096);
  let text = "";
  for (;;) {
    const n = await conn.read(buf).catch(() => null);
    if (n === null) break;
    text += dec.decode(buf.subarray(0, n));
  }
  return { text, ms: performance.now() - t0 };
}

/**
 * Write `head`, then `piece(i)` every `everyMs` until the guard closes the connection (at most
 * `times` pieces); what came back, when it closed, and whether it closed before the last piece.
 */
async function trickle(
  conn: Deno.Conn,
  head: string,
  piece: (i: number) => string,
  everyMs: number,
  times: number,
): Promise<{ text: string; ms: number; cutEarly: boolean }> {
  const t0 = performance.now();
  const closed = readToClose(conn, t0);
  let done = false;
  void closed.then(() => (done = true));
  await conn.write(enc.encode(head));
  let i = 0;
  for (; i < times && !done; i++) {
    await sleep(everyMs);
    await conn.write(enc.encode(piece(i))).catch(() => {});
  }
  return { ...(await closed), cutEarly: i < times };
}

Deno.test("guard: a request head sent one line a second is cut at the deadline", async () => {
  const s = await guarded();
  const conn = await Deno.connect({ hostname: "127.0.0.1", port: s.addr.port });
  try {
    const r = await trickle(
      conn,
      "GET / HTTP/1.1\r\nHost: a\r\n",
      (i) => `X-Slow-${i}: 1\r\n`,
      1000,
      8,
    );
    assert.match(r.text, /^HTTP\/1\.1 408/);
    assert.ok(r.ms >= 1900 && r.ms < 4000, `cut after ${Math.round(r.ms)} ms`);
  } finally {
    conn.close();
    await s.shutdown();
  }
});

Deno.test("guard: too many waiting connections from one address; a real request still gets through", async () => {
  const s = await guarded({ headerTimeoutMs: 20_000 });
  const conns: Deno.Conn[] = [];
  try {
    const closed: number[] = [];
    for (let i = 0; i < 10; i++) {
      const c = await Deno.connect({ hostname: "127.0.0.1", port: s.addr.port });
      conns.push(c);
      void readToClose(c, 0).then(() => closed.push(i));
      // Half a head: each one is waiting for the rest.
      await c.write(enc.encode("GET / HTTP/1.1\r\n"));
    }
    // A real request meanwhile: let in, however many are waiting.
    const res = await fetch(`http://127.0.0.1:${s.addr.port}/ok`);
    assert.equal(res.status, 200);
    await res.body?.cancel();
    // Once they have waited a second, the oldest beyond the cap (4) are closed.
    await until(() => closed.length === 6, 3000, "6 closed");
    assert.deepEqual(closed.sort((a, b) => a - b), [0, 1, 2, 3, 4, 5]);
    await sleep(600);
    assert.equal(closed.length, 6, "the cap's worth stay until the header deadline");
    const again = await fetch(`http://127.0.0.1:${s.addr.port}/ok`);
    assert.equal(again.status, 200);
    await again.body?.cancel();
  } finally {
    for (const c of conns) c.close();
    await s.shutdown();
  }
});

Deno.test("guard: an idle keep-alive connection is closed; the handler sees the real client", async () => {
  const s = await guarded();
  const conn = await Deno.connect({ hostname: "127.0.0.1", port: s.addr.port });
  try {
    const buf = new Uint8Array(4096);
    const ask = async () => {
      await conn.write(enc.encode("GET /who HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n"));
      const n = await conn.read(buf);
      return dec.decode(buf.subarray(0, n ?? 0));
    };
    // Requests on one connection, under the idle timeout apart: it stays open.
    for (let i = 0; i < 3; i++) {
      const text = await ask();
      assert.match(text, /^HTTP\/1\.1 200/);
      const body = JSON.parse(text.slice(text.indexOf("\r\n\r\n") + 4));
      assert.deepEqual(body.remote, { ...conn.localAddr }, "the client's own address and port");
      assert.match(body.url, /^http:\/\/127\.0\.0\.1\/who$/);
      await sleep(800);
    }
    const t0 = performance.now();
    const r = await readToClose(conn, t0);
    assert.equal(r.text, "");
    assert.ok(r.ms < 2500, `closed after ${Math.round(r.ms)} ms idle`);
  } finally {
    conn.close();
    await s.shutdown();
  }
});

Deno.test("guard: a handler slower than the idle timeout is not cut; chunked bodies pass", async () => {
  const s = await guarded();
  try {
    const slow = await fetch(`http://127.0.0.1:${s.addr.port}/slow`);
    assert.equal(await slow.text(), "late but whole");
    // A streamed body goes out chunked; the guard follows it to the next request.
    const parts = ["one ", "two ", "three"];
    const body = new ReadableStream<Uint8Array>({
      async pull(c) {
        const p = parts.shift();
        if (p === undefined) return c.close();
        await sleep(50);
        c.enqueue(enc.encode(p));
      },
    });
    const res = await fetch(`http://127.0.0.1:${s.addr.port}/chunked`, { method: "POST", body });
    assert.equal((await res.json()).text, "one two three");
    const after = await fetch(`http://127.0.0.1:${s.addr.port}/after`);
    assert.equal((await after.json()).url, `http://127.0.0.1:${s.addr.port}/after`);
  } finally {
    await s.shutdown();
  }
});

Deno.test("guard: a body trickling in under the idle timeout is cut at the body deadline", async () => {
  const cuts: string[] = [];
  const s = await serveGuarded({
    hostname: "127.0.0.1",
    port: 0,
    limits: { ...LIMITS, bodyTimeoutMs: 1500 },
    logger: silentLogger,
    onCut: (reason) => cuts.push(reason),
  }, echoHandler);
  const conn = await Deno.connect({ hostname: "127.0.0.1", port: s.addr.port });
  try {
    // One byte every 0.3 s: never idle for the 1.5 s idle timeout.
    const head = "POST /b HTTP/1.1\r\nHost: a\r\nContent-Length: 1000\r\n\r\n";
    const r = await trickle(conn, head, () => "x", 300, 25);
    assert.ok(r.cutEarly, "the connection is still open");
    assert.ok(r.ms >= 1400 && r.ms < 4000, `cut after ${Math.round(r.ms)} ms`);
    assert.deepEqual(cuts, ["body_timeout"]);
    // A whole body in time still passes.
    const ok = await fetch(`http://127.0.0.1:${s.addr.port}/b`, { method: "POST", body: "whole" });
    assert.equal((await ok.json()).text, "whole");
  } finally {
    conn.close();
    await s.shutdown();
  }
});

Deno.test("guard: each cut is told with its reason", async () => {
  const cuts: string[] = [];
  const s = await serveGuarded({
    hostname: "127.0.0.1",
    port: 0,
    limits: { ...LIMITS, headerTimeoutMs: 500, maxHeaderBytes: 1024 },
    logger: silentLogger,
    onCut: (reason) => cuts.push(reason),
  }, echoHandler);
  const send = async (bytes: string) => {
    const conn = await Deno.connect({ hostname: "127.0.0.1", port: s.addr.port });
    await conn.write(enc.encode(bytes)).catch(() => {});
    const r = await readToClose(conn, performance.now());
    conn.close();
    return r.text;
  };
  try {
    assert.match(await send(`GET / HTTP/1.1\r\nX: ${"a".repeat(2000)}\r\n\r\n`), /^HTTP\/1\.1 431/);
    assert.match(
      await send("GET / HTTP/1.1\r\nContent-Length: 1\r\nContent-Length: 2\r\n\r\n"),
      / 400/,
    );
    assert.match(await send("GET / HTTP/1.1\r\n"), /^HTTP\/1\.1 408/);
    assert.deepEqual(cuts, ["header_too_large", "bad_framing", "header_timeout"]);
  } finally {
    await s.shutdown();
  }
});

Deno.test("guard: a WebSocket message over the cap drops the connection before the server", async () => {
  const s = await guarded();
  try {
    const ws = new WebSocket(`ws://127.0.0.1:${s.addr.port}/ws`);
    const got: string[] = [];
    const closed = new Promise<void>((r) => ws.addEventListener("close", () => r()));
    ws.onmessage = (e) => got.push(String(e.data));
    await new Promise((r) => (ws.onopen = r));
    ws.send("x".repeat(60 * 1024));
    await until(() => got.length === 1, 3000, "the echo of a message within the cap");
    assert.deepEqual(got, [`echo:${60 * 1024}`]);
    ws.send("x".repeat(30 * 1024 * 1024));
    await closed;
    assert.equal(got.length, 1, "the oversized message never reached the handler");
  } finally {
    await s.shutdown();
  }
});

/**
 * Clients that open TCP and never start TLS: each is cut at the header deadline and counted,
 * so they stop counting against the waiting caps and later clients are served. (Deno 2.9.6
 * keeps the socket of a TLS connection closed before its handshake until the peer goes; the
 * guard's own state for it is gone.)
 */
async function silentTlsClients(cert: string, key: string): Promise<void> {
  const cuts: string[] = [];
  const s = await serveGuarded({
    hostname: "127.0.0.1",
    port: 0,
    tls: { cert, key },
    limits: { ...LIMITS, headerTimeoutMs: 500, maxPending: 3, maxPendingPerClient: 3 },
    logger: silentLogger,
    onCut: (reason) => cuts.push(reason),
  }, echoHandler);
  const silent: Deno.Conn[] = [];
  const client = Deno.createHttpClient({ caCerts: [cert] });
  try {
    for (let i = 0; i < 6; i++) {
      silent.push(await Deno.connect({ hostname: "127.0.0.1", port: s.addr.port }));
    }
    await until(() => cuts.length === 6, 5000, "six silent clients cut");
    // The deadline (500 ms) comes before the caps' eviction (after 1 s) unless a sweep is late.
    for (const c of cuts) assert.ok(["header_timeout", "pending", "pending_client"].includes(c), c);
    assert.ok(cuts.includes("header_timeout"), cuts.join());
    const res = await fetch(`https://localhost:${s.addr.port}/after`, { client });
    assert.equal((await res.json()).url, `https://localhost:${s.addr.port}/after`);
  } finally {
    for (const c of silent) c.close();
    client.close();
    await s.shutdown();
  }
}

Deno.test("guard: TLS is terminated in front; the handler sees https and the client", async () => {
  const dir = await Deno.makeTempDir({ dir: "./.tmp", prefix: "guard-tls-" });
  try {
    const out = await new Deno.Command("openssl", {
      args: [
        "req",
        "-x509",
        "-newkey",
        "ec",
        "-pkeyopt",
        "ec_paramgen_curve:prime256v1",
        "-nodes",
        "-days",
        "1",
        "-subj",
        "/CN=localhost",
        "-addext",
        "subjectAltName=DNS:localhost,IP:127.0.0.1",
        "-addext",
        "basicConstraints=critical,CA:FALSE",
        "-keyout",
        `${dir}/key.pem`,
        "-out",
        `${dir}/cert.pem`,
      ],
      stderr: "piped",
    }).output();
    assert.ok(out.success, dec.decode(out.stderr));
    const cert = await Deno.readTextFile(`${dir}/cert.pem`);
    const key = await Deno.readTextFile(`${dir}/key.pem`);
    const s = await guarded({}, { cert, key });
    const client = Deno.createHttpClient({ caCerts: [cert] });
    try {
      const res = await fetch(`https://localhost:${s.addr.port}/secure`, { client });
      const body = await res.json();
      assert.equal(body.url, `https://localhost:${s.addr.port}/secure`);
      assert.equal(body.remote.hostname, "127.0.0.1");
      const posted = await fetch(`https://localhost:${s.addr.port}/p`, {
        client,
        method: "POST",
        body: "hello over tls",
      });
      assert.equal((await posted.json()).text, "hello over tls");
      // A slow head inside TLS is cut at the deadline like a plain one.
      const tlsConn = await Deno.connectTls({
        hostname: "localhost",
        port: s.addr.port,
        caCerts: [cert],
      });
      await tlsConn.write(enc.encode("GET / HTTP/1.1\r\nHost: localhost\r\n"));
      const r = await readToClose(tlsConn, performance.now());
      tlsConn.close();
      assert.match(r.text, /^HTTP\/1\.1 408/);
      assert.ok(r.ms >= 1500 && r.ms < 4000, `cut after ${Math.round(r.ms)} ms`);
    } finally {
      client.close();
      await s.shutdown();
    }
    await silentTlsClients(cert, key);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("guard: a connection to the hop port that did not come through the guard gets 403", async () => {
  const probe = Deno.listen({ hostname: "127.0.0.1", port: 0 });
  const hopPort = (probe.addr as Deno.NetAddr).port;
  probe.close();
  const s = await serveGuarded({
    hostname: "127.0.0.1",
    port: 0,
    hopPort,
    limits: LIMITS,
    logger: silentLogger,
  }, echoHandler);
  try {
    const direct = await fetch(`http://127.0.0.1:${hopPort}/who`);
    assert.equal(direct.status, 403);
    await direct.body?.cancel();
    const through = await fetch(`http://127.0.0.1:${s.addr.port}/who`);
    assert.equal(through.status, 200);
    await through.body?.cancel();
  } finally {
    await s.shutdown();
  }
});

Deno.test("guard: a hop port in use is a clear error naming server.guard.hop_port", async () => {
  const taken = Deno.listen({ hostname: "127.0.0.1", port: 0 });
  try {
    await assert.rejects(
      serveGuarded({
        hostname: "127.0.0.1",
        port: 0,
        hopPort: (taken.addr as Deno.NetAddr).port,
        limits: LIMITS,
        logger: silentLogger,
      }, echoHandler),
      /server\.guard\.hop_port/,
    );
  } finally {
    taken.close();
  }
});

Deno.test("guard: clients are counted by IPv4 address or IPv6 /64", () => {
  assert.equal(clientKey("203.0.113.7"), "203.0.113.7");
  assert.equal(clientKey("::ffff:203.0.113.7"), "203.0.113.7");
  assert.equal(clientKey("2001:db8:0:1::5"), "2001:db8:0:1");
  assert.equal(clientKey("2001:DB8:0000:0001:aaaa::1"), clientKey("2001:db8::1:bbbb:0:0:2"));
  assert.equal(clientKey("::1"), "0:0:0:0");
});
