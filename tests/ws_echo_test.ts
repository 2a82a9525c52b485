import assert from "node:assert/strict";
import { runWsEcho } from "../demo/ws_echo.ts";

Deno.test("demo ws-echo: loopback echoes 7, 6 and 64 samples byte for byte", async () => {
  const lines: string[] = [];
  assert.equal(await runWsEcho(undefined, (l) => lines.push(l)), 0, lines.join("\n"));
  assert.deepEqual(lines.slice(2), [
    "stream started: call_id=loopback",
    "frame 1:        7 samples (14 bytes) echoed, identical",
    "frame 2:        6 samples (12 bytes) echoed, identical",
    "frame 3:        64 samples (128 bytes) echoed, identical",
    "stream stopped",
    "loopback OK",
  ]);
});

Deno.test("demo ws-echo --connect: a peer that corrupts the echo fails with a non-zero exit", async () => {
  const server = Deno.serve({ hostname: "127.0.0.1", port: 0, onListen: () => {} }, (req) => {
    const { socket, response } = Deno.upgradeWebSocket(req);
    socket.binaryType = "arraybuffer";
    socket.onmessage = (e) => {
      if (typeof e.data === "string") return;
      const b = new Uint8Array(e.data);
      b[0] ^= 1;
      socket.send(b);
    };
    return response;
  });
  const lines: string[] = [];
  const code = await runWsEcho(`ws://127.0.0.1:${server.addr.port}`, (l) => lines.push(l));
  await server.shutdown();
  assert.equal(code, 1);
  assert.ok(lines.some((l) => l.includes("MISMATCH")));
  assert.equal(lines.at(-1), "loopback FAILED");
});

Deno.test("demo ws-echo --connect rejects a non-WebSocket URL", async () => {
  const lines: string[] = [];
  assert.equal(await runWsEcho("http://127.0.0.1:1", (l) => lines.push(l)), 2);
  assert.match(lines.join("\n"), /needs a ws:\/\/ or wss:\/\/ URL/);
});
