/**
 * The shared-socket TTS skeleton (providers/tts/_mux_socket.ts, with the utterance loop of
 * providers/tts/_socket_utterance.ts) against a loopback WebSocket server the test drives:
 * routing by id, a message for every utterance, cancel only for an utterance the server did not
 * end, a close mid-utterance, blank text.
 */

import assert from "node:assert/strict";
import { FlowcatError } from "../core/errors.ts";
import type { Frame } from "../core/frames.ts";
import { MuxSocket, type MuxUtterance } from "../providers/tts/_mux_socket.ts";

type Msg = { id?: string; pcm?: number[]; done?: boolean; error?: string; bad?: boolean };

/** A server that records requests and lets the test answer on the latest socket. */
class Server {
  dials = 0;
  socket: WebSocket | undefined;
  readonly got: string[] = [];
  readonly #server = Deno.serve({ hostname: "127.0.0.1", port: 0, onListen() {} }, (req) => {
    this.dials++;
    const { socket, response } = Deno.upgradeWebSocket(req);
    this.socket = socket;
    socket.addEventListener("message", (ev) => this.got.push(String(ev.data)));
    return response;
  });
  readonly url = `ws://127.0.0.1:${this.#server.addr.port}/`;
  send(msg: Msg): void {
    this.socket!.send(JSON.stringify(msg));
  }
  async until(ok: () => boolean): Promise<void> {
    const end = performance.now() + 3000;
    while (!ok()) {
      if (performance.now() > end) throw new Error("timed out waiting");
      await new Promise((r) => setTimeout(r, 5));
    }
  }
  close(): Promise<void> {
    return this.#server.shutdown();
  }
}

function mux(server: Server): MuxSocket<Msg> {
  return new MuxSocket<Msg>({
    provider: "test",
    url: server.url,
    headers: {},
    timeoutMs: 2000,
    secret: "s3cret",
    route: (data) => {
      const msg = JSON.parse(String(data)) as Msg;
      return msg.id === undefined ? { msg } : { id: msg.id, msg };
    },
    hello: () => "hello",
  });
}

function utterance(id: string, cancelled: string[], text = "Hi."): MuxUtterance<Msg> {
  return {
    id,
    text,
    model: "m",
    sampleRate: 16000,
    send: (ws) => ws.send(`say ${id}`),
    step: (msg) => {
      if (msg.error) throw new FlowcatError("other", `test: ${msg.error}`);
      if (msg.bad) return { fault: new FlowcatError("protocol", "test: bad chunk") };
      return { audio: msg.pcm && new Uint8Array(msg.pcm), done: msg.done };
    },
    cancel: () => cancelled.push(id),
  };
}

async function withServer(fn: (server: Server, m: MuxSocket<Msg>) => Promise<void>) {
  const server = new Server();
  const m = mux(server);
  try {
    await fn(server, m);
  } finally {
    await m.stop();
    await server.close();
  }
}

/** Every frame of `it`, or the error it threw. */
async function drain(it: AsyncIterable<Frame>): Promise<Frame[] | unknown> {
  const out: Frame[] = [];
  try {
    for await (const f of it) out.push(f);
    return out;
  } catch (err) {
    return err;
  }
}

Deno.test("tts mux socket: utterances share one socket, each gets its own messages", () =>
  withServer(async (server, m) => {
    await m.start();
    const cancelled: string[] = [];
    const a = drain(m.speak(utterance("a", cancelled)));
    const b = drain(m.speak(utterance("b", cancelled)));
    await server.until(() => server.got.includes("say a") && server.got.includes("say b"));
    assert.equal(server.got[0], "hello");
    server.send({ id: "b", pcm: [1, 0], done: true });
    server.send({ id: "a", pcm: [2, 0] });
    server.send({ id: "a", done: true });
    const [fa, fb] = (await Promise.all([a, b])) as Frame[][];
    const kinds = (fs: Frame[]) => fs.map((f) => f.kind);
    assert.deepEqual(kinds(fa), ["TtsStarted", "TtsAudio", "Metrics", "TtsStopped"]);
    assert.deepEqual(kinds(fb), kinds(fa));
    const pcm = (fs: Frame[]) => fs.flatMap((f) => f.kind === "TtsAudio" ? [...f.audio.pcm] : []);
    assert.deepEqual([pcm(fa), pcm(fb)], [[2], [1]]);
    assert.equal(fa[0].kind === "TtsStarted" && fa[0].contextId, "a");
    assert.deepEqual(cancelled, []);
    assert.equal(server.dials, 1);
  }));

Deno.test("tts mux socket: a server error ends one utterance, a local fault cancels it", () =>
  withServer(async (server, m) => {
    const cancelled: string[] = [];
    const a = drain(m.speak(utterance("a", cancelled)));
    const b = drain(m.speak(utterance("b", cancelled)));
    await server.until(() => server.got.includes("say a") && server.got.includes("say b"));
    server.send({ id: "a", error: "refused" });
    server.send({ id: "b", bad: true });
    assert.match(String(await a), /test: refused/);
    assert.match(String(await b), /test: bad chunk/);
    assert.deepEqual(cancelled, ["b"]);
  }));

Deno.test("tts mux socket: a message without an id and a close reach every utterance", () =>
  withServer(async (server, m) => {
    const cancelled: string[] = [];
    const a = drain(m.speak(utterance("a", cancelled)));
    const b = drain(m.speak(utterance("b", cancelled)));
    await server.until(() => server.got.includes("say a") && server.got.includes("say b"));
    server.send({ error: "overloaded" });
    assert.match(String(await a), /test: overloaded/);
    assert.match(String(await b), /test: overloaded/);
    const c = drain(m.speak(utterance("c", cancelled)));
    await server.until(() => server.got.includes("say c"));
    server.socket!.close(4000, "bye s3cret");
    const err = await c;
    assert.ok(err instanceof FlowcatError);
    assert.equal(err.kind, "closed");
    assert.equal(err.message, "test: socket closed before the audio ended (code 4000): bye ***");
    assert.deepEqual(cancelled, []);
  }));

Deno.test("tts mux socket: an abort cancels at once; blank text dials nothing", () =>
  withServer(async (server, m) => {
    const cancelled: string[] = [];
    assert.deepEqual(
      ((await drain(m.speak(utterance("x", cancelled, "  ")))) as Frame[]).map((f) => f.kind),
      ["TtsStarted", "TtsStopped"],
    );
    assert.equal(server.dials, 0);
    const ac = new AbortController();
    const kinds: string[] = [];
    const speaking = (async () => {
      for await (const f of m.speak(utterance("a", cancelled), ac.signal)) kinds.push(f.kind);
    })();
    await server.until(() => server.got.includes("say a"));
    ac.abort();
    await speaking;
    assert.deepEqual(kinds, ["TtsStarted"]);
    assert.deepEqual(cancelled, ["a"]);
  }));
