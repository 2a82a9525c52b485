/**
 * What the connection guard (server/conn_guard.ts) costs on the media hot path: process CPU per
 * carrier-sized WebSocket message (a ~300-byte Twilio media message in, the same size echoed
 * out, as a call's inbound and outbound audio), with the guard in front of `Deno.serve` and
 * without it. Clients and server share this process, so the figure that matters is the
 * difference between the two, run alternately on the same machine.
 *
 * ```sh
 * deno task bench --only guard
 * ```
 * @module
 */

import process from "node:process";
import { silentLogger } from "../core/log.ts";
import { serveGuarded, type ServeHandler } from "../server/conn_guard.ts";
import { maxMediaMessageBytes } from "../server/serve.ts";

/** One run's figures. */
export interface GuardRun {
  /** Process CPU (user + system) per message echoed, microseconds. */
  cpu_us_per_message: number;
  /** Messages echoed per second of wall time. */
  messages_per_second: number;
}

const MESSAGE = JSON.stringify({
  event: "media",
  streamSid: "MZ00000000000000000000000000000000",
  media: { track: "inbound", payload: "f".repeat(216) },
});

const echo: ServeHandler = (req) => {
  const { socket, response } = Deno.upgradeWebSocket(req);
  socket.onmessage = (e) => socket.send(e.data);
  return response;
};

/** Echo `perSocket` messages on each of `sockets` sockets, `window` in flight per socket. */
async function drive(port: number, sockets: number, perSocket: number): Promise<GuardRun> {
  const window = 8;
  const open = await Promise.all(
    Array.from({ length: sockets }, async () => {
      const ws = new WebSocket(`ws://127.0.0.1:${port}/`);
      await new Promise((r) => (ws.onopen = r));
      return ws;
    }),
  );
  const cpu0 = process.cpuUsage();
  const t0 = performance.now();
  await Promise.all(open.map((ws) =>
    new Promise<void>((done) => {
      let sent = 0;
      let got = 0;
      ws.onmessage = () => {
        if (++got === perSocket) return done();
        if (sent < perSocket) {
          ws.send(MESSAGE);
          sent++;
        }
      };
      for (; sent < Math.min(window, perSocket); sent++) ws.send(MESSAGE);
    })
  ));
  const wall = (performance.now() - t0) / 1000;
  const cpu = process.cpuUsage(cpu0);
  for (const ws of open) ws.close();
  const total = sockets * perSocket;
  return {
    cpu_us_per_message: Math.round(((cpu.user + cpu.system) / total) * 100) / 100,
    messages_per_second: Math.round(total / wall),
  };
}

async function once(guarded: boolean, sockets: number, perSocket: number): Promise<GuardRun> {
  if (guarded) {
    const s = await serveGuarded({
      hostname: "127.0.0.1",
      port: 0,
      logger: silentLogger,
      limits: {
        headerTimeoutMs: 10_000,
        idleTimeoutMs: 30_000,
        bodyTimeoutMs: 30_000,
        maxHeaderBytes: 32 * 1024,
        maxPending: 512,
        maxPendingPerClient: 16,
        maxMessageBytes: maxMediaMessageBytes(1000),
      },
    }, echo);
    try {
      return await drive(s.addr.port, sockets, perSocket);
    } finally {
      await s.shutdown();
    }
  }
  const ready = Promise.withResolvers<Deno.NetAddr>();
  const s = Deno.serve({ hostname: "127.0.0.1", port: 0, onListen: ready.resolve }, echo);
  try {
    return await drive((await ready.promise).port, sockets, perSocket);
  } finally {
    await s.shutdown();
  }
}

function median(xs: number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.floor(s.length / 2)];
}

/** Alternate direct and guarded runs; medians and the guard's cost per message. */
export async function runGuardBench(quick: boolean): Promise<Record<string, unknown>> {
  const sockets = 20;
  const perSocket = quick ? 500 : 2000;
  const runs = quick ? 3 : 5;
  await once(false, sockets, 200); // warm up both paths
  await once(true, sockets, 200);
  const direct: GuardRun[] = [];
  const guarded: GuardRun[] = [];
  for (let i = 0; i < runs; i++) {
    direct.push(await once(false, sockets, perSocket));
    guarded.push(await once(true, sockets, perSocket));
  }
  const d = median(direct.map((r) => r.cpu_us_per_message));
  const g = median(guarded.map((r) => r.cpu_us_per_message));
  return {
    message_bytes: MESSAGE.length,
    sockets,
    messages_per_run: sockets * perSocket,
    note: "clients share the process: compare the two, not the absolute figures",
    direct_cpu_us_per_message_p50: d,
    guarded_cpu_us_per_message_p50: g,
    guard_cpu_us_per_message: Math.round((g - d) * 100) / 100,
    direct_messages_per_second_p50: median(direct.map((r) => r.messages_per_second)),
    guarded_messages_per_second_p50: median(guarded.map((r) => r.messages_per_second)),
    runs: { direct, guarded },
  };
}

if (import.meta.main) console.log(JSON.stringify(await runGuardBench(true), null, 2));
