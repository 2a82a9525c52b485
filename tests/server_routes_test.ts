/**
 * The agent server's routes over real HTTP on loopback: health, 404/405/413, the carrier answer
 * webhook (signature), the media WebSocket (token), a whole carrier call through the server,
 * and POST /calls (bearer, E.164).
 */
import assert from "node:assert/strict";
import { Buffer } from "node:buffer";
import { createHash, createHmac } from "node:crypto";
import { silentLogger } from "../core/log.ts";
import { type AgentServer, createAgentServer } from "../server/app.ts";
import { parseConfigText } from "../server/config.ts";
import type { DialRequest } from "../server/outbound.ts";
import { twilioSignature } from "../telephony/security.ts";
import { socketFromWebSocket } from "../telephony/ws_transport.ts";
import { until } from "./_core_helpers.ts";
import { HELLO_BYE_GRAPH } from "./_graph_fixture.ts";

const CONFIG = {
  agent: {
    graph: HELLO_BYE_GRAPH,
  },
  pipeline: "s2s",
  providers: { realtime: { name: "echo", options: { tts: "none", greeting: "hi" } } },
  telephony: { public_url: "https://agent.example.com", carriers: ["twilio", "exotel", "vonage"] },
  limits: { max_body_bytes: 4096 },
  api: { token_env: "FLOWCAT_API_TOKEN" },
};

const ENV: Record<string, string> = {
  TWILIO_AUTH_TOKEN: "twilio-secret",
  EXOTEL_STREAM_USERNAME: "exo",
  EXOTEL_STREAM_PASSWORD: "exo-secret",
  VONAGE_SIGNATURE_SECRET: "vonage-signature-secret-0123",
  FLOWCAT_API_TOKEN: "api-secret",
};

interface Running {
  app: AgentServer;
  base: string;
  dialed: DialRequest[];
  close(): Promise<void>;
}

async function start(): Promise<Running> {
  const r = await parseConfigText(JSON.stringify(CONFIG), "json", ".");
  if (!r.ok) throw new Error(JSON.stringify(r.problems));
  const dialed: DialRequest[] = [];
  const app = await createAgentServer({
    config: r.config,
    env: (n) => ENV[n],
    logger: silentLogger,
    dialer: {
      dial: (req) => {
        dialed.push(req);
        return Promise.resolve({ runId: 99, via: "sip", callId: "c-1" });
      },
    },
  });
  const server = Deno.serve({ hostname: "127.0.0.1", port: 0, onListen: () => {} }, app.handler);
  return {
    app,
    base: `http://127.0.0.1:${server.addr.port}`,
    dialed,
    close: () => server.shutdown(),
  };
}

async function signedAnswer(base: string, path: string, params: Record<string, string>) {
  const sig = await twilioSignature("twilio-secret", `https://agent.example.com${path}`, params);
  return fetch(`${base}${path}`, {
    method: "POST",
    headers: { "content-type": "application/x-www-form-urlencoded", "x-twilio-signature": sig },
    body: new URLSearchParams(params).toString(),
  });
}

Deno.test("server routes: health, playground, 404, 405, 413", async () => {
  const s = await start();
  try {
    const h = await fetch(`${s.base}/healthz`);
    assert.deepEqual(await h.json(), { ok: true, activeCalls: 0, draining: false });
    const page = await fetch(`${s.base}/`);
    assert.equal(page.status, 200);
    assert.match(await page.text(), /<html/i);
    const nf = await fetch(`${s.base}/nope`);
    assert.equal(nf.status, 404);
    assert.deepEqual(await nf.json(), { error: "not found" });
    const wm = await fetch(`${s.base}/healthz`, { method: "POST" });
    assert.equal(wm.status, 405);
    assert.equal(wm.headers.get("allow"), "GET");
    await wm.body?.cancel();
    const big = await fetch(`${s.base}/webrtc/offer`, {
      method: "POST",
      body: JSON.stringify({ sdp: "x".repeat(10_000) }),
    });
    assert.equal(big.status, 413);
    await big.body?.cancel();
  } finally {
    await s.close();
  }
});

