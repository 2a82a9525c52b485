/**
 * Carrier transfers over REST against local fakes of each carrier's API: a Twilio call driven
 * through the real agent server (answer webhook, media socket, echo model calling the graph's
 * pinned transfer_call), and the transfer client for SignalWire, Telnyx and Vonage directly
 * (Plivo: tests/plivo_transfer_test.ts):
 * request shape, auth header, target, and the failures the model is told.
 */
import assert from "node:assert/strict";
import { memoryLogger } from "../core/log.ts";
import { createAgentServer } from "../server/app.ts";
import { parseConfigText } from "../server/config.ts";
import { carrierTransfer } from "../telephony/carrier_transfer.ts";
import { until } from "./_core_helpers.ts";
import { pinnedTransferGraph } from "./_graph_fixture.ts";
import { dialTwilio } from "./_twilio_client.ts";

interface Seen {
  method: string;
  path: string;
  auth: string;
  type: string;
  body: string;
}

/** A fake carrier API: records each request and answers `status` with `answer`. */
function fakeApi(status = 200, answer: unknown = { sid: "CA1", status: "in-progress" }) {
  const seen: Seen[] = [];
  const server = Deno.serve({ hostname: "127.0.0.1", port: 0, onListen: () => {} }, async (r) => {
    const url = new URL(r.url);
    seen.push({
      method: r.method,
      path: url.pathname,
      auth: r.headers.get("authorization") ?? "",
      type: r.headers.get("content-type") ?? "",
      body: await r.text(),
    });
    return status === 204 ? new Response(null, { status }) : Response.json(answer, { status });
  });
  return { seen, baseUrl: `http://127.0.0.1:${server.addr.port}`, close: () => server.shutdown() };
}

const basic = (u: string, p: string) => `Basic ${btoa(`${u}:${p}`)}`;
const TARGET = "+15550100";

Deno.test("server Twilio call: transfer_call updates the call with <Dial> TwiML, ends transferred", async () => {
  const api = fakeApi();
  const graph = pinnedTransferGraph(TARGET);

  const config = {
    agent: { graph },
    pipeline: "s2s",
    providers: { realtime: { name: "echo", options: { tts: "none", greeting: "hi" } } },
    telephony: { public_url: "https://agent.example.com", carriers: ["twilio"] },
  };
  const r = await parseConfigText(JSON.stringify(config), "json", ".");
  if (!r.ok) throw new Error(JSON.stringify(r.problems));
  const vars: Record<string, string> = {
    TWILIO_AUTH_TOKEN: "tw-secret",
    TWILIO_ACCOUNT_SID: "AC9",
  };
  const logger = memoryLogger();
  const app = await createAgentServer({
    config: r.config,
    env: (n) => vars[n],
    logger,
    carrierApi: { baseUrl: api.baseUrl },
  });
  const server = Deno.serve({ hostname: "127.0.0.1", port: 0, onListen: () => {} }, app.handler);
  try {
    const { call, runId } = await dialTwilio(`http://127.0.0.1:${server.addr.port}`, {
      secret: "tw-secret",
      publicUrl: "https://agent.example.com",
      callSid: "CA1",
    });
    await until(() => call.got.some((m) => m.event === "media"), 5000, "greeting");
    await call.dtmf("2"); // the echo model calls its second tool: transfer_call
    await until(() => api.seen.length > 0, 5000, "transfer request");
    const req = api.seen[0];
    assert.equal(req.method, "POST");
    assert.equal(req.path, "/2010-04-01/Accounts/AC9/Calls/CA1.json");
    assert.equal(req.auth, basic("AC9", "tw-secret"));
    assert.equal(req.type, "application/x-www-form-urlencoded");
    const twiml = new URLSearchParams(req.body).get("Twiml") ?? "";
    assert.match(twiml, /<Response><Dial><Number>\+15550100<\/Number><\/Dial><\/Response>$/);
    const run = app.sessions.get(runId)!;
    await until(() => run.finalize !== undefined, 5000, "finalized");
    assert.equal(run.finalize!.disposition, "transferred");
    assert.equal(run.finalize!.usage.endedBy, "end: brain: transferred");
    await call.ended;
    const lines = JSON.parse(
      new TextDecoder().decode(app.sessions.memoryArtifact(`run-${runId}-transcript.json`)!),
    ).lines as { role: string; text: string; tool?: string }[];
    const tool = lines.find((l) => l.role === "tool" && l.tool === "transfer_call");
    assert.deepEqual(JSON.parse(tool?.text ?? "null"), { ok: true, transferred: TARGET });
    await call.close();
  } finally {
    await app.calls.drain(1000);
    await server.shutdown();
    await app.close();
    await api.close();
  }
});

