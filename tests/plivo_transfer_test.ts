/**
 * Plivo transfers: the agent server asks Plivo's Call Transfer API to send the caller's leg to a
 * new answer URL, a signed `<Dial>` document the server itself serves. A local fake of Plivo's
 * API checks the request (path, Basic auth, JSON fields) and then fetches the answer URL as
 * Plivo would, signed with its V3 signature, and the test checks the Plivo XML it got.
 */
import assert from "node:assert/strict";
import { memoryLogger } from "../core/log.ts";
import { createAgentServer } from "../server/app.ts";
import { parseConfigText } from "../server/config.ts";
import { permissionFlags } from "../server/permissions.ts";
import { serverPermissionOptions } from "../server/main.ts";
import { carrierTransfer } from "../telephony/carrier_transfer.ts";
import { checkTransferDial, plivoDialXml, transferDialUrl } from "../telephony/transfer_dial.ts";
import { until } from "./_core_helpers.ts";
import { pinnedTransferGraph } from "./_graph_fixture.ts";
import { dialPlivo, plivoPost } from "./_plivo_client.ts";

const AUTH_ID = "MAXXXXXXXXXXXXXXXXXX";
const AUTH_TOKEN = "plivo-auth-token-1";
const PUBLIC = "https://agent.example.com";
const TARGET = "+15550100";
const basic = (u: string, p: string) => `Basic ${btoa(`${u}:${p}`)}`;

interface Fetched {
  status: number;
  type: string;
  body: string;
}

/**
 * Plivo's REST API in miniature: `POST /v1/Account/{auth_id}/Call/{call_uuid}/` with Basic auth
 * and a JSON body of `legs`, `aleg_url`, `aleg_method`; answers 202 as Plivo does, then fetches
 * the A leg's new answer URL on `serverBase` with the call's parameters, signed.
 */
function fakePlivo(serverBase: () => string) {
  const seen: { path: string; body: Record<string, unknown> }[] = [];
  const fetched: Fetched[] = [];
  const server = Deno.serve({ hostname: "127.0.0.1", port: 0, onListen: () => {} }, async (r) => {
    const path = new URL(r.url).pathname;
    const m = /^\/v1\/Account\/([^/]+)\/Call\/([^/]+)\/$/.exec(path);
    if (r.method !== "POST" || m === null) {
      return Response.json({ error: "not found" }, { status: 404 });
    }
    if (r.headers.get("authorization") !== basic(AUTH_ID, AUTH_TOKEN) || m[1] !== AUTH_ID) {
      return Response.json({ error: "authentication failed" }, { status: 401 });
    }
    if (!r.headers.get("content-type")?.startsWith("application/json")) {
      return Response.json({ error: "expected JSON" }, { status: 400 });
    }
    const body = await r.json() as Record<string, unknown>;
    seen.push({ path, body });
    const legs = body.legs;
    const url = body.aleg_url;
    if (legs !== "aleg" || typeof url !== "string" || !/^https?:\/\//.test(url)) {
      return Response.json({ error: "legs aleg needs a valid aleg_url" }, { status: 400 });
    }
    if (
      body.aleg_method !== undefined && body.aleg_method !== "POST" && body.aleg_method !== "GET"
    ) {
      return Response.json({ error: "aleg_method must be GET or POST" }, { status: 400 });
    }
    // Plivo answers at once and fetches the new answer URL for the caller's leg after.
    setTimeout(async () => {
      const res = await plivoPost(serverBase(), url, AUTH_TOKEN, {
        CallUUID: decodeURIComponent(m[2]),
        From: "14155550123",
        To: "14155550199",
        Direction: "inbound",
        CallStatus: "in-progress",
      });
      fetched.push({
        status: res.status,
        type: res.headers.get("content-type") ?? "",
        body: await res.text(),
      });
    }, 0);
    return Response.json({ api_id: "a-1", message: "call transferred" }, { status: 202 });
  });
  return {
    seen,
    fetched,
    baseUrl: `http://127.0.0.1:${server.addr.port}`,
    close: () => server.shutdown(),
  };
}