Deno.test("server routes: answer webhook checks the signature and the carrier", async () => {
  const s = await start();
  try {
    const params = { CallSid: "CA1", From: "+14155550100", To: "+14155550123" };
    const bad = await fetch(`${s.base}/telephony/answer/twilio`, {
      method: "POST",
      headers: { "x-twilio-signature": "AAAA" },
      body: new URLSearchParams(params).toString(),
    });
    assert.equal(bad.status, 403);
    await bad.body?.cancel();
    const unknown = await signedAnswer(s.base, "/telephony/answer/telnyx", params);
    assert.equal(unknown.status, 404, "a carrier not enabled in the config");
    await unknown.body?.cancel();
    const ok = await signedAnswer(s.base, "/telephony/answer/twilio", params);
    assert.equal(ok.status, 200);
    const twiml = await ok.text();
    assert.match(
      twiml,
      /<Connect><Stream url="wss:\/\/agent\.example\.com\/telephony\/ws\/twilio\/1\?token=/,
    );
    assert.equal(s.app.sessions.get(1)?.carrier, "twilio");
    // Exotel fetches no answer document: authenticated, refused with 404, and no run is made.
    const exotel = await fetch(`${s.base}/telephony/answer/exotel`, {
      method: "POST",
      headers: { authorization: `Basic ${btoa("exo:exo-secret")}` },
      body: "",
    });
    assert.equal(exotel.status, 404);
    assert.match((await exotel.json()).error, /does not fetch answer documents/);
    assert.deepEqual(s.app.sessions.active().map((r) => r.carrier), ["twilio"]);
  } finally {
    await s.close();
  }
});

Deno.test("server routes: a Vonage answer hands the call's uuid back as the call_uuid header", async () => {
  const s = await start();
  try {
    const body = JSON.stringify({ uuid: "u-77", conversation_uuid: "CON-1", from: "1", to: "2" });
    const part = (o: unknown) => Buffer.from(JSON.stringify(o)).toString("base64url");
    const claims = {
      iat: Math.floor(Date.now() / 1000),
      jti: "j-77",
      payload_hash: createHash("sha256").update(body).digest("hex"),
    };
    const signed = `${part({ alg: "HS256", typ: "JWT" })}.${part(claims)}`;
    const sig = createHmac("sha256", ENV.VONAGE_SIGNATURE_SECRET).update(signed).digest(
      "base64url",
    );
    const res = await fetch(`${s.base}/telephony/answer/vonage`, {
      method: "POST",
      headers: { "content-type": "application/json", authorization: `Bearer ${signed}.${sig}` },
      body,
    });
    assert.equal(res.status, 200);
    const ncco = await res.json();
    assert.equal(ncco[0].endpoint[0].headers.call_uuid, "u-77");
    assert.match(ncco[0].endpoint[0].uri, /^wss:\/\/agent\.example\.com\/telephony\/ws\/vonage\//);
  } finally {
    await s.close();
  }
});

Deno.test("server routes: the media socket refuses a bad token before anything runs", async () => {
  const s = await start();
  try {
    const run = await s.app.sessions.createRun("carrier", { carrier: "twilio" });
    const wsUrl = s.base.replace("http", "ws");
    const res = await fetch(`${s.base}/telephony/ws/twilio/${run.runId}?token=wrong`, {
      headers: {
        upgrade: "websocket",
        connection: "Upgrade",
        "sec-websocket-key": "x",
        "sec-websocket-version": "13",
      },
    });
    assert.equal(res.status, 401);
    await res.body?.cancel();
    // No query token: the start message's token is checked; a bad one closes the socket.
    const ws = new WebSocket(`${wsUrl}/telephony/ws/twilio/${run.runId}`);
    const sock = socketFromWebSocket(ws);
    await sock.opened;
    await sock.sendText(JSON.stringify({
      event: "start",
      streamSid: "MZ1",
      start: { streamSid: "MZ1", callSid: "CA1", customParameters: { token: "wrong" } },
    }));
    for (;;) {
      const m = await sock.recv();
      if (m === undefined || m.type === "close") break;
    }
    assert.equal(s.app.calls.active, 0);
    assert.equal(s.app.sessions.get(run.runId)?.finalize, undefined, "never resolved or run");
  } finally {
    await s.close();
  }
});

Deno.test("server routes: a carrier call through answer webhook and media socket", async () => {
  const s = await start();
  try {
    const ans = await signedAnswer(s.base, "/telephony/answer/twilio", { CallSid: "CA9" });
    const twiml = await ans.text();
    const url = new URL(/url="([^"]+)"/.exec(twiml)![1].replaceAll("&amp;", "&"));
    const local = `${s.base.replace("http", "ws")}${url.pathname}${url.search}`;
    const ws = new WebSocket(local);
    const sock = socketFromWebSocket(ws);
    await sock.opened;
    const got: Record<string, unknown>[] = [];
    const reader = (async () => {
      for (;;) {
        const m = await sock.recv();
        if (m === undefined || m.type === "close") break;
        if (m.type === "text") got.push(JSON.parse(m.data));
      }
    })();
    await sock.sendText(JSON.stringify({
      event: "start",
      streamSid: "MZ9",
      start: {
        streamSid: "MZ9",
        callSid: "CA9",
        mediaFormat: { encoding: "audio/x-mulaw", sampleRate: 8000, channels: 1 },
      },
    }));
    await until(() => got.some((m) => m.event === "media"), 5000, "greeting audio");
    assert.equal(s.app.calls.active, 1);
    const runId = Number(url.pathname.split("/").at(-1));
    assert.ok(s.app.sessions.get(runId)?.startedAt, "a started call's run is claimed (no expiry)");
    await sock.sendText(JSON.stringify({ event: "stop", streamSid: "MZ9", stop: {} }));
    await until(() => s.app.sessions.get(runId)?.finalize !== undefined, 5000, "finalized");
    assert.equal(s.app.sessions.get(runId)!.finalize!.usage.endedBy, "end: caller hung up");
    ws.close();
    await reader;
    await until(() => s.app.calls.active === 0, 2000, "call gone");
  } finally {
    await s.close();
  }
});

