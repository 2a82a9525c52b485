/**
 * The shared streaming WebSocket STT client (providers/ws_stt.ts) on what the conformance suite
 * does not reach: keep-alive while muted, audio held across a reconnect, a key refused in a
 * message (no immediate redial, retry after the interval), a failed redial, chunking, and
 * waiting for the vendor's session-open message.
 */

import assert from "node:assert/strict";
import { FlowcatError } from "../core/errors.ts";
import type { AudioFrame } from "../core/frames.ts";
import { type SttEvent, WsStt, type WsSttDialect } from "../providers/ws_stt.ts";
import { toneFrames } from "./_stt_conformance.ts";
import { startParams } from "./_tts_conformance.ts";
import { type WsFakeConn, WsSttFake } from "./fakes/_ws_stt_fake.ts";

const EMPTY: AudioFrame = { pcm: new Int16Array(0), sampleRate: 16000, numChannels: 1 };
const wait = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** A vendor that takes everything; `{"refuse":true}` from the test makes it refuse the key. */
class TestFake extends WsSttFake {
  refuseNext = false;
  readonly sizes: number[] = [];
  protected check(): Response | undefined {
    return undefined;
  }
  protected override onOpen(conn: WsFakeConn): void {
    conn.ready = true;
    conn.socket.addEventListener("message", (ev) => {
      if (ev.data instanceof ArrayBuffer) this.sizes.push(ev.data.byteLength);
    });
    if (this.refuseNext) conn.socket.send(JSON.stringify({ fault: "auth" }));
    else conn.socket.send(JSON.stringify({ hello: true }));
  }
  transcript(text: string): unknown[] {
    return [{ final: text }];
  }
}

function dialect(fake: TestFake, extra: Partial<WsSttDialect> = {}): WsSttDialect {
  return {
    sampleRate: 16000,
    endpoint: () => Promise.resolve({ url: `${fake.url}/x`, headers: {} }),
    audio: (pcm) => pcm,
    parse(data): SttEvent[] {
      const m = JSON.parse(String(data));
      if (m.hello) return [{ type: "ready" }];
      if (m.fault) return [{ type: "error", kind: "auth", message: "key refused" }];
      if (m.final) return [{ type: "final", text: m.final }, { type: "end" }];
      return [];
    },
    ...extra,
  };
}

async function withClient(
  extra: Partial<WsSttDialect>,
  options: Record<string, unknown>,
  fn: (stt: WsStt, fake: TestFake) => Promise<void>,
): Promise<void> {
  const fake = new TestFake().start();
  const stt = new WsStt({ provider: "test", options }, dialect(fake, extra));
  try {
    await fn(stt, fake);
  } finally {
    await stt.stop();
    await fake.close();
  }
}

Deno.test("ws stt: the keep-alive goes only while no audio flows", () =>
  withClient({ keepalive: { message: "KA", everyMs: 40 } }, {}, async (stt, fake) => {
    await stt.start(startParams(16000));
    const conn = await fake.waitForSession();
    stt.setMuted(true);
    for (const f of toneFrames(0.2, 16000)) await stt.runStt(f), await wait(1);
    await wait(150);
    assert.equal(conn.audioBytes, 0);
    assert.ok(conn.messages.filter((m) => m === "KA").length >= 2, "no keep-alive while muted");
    stt.setMuted(false);
    const before = conn.messages.length;
    for (let i = 0; i < 10; i++) await stt.runStt(toneFrames(0.02, 16000)[0]), await wait(10);
    assert.equal(conn.messages.length, before, "keep-alive sent while audio flowed");
  }));

Deno.test("ws stt: audio in a reconnect gap is sent on the new socket", () =>
  withClient({}, { reconnect_delay_ms: 150 }, async (stt, fake) => {
    await stt.start(startParams(16000));
    await fake.waitForSession();
    await fake.drop();
    await wait(20);
    for (const f of toneFrames(0.1, 16000)) await stt.runStt(f);
    const conn = await fake.waitForSession(2);
    await fake.waitForAudio(conn);
    await wait(30);
    assert.equal(conn.audioBytes, 3200, "0.1 s at 16 kHz held and sent");
  }));