Deno.test("SignalWire: LaML call update under /api/laml with Basic auth and <Sip> target", async () => {
  const api = fakeApi();
  try {
    const env: Record<string, string> = {
      SIGNALWIRE_PROJECT_ID: "p-1",
      SIGNALWIRE_API_TOKEN: "sw-token",
      SIGNALWIRE_SPACE_URL: "example.signalwire.com",
    };
    const transfer = carrierTransfer("signalwire", (n) => env[n], { baseUrl: api.baseUrl });
    assert.deepEqual(await transfer("c-7", "sip:desk@pbx.example.com"), { ok: true, status: 200 });
    const req = api.seen[0];
    assert.equal(req.path, "/api/laml/2010-04-01/Accounts/p-1/Calls/c-7.json");
    assert.equal(req.auth, basic("p-1", "sw-token"));
    assert.match(
      new URLSearchParams(req.body).get("Twiml") ?? "",
      /<Dial><Sip>sip:desk@pbx\.example\.com<\/Sip><\/Dial>/,
    );
  } finally {
    await api.close();
  }
});

Deno.test("Telnyx: call control transfer command with a Bearer key", async () => {
  const api = fakeApi(200, { data: { result: "ok" } });
  try {
    const transfer = carrierTransfer(
      "telnyx",
      (n) => n === "TELNYX_API_KEY" ? "KEY123" : undefined,
      {
        baseUrl: api.baseUrl,
      },
    );
    assert.equal((await transfer("v3:abc", "tel:+1 555 0100")).ok, true);
    const req = api.seen[0];
    assert.equal(req.method, "POST");
    assert.equal(req.path, "/v2/calls/v3%3Aabc/actions/transfer");
    assert.equal(req.auth, "Bearer KEY123");
    assert.deepEqual(JSON.parse(req.body), { to: "+15550100" });
  } finally {
    await api.close();
  }
});

Deno.test("Vonage: PUT /v1/calls/{uuid} with an NCCO connect, signed by an RS256 JWT", async () => {
  const api = fakeApi(204, {});
  const pair = await crypto.subtle.generateKey(
    {
      name: "RSASSA-PKCS1-v1_5",
      modulusLength: 2048,
      publicExponent: new Uint8Array([1, 0, 1]),
      hash: "SHA-256",
    },
    true,
    ["sign", "verify"],
  );
  const der = new Uint8Array(await crypto.subtle.exportKey("pkcs8", pair.privateKey));
  // As an operator's env var often holds it: one line, "\n" for the breaks.
  const pem = `-----BEGIN PRIVATE KEY-----\\n${der.toBase64()}\\n-----END PRIVATE KEY-----`;
  try {
    const env: Record<string, string> = { VONAGE_APPLICATION_ID: "app-1", VONAGE_PRIVATE_KEY: pem };
    const transfer = carrierTransfer("vonage", (n) => env[n], { baseUrl: api.baseUrl });
    assert.equal((await transfer("uuid-1", TARGET)).ok, true);
    const req = api.seen[0];
    assert.equal(req.method, "PUT");
    assert.equal(req.path, "/v1/calls/uuid-1");
    assert.deepEqual(JSON.parse(req.body), {
      action: "transfer",
      destination: {
        type: "ncco",
        ncco: [{ action: "connect", endpoint: [{ type: "phone", number: "15550100" }] }],
      },
    });
    const [head, claims, sig] = req.auth.replace(/^Bearer /, "").split(".");
    const b64 = (s: string) => Uint8Array.fromBase64(s.replace(/-/g, "+").replace(/_/g, "/"));
    const ok = await crypto.subtle.verify(
      "RSASSA-PKCS1-v1_5",
      pair.publicKey,
      b64(sig),
      new TextEncoder().encode(`${head}.${claims}`),
    );
    assert.ok(ok, "the JWT verifies with the application's public key");
    assert.equal(JSON.parse(new TextDecoder().decode(b64(head))).alg, "RS256");
    assert.equal(JSON.parse(new TextDecoder().decode(b64(claims))).application_id, "app-1");
  } finally {
    await api.close();
  }
});

Deno.test("carrier transfer failures are outcomes the model can be told, without secrets", async () => {
  const api = fakeApi(400, { code: 21220, message: "Invalid call state (token tw-secret)" });
  try {
    const env: Record<string, string> = {
      TWILIO_ACCOUNT_SID: "AC9",
      TWILIO_AUTH_TOKEN: "tw-secret",
    };
    const twilio = carrierTransfer("twilio", (n) => env[n], { baseUrl: api.baseUrl });
    const refused = await twilio("CA1", TARGET);
    assert.equal(refused.ok, false);
    if (refused.ok) return;
    assert.equal(refused.status, 400);
    assert.match(refused.reason, /twilio refused the transfer \(HTTP 400\): Invalid call state/);
    assert.doesNotMatch(refused.reason, /tw-secret/);

    const bad = await twilio("CA1", "+1 900 <x>");
    assert.deepEqual(bad.ok ? {} : { refused: bad.refused }, { refused: true });
    assert.equal(api.seen.length, 1, "a bad target sends nothing");

    const plivo = await carrierTransfer("plivo", () => "x")("u-1", TARGET);
    assert.equal(plivo.ok, false);
    assert.match(plivo.ok ? "" : plivo.reason, /plivo: transfers need the agent server's public/);

    const noCreds = await carrierTransfer("telnyx", () => undefined)("c", TARGET);
    assert.match(noCreds.ok ? "" : noCreds.reason, /need TELNYX_API_KEY in the environment/);
  } finally {
    await api.close();
  }
});