Deno.test("server routes: POST /calls needs the bearer token and an E.164 number", async () => {
  const s = await start();
  try {
    const post = (body: unknown, token?: string) =>
      fetch(`${s.base}/calls`, {
        method: "POST",
        headers: token ? { authorization: `Bearer ${token}` } : {},
        body: JSON.stringify(body),
      });
    const noAuth = await post({ to: "+14155550123" });
    assert.equal(noAuth.status, 401);
    await noAuth.body?.cancel();
    const wrong = await post({ to: "+14155550123" }, "api-secreT");
    assert.equal(wrong.status, 401);
    await wrong.body?.cancel();
    for (const to of ["0044123456", "+0123", "+1415abc", "+1234567890123456", 14155550123]) {
      const r = await post({ to }, "api-secret");
      assert.equal(r.status, 400, String(to));
      await r.body?.cancel();
    }
    const ok = await post({ to: "+14155550123", via: "sip" }, "api-secret");
    assert.equal(ok.status, 202);
    assert.deepEqual(await ok.json(), { runId: 99, via: "sip", callId: "c-1" });
    assert.equal(s.dialed[0].to, "+14155550123");
  } finally {
    await s.close();
  }
});

Deno.test("server drain: no new calls, a running call is cancelled after the bound and finalized", async () => {
  const s = await start();
  try {
    const ans = await signedAnswer(s.base, "/telephony/answer/twilio", { CallSid: "CA7" });
    const url = new URL(/url="([^"]+)"/.exec(await ans.text())![1].replaceAll("&amp;", "&"));
    const ws = new WebSocket(`${s.base.replace("http", "ws")}${url.pathname}${url.search}`);
    const sock = socketFromWebSocket(ws);
    await sock.opened;
    await sock.sendText(JSON.stringify({
      event: "start",
      streamSid: "MZ7",
      start: { streamSid: "MZ7", callSid: "CA7" },
    }));
    await until(() => s.app.calls.active === 1, 3000, "call running");
    const drained = s.app.calls.drain(300);
    const h = await fetch(`${s.base}/healthz`);
    assert.equal(h.status, 503);
    await h.body?.cancel();
    const refused = await signedAnswer(s.base, "/telephony/answer/twilio", { CallSid: "CA8" });
    assert.equal(refused.status, 503, "no new calls while draining");
    await refused.body?.cancel();
    await drained;
    assert.equal(s.app.calls.active, 0);
    const runId = Number(url.pathname.split("/").at(-1));
    assert.equal(
      s.app.sessions.get(runId)!.finalize!.usage.endedBy,
      "cancel: server shutting down",
    );
    ws.close();
  } finally {
    await s.close();
  }
});

Deno.test("server routes: a malformed Host header is a 400, not a 500", async () => {
  const s = await start();
  try {
    const port = Number(new URL(s.base).port);
    for (const host of ["bad host", "[::1", "%%%"]) {
      const conn = await Deno.connect({ hostname: "127.0.0.1", port });
      await conn.write(
        new TextEncoder().encode(
          `GET /healthz HTTP/1.1\r\nHost: ${host}\r\nConnection: close\r\n\r\n`,
        ),
      );
      const buf = new Uint8Array(256);
      const n = await conn.read(buf);
      conn.close();
      const status = new TextDecoder().decode(buf.subarray(0, n ?? 0)).split("\r\n")[0];
      assert.match(status, /^HTTP\/1\.1 400/, `${host}: ${status}`);
    }
  } finally {
    await s.close();
  }
});