Deno.test("ws stt: a key refused in a message is thrown and retried after the interval", () =>
  withClient({ awaitReady: false }, { retry_interval_ms: 200 }, async (stt, fake) => {
    fake.refuseNext = true;
    await stt.start(startParams(16000));
    await wait(50);
    await assert.rejects(
      stt.runStt(EMPTY),
      (e: unknown) =>
        e instanceof FlowcatError && e.kind === "auth" && /^test: key refused/.test(e.message),
    );
    await stt.runStt(EMPTY);
    await wait(50);
    assert.equal(fake.connections.length, 1, "redialled before the retry interval");
    fake.refuseNext = false;
    await wait(200);
    await stt.runStt(EMPTY);
    await fake.waitForSession(2);
    fake.send(fake.transcript("back again"));
    await wait(50);
    const frames = await stt.runStt(EMPTY);
    assert.deepEqual(frames.map((f) => "text" in f ? f.text : f.kind), ["back again"]);
  }));

Deno.test("ws stt: start waits for the session and fails on a refusal message", async () => {
  const fake = new TestFake().start();
  fake.refuseNext = true;
  const stt = new WsStt({ provider: "test" }, dialect(fake, { awaitReady: true }));
  try {
    await assert.rejects(
      stt.start(startParams(16000)),
      (e: unknown) => e instanceof FlowcatError && e.kind === "auth",
    );
  } finally {
    await stt.stop();
    await fake.close();
  }
});

Deno.test("ws stt: a failed redial is thrown once, then retried", async () => {
  const fake = new TestFake().start();
  let refuse = false;
  const d = dialect(fake, {
    endpoint: () =>
      refuse
        ? Promise.reject(new FlowcatError("closed", "test: could not connect"))
        : Promise.resolve({ url: `${fake.url}/x`, headers: {} }),
  });
  const stt = new WsStt({
    provider: "test",
    options: { reconnect_delay_ms: 5, retry_interval_ms: 100 },
  }, d);
  try {
    await stt.start(startParams(16000));
    refuse = true;
    await fake.drop();
    await wait(50);
    await assert.rejects(stt.runStt(EMPTY), /^FlowcatError: test: connection lost/);
    assert.deepEqual(await stt.runStt(EMPTY), []);
    refuse = false;
    await wait(120);
    await stt.runStt(EMPTY);
    await fake.waitForSession(2);
  } finally {
    await stt.stop();
    await fake.close();
  }
});

Deno.test("ws stt: audio goes in chunks of chunkMs", () =>
  withClient({ chunkMs: 100 }, {}, async (stt, fake) => {
    await stt.start(startParams(16000));
    for (const f of toneFrames(0.5, 8000)) await stt.runStt(f);
    await wait(50);
    // 20 ms frames: 100 ms (3200 bytes at 16 kHz) is reached every fifth frame.
    assert.deepEqual(fake.sizes, [3200, 3200, 3200, 3200, 3200]);
  }));

Deno.test("ws stt: stop while waiting for the session ends the wait at once", async () => {
  const fake = new TestFake().start();
  // A dialect waiting for a ready message this fake never sends.
  const d = dialect(fake, { awaitReady: true, parse: () => [] });
  const stt = new WsStt({ provider: "test", timeoutMs: 10_000 }, d);
  try {
    const started = stt.start(startParams(16000)).catch((e: unknown) => e);
    await fake.waitForSession();
    const t0 = performance.now();
    await stt.stop();
    const err = await started;
    assert.ok(performance.now() - t0 < 2000, "stop waited for the session deadline");
    assert.ok(err instanceof FlowcatError && err.kind === "closed", String(err));
  } finally {
    await stt.stop();
    await fake.close();
  }
});