async function plivoServer(apiBase: string) {
  const config = {
    agent: { graph: pinnedTransferGraph(TARGET) },
    pipeline: "s2s",
    providers: { realtime: { name: "echo", options: { tts: "none", greeting: "hi" } } },
    telephony: { public_url: PUBLIC, carriers: ["plivo"] },
  };
  const r = await parseConfigText(JSON.stringify(config), "json", ".");
  if (!r.ok) throw new Error(JSON.stringify(r.problems));
  const vars: Record<string, string> = { PLIVO_AUTH_ID: AUTH_ID, PLIVO_AUTH_TOKEN: AUTH_TOKEN };
  const logger = memoryLogger();
  const app = await createAgentServer({
    config: r.config,
    env: (n) => vars[n],
    logger,
    carrierApi: { baseUrl: apiBase },
  });
  const server = Deno.serve({ hostname: "127.0.0.1", port: 0, onListen: () => {} }, app.handler);
  return { app, server, logger, base: `http://127.0.0.1:${server.addr.port}`, config: r.config };
}

Deno.test("server Plivo call: transfer_call moves the caller's leg to a signed <Dial> document", async () => {
  let base = "";
  const api = fakePlivo(() => base);
  const { app, server, ...s } = await plivoServer(api.baseUrl);
  base = s.base;
  try {
    const { call, runId } = await dialPlivo(base, {
      authToken: AUTH_TOKEN,
      publicUrl: PUBLIC,
      callUuid: "uuid-1",
    });
    await until(() => call.got.some((m) => m.event === "playAudio"), 5000, "greeting");
    await call.dtmf("2"); // the echo model calls its second tool: transfer_call
    await until(() => api.fetched.length > 0, 5000, "Plivo fetched the transfer document");

    const req = api.seen[0];
    assert.equal(req.path, `/v1/Account/${AUTH_ID}/Call/uuid-1/`);
    assert.equal(req.body.legs, "aleg");
    assert.equal(req.body.aleg_method, "POST");
    const aleg = new URL(req.body.aleg_url as string);
    assert.equal(`${aleg.origin}${aleg.pathname}`, `${PUBLIC}/telephony/transfer/plivo/uuid-1`);
    assert.equal(aleg.searchParams.get("target"), TARGET);

    const doc = api.fetched[0];
    assert.equal(doc.status, 200, doc.body);
    assert.match(doc.type, /xml/);
    assert.match(doc.body, /<Response><Dial><Number>15550100<\/Number><\/Dial><\/Response>$/);

    const run = app.sessions.get(runId)!;
    await until(() => run.finalize !== undefined, 5000, "finalized");
    assert.equal(run.finalize!.disposition, "transferred");
    const lines = JSON.parse(
      new TextDecoder().decode(app.sessions.memoryArtifact(`run-${runId}-transcript.json`)!),
    ).lines as { role: string; text: string; tool?: string }[];
    const tool = lines.find((l) => l.role === "tool" && l.tool === "transfer_call");
    assert.deepEqual(JSON.parse(tool?.text ?? "null"), { ok: true, transferred: TARGET });
    call.close();

    // The document is served only to Plivo, for the call and target the URL was made for.
    const good = req.body.aleg_url as string;
    const params = { CallUUID: "uuid-1", CallStatus: "in-progress" };
    const replayed = await plivoPost(base, good, AUTH_TOKEN, params);
    assert.equal(replayed.status, 200, "a fresh nonce and signature: served again");
    await replayed.body?.cancel();
    const unsigned = await fetch(`${base}${aleg.pathname}${aleg.search}`, {
      method: "POST",
      headers: { "content-type": "application/x-www-form-urlencoded" },
      body: new URLSearchParams(params).toString(),
    });
    assert.equal(unsigned.status, 403, "no Plivo signature");
    await unsigned.body?.cancel();
    const forged = good.replace(encodeURIComponent(TARGET), encodeURIComponent("+19005550199"));
    assert.notEqual(forged, good);
    const tampered = await plivoPost(base, forged, AUTH_TOKEN, params);
    assert.equal(tampered.status, 403, "another target: the URL's own signature fails");
    await tampered.body?.cancel();
    const other = await plivoPost(base, good, AUTH_TOKEN, { ...params, CallUUID: "uuid-2" });
    assert.equal(other.status, 403, "a request about another call");
    await other.body?.cancel();
    // Logged (rate-limited: the first refusal of the interval) without the secret.
    const refused = s.logger.records.filter((l) => l.message === "transfer document refused");
    assert.equal(refused[0]?.fields?.reason, "transfer URL signature mismatch");
    assert.doesNotMatch(JSON.stringify(s.logger.records), new RegExp(AUTH_TOKEN));
  } finally {
    await app.calls.drain(1000);
    await server.shutdown();
    await app.close();
    await api.close();
  }
});

Deno.test("Plivo transfer client: refused without the public origin or credentials, errors scrubbed", async () => {
  const api = fakePlivo(() => "http://127.0.0.1:9");
  try {
    const env: Record<string, string> = { PLIVO_AUTH_ID: AUTH_ID, PLIVO_AUTH_TOKEN: AUTH_TOKEN };
    const noOrigin = await carrierTransfer("plivo", (n) => env[n], { baseUrl: api.baseUrl })(
      "uuid-1",
      TARGET,
    );
    assert.equal(noOrigin.ok, false);
    assert.equal(noOrigin.ok ? false : noOrigin.refused, true);
    assert.match(noOrigin.ok ? "" : noOrigin.reason, /public origin/);
    assert.equal(api.seen.length, 0);

    const noCreds = await carrierTransfer("plivo", () => undefined, { dialOrigin: PUBLIC })(
      "uuid-1",
      TARGET,
    );
    assert.match(noCreds.ok ? "" : noCreds.reason, /need PLIVO_AUTH_ID, PLIVO_AUTH_TOKEN/);

    const wrong = await carrierTransfer(
      "plivo",
      (n) => n === "PLIVO_AUTH_TOKEN" ? "wrong-token-9" : env[n],
      { baseUrl: api.baseUrl, dialOrigin: PUBLIC },
    )("uuid-1", "sip:desk@pbx.example.com");
    assert.equal(wrong.ok ? 0 : wrong.status, 401);
    assert.match(wrong.ok ? "" : wrong.reason, /plivo refused the transfer \(HTTP 401\)/);
    assert.doesNotMatch(wrong.ok ? "" : wrong.reason, /wrong-token-9/);
  } finally {
    await api.close();
  }
});

Deno.test("transfer document URLs: signed over call, target and expiry; <Number> and <User>", async () => {
  const now = Date.parse("2026-01-01T00:00:00Z");
  const url = new URL(
    await transferDialUrl(PUBLIC, "plivo", "uuid-1", "sip:desk@pbx.example.com", AUTH_TOKEN, {
      now,
      ttlSeconds: 60,
    }),
  );
  const q = url.searchParams;
  const ok = await checkTransferDial(AUTH_TOKEN, "plivo", "uuid-1", q, now + 59_000);
  assert.deepEqual(ok, { ok: true, target: { sip: "sip:desk@pbx.example.com" } });
  assert.equal(
    plivoDialXml({ sip: "sip:desk@pbx.example.com" }),
    '<?xml version="1.0" encoding="UTF-8"?><Response><Dial><User>sip:desk@pbx.example.com</User></Dial></Response>',
  );
  const late = await checkTransferDial(AUTH_TOKEN, "plivo", "uuid-1", q, now + 61_000);
  assert.deepEqual(late, { ok: false, reason: "transfer URL expired" });
  const otherCall = await checkTransferDial(AUTH_TOKEN, "plivo", "uuid-2", q, now);
  assert.equal(otherCall.ok, false);
  const otherKey = await checkTransferDial("another-token", "plivo", "uuid-1", q, now);
  assert.equal(otherKey.ok, false);
  const later = new URLSearchParams(q);
  later.set("exp", String(Number(q.get("exp")) + 3600));
  assert.equal((await checkTransferDial(AUTH_TOKEN, "plivo", "uuid-1", later, now)).ok, false);
});

Deno.test("permissions: a Plivo server may reach api.plivo.com with its transfer credentials", async () => {
  const { app, server, config } = await plivoServer("http://127.0.0.1:9");
  await server.shutdown();
  await app.close();
  const flags = permissionFlags(config, serverPermissionOptions(config, { config: "c.yaml" }));
  const net = flags.find((f) => f.startsWith("--allow-net="))!.split("=")[1].split(",");
  assert.ok(net.includes("api.plivo.com:443"), net.join(","));
  const env = flags.find((f) => f.startsWith("--allow-env="))!.split("=")[1].split(",");
  for (const n of ["PLIVO_AUTH_ID", "PLIVO_AUTH_TOKEN"]) assert.ok(env.includes(n), n);
});
