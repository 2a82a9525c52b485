// Outbound call origination against a local fake carrier REST server: method, path, auth header
// and body fields per carrier; E.164 checked before any request; carrier errors surface their
// message without any credential.
import assert from "node:assert/strict";
import { FlowcatError } from "../core/errors.ts";
import {
  originateCall,
  originateCredentialsFromEnv,
  type OriginateRequest,
} from "../telephony/originate.ts";

interface Seen {
  method: string;
  path: string;
  auth: string | null;
  contentType: string | null;
  body: string;
}

type Reply = { status: number; json: unknown };

/** A fake carrier API on 127.0.0.1:0 that records requests and answers with `reply`. */
async function withFakeApi(
  reply: (seen: Seen) => Reply,
  run: (baseUrl: string, seen: Seen[]) => Promise<void>,
): Promise<void> {
  const seen: Seen[] = [];
  const server = Deno.serve({ hostname: "127.0.0.1", port: 0, onListen() {} }, async (req) => {
    const u = new URL(req.url);
    const s: Seen = {
      method: req.method,
      path: u.pathname,
      auth: req.headers.get("authorization"),
      contentType: req.headers.get("content-type"),
      body: await req.text(),
    };
    seen.push(s);
    const r = reply(s);
    return Response.json(r.json, { status: r.status });
  });
  try {
    await run(`http://127.0.0.1:${server.addr.port}`, seen);
  } finally {
    await server.shutdown();
  }
}

const CALL: OriginateRequest = {
  to: "+15550002222",
  from: "+15550001111",
  answerUrl: "https://agent.example.com/telephony/answer/twilio/42",
  statusCallbackUrl: "https://agent.example.com/telephony/status/twilio/42",
};

const basic = (u: string, p: string) => `Basic ${btoa(`${u}:${p}`)}`;

Deno.test("twilio: form POST to Calls.json with Basic sid:token; returns the call sid", async () => {
  await withFakeApi(() => ({ status: 201, json: { sid: "CA0001", status: "queued" } }), async (
    baseUrl,
    seen,
  ) => {
    const creds = { accountSid: "AC0001", authToken: "tw-secret-token" };
    const got = await originateCall("twilio", CALL, creds, { baseUrl });
    assert.deepEqual(got, { callId: "CA0001" });
    assert.equal(seen.length, 1);
    const [s] = seen;
    assert.equal(s.method, "POST");
    assert.equal(s.path, "/2010-04-01/Accounts/AC0001/Calls.json");
    assert.equal(s.auth, basic("AC0001", "tw-secret-token"));
    assert.equal(s.contentType, "application/x-www-form-urlencoded");
    const form = Object.fromEntries(new URLSearchParams(s.body));
    assert.deepEqual(form, {
      To: "+15550002222",
      From: "+15550001111",
      Url: CALL.answerUrl,
      Method: "POST",
      StatusCallback: CALL.statusCallbackUrl,
    });
  });
});

Deno.test("signalwire: same form under /api/laml with Basic project:token", async () => {
  await withFakeApi(() => ({ status: 201, json: { sid: "sw-call-1" } }), async (baseUrl, seen) => {
    const creds = {
      projectId: "proj-1",
      apiToken: "PT-secret",
      spaceUrl: "example.signalwire.com",
    };
    assert.deepEqual(await originateCall("signalwire", CALL, creds, { baseUrl }), {
      callId: "sw-call-1",
    });
    assert.equal(seen[0].path, "/api/laml/2010-04-01/Accounts/proj-1/Calls.json");
    assert.equal(seen[0].auth, basic("proj-1", "PT-secret"));
    assert.equal(new URLSearchParams(seen[0].body).get("Url"), CALL.answerUrl);
  });
});

Deno.test("telnyx: TeXML calls API, JSON body, Bearer key; returns call_sid", async () => {
  await withFakeApi(
    () => ({ status: 200, json: { call_sid: "v3:abc", from: "+1", to: "+2", status: "queued" } }),
    async (baseUrl, seen) => {
      const creds = { apiKey: "KEY0123-secret", connectionId: "1234567890" };
      const call = { ...CALL, statusCallbackUrl: undefined };
      assert.deepEqual(await originateCall("telnyx", call, creds, { baseUrl }), {
        callId: "v3:abc",
      });
      const [s] = seen;
      assert.equal(s.method, "POST");
      assert.equal(s.path, "/v2/texml/calls/1234567890");
      assert.equal(s.auth, "Bearer KEY0123-secret");
      assert.equal(s.contentType, "application/json");
      assert.deepEqual(JSON.parse(s.body), {
        To: "+15550002222",
        From: "+15550001111",
        Url: CALL.answerUrl,
        Method: "POST",
      });
    },
  );
});

Deno.test("plivo: JSON POST to /v1/Account/{id}/Call/ with numbers without '+'", async () => {
  await withFakeApi(
    () => ({ status: 201, json: { api_id: "a", message: "call fired", request_uuid: "r-1" } }),
    async (baseUrl, seen) => {
      const creds = { authId: "MA0001", authToken: "pl-secret" };
      assert.deepEqual(await originateCall("plivo", CALL, creds, { baseUrl }), { callId: "r-1" });
      const [s] = seen;
      assert.equal(s.path, "/v1/Account/MA0001/Call/");
      assert.equal(s.auth, basic("MA0001", "pl-secret"));
      assert.deepEqual(JSON.parse(s.body), {
        from: "15550001111",
        to: "15550002222",
        answer_url: CALL.answerUrl,
        answer_method: "POST",
        hangup_url: CALL.statusCallbackUrl,
        hangup_method: "POST",
      });
    },
  );
});

Deno.test("E.164 is checked before anything is sent", async () => {
  await withFakeApi(() => ({ status: 201, json: { sid: "CA1" } }), async (baseUrl, seen) => {
    const creds = { accountSid: "AC1", authToken: "t0k3n" };
    for (const bad of [{ to: "0044123456" }, { from: "+0123" }, { to: "+1555abc" }]) {
      await assert.rejects(
        () => originateCall("twilio", { ...CALL, ...bad }, creds, { baseUrl }),
        (e: unknown) =>
          e instanceof FlowcatError && e.kind === "protocol" && /E\.164/.test(e.message),
      );
    }
    assert.equal(seen.length, 0);
  });
});

Deno.test("carrier error: status and the carrier's message, never the credential", async () => {
  const secret = "tw-secret-token-XYZ";
  await withFakeApi(
    () => ({
      status: 400,
      json: { code: 21211, message: `Invalid 'To' Phone Number (token ${secret})`, status: 400 },
    }),
    async (baseUrl) => {
      const err = await originateCall("twilio", CALL, { accountSid: "AC1", authToken: secret }, {
        baseUrl,
      }).catch((e) => e);
      assert.ok(err instanceof FlowcatError);
      assert.equal(err.kind, "protocol");
      assert.match(err.message, /HTTP 400.*Invalid 'To' Phone Number.*code 21211/);
      assert.ok(!err.message.includes(secret));
    },
  );
  await withFakeApi(
    () => ({
      status: 401,
      json: { errors: [{ code: "10009", title: "Authentication failed", detail: "bad key" }] },
    }),
    async (baseUrl) => {
      await assert.rejects(
        () => originateCall("telnyx", CALL, { apiKey: "k-secret", connectionId: "c" }, { baseUrl }),
        (e: unknown) =>
          e instanceof FlowcatError && e.kind === "auth" &&
          /HTTP 401\): bad key \(code 10009\)/.test(e.message),
      );
    },
  );
  await withFakeApi(() => ({ status: 200, json: { status: "queued" } }), async (baseUrl) => {
    await assert.rejects(
      () => originateCall("twilio", CALL, { accountSid: "AC1", authToken: "t0k3n" }, { baseUrl }),
      /no call id/,
    );
  });
});

Deno.test("unsupported carrier, missing credentials, bad answer URL, unreachable API", async () => {
  await assert.rejects(
    () => originateCall("genesys", CALL, { accountSid: "a", authToken: "b" }),
    /not supported/,
  );
  await assert.rejects(
    () => originateCall("twilio", CALL, { apiKey: "k", connectionId: "c" }),
    /twilio credentials lack accountSid/,
  );
  await assert.rejects(
    () =>
      originateCall("twilio", { ...CALL, answerUrl: "ftp://x" }, {
        accountSid: "a",
        authToken: "b",
      }),
    /answerUrl/,
  );
  // A port nothing listens on: the fetch fails and the error names no secret.
  const listener = Deno.listen({ hostname: "127.0.0.1", port: 0 });
  const port = (listener.addr as Deno.NetAddr).port;
  listener.close();
  const err = await originateCall("twilio", CALL, { accountSid: "a", authToken: "s3cr3t-pass" }, {
    baseUrl: `http://127.0.0.1:${port}`,
  }).catch((e) => e);
  assert.ok(err instanceof FlowcatError);
  assert.match(err.message, /originate request failed/);
  assert.ok(!err.message.includes("s3cr3t-pass"));
});

Deno.test("timeout: a carrier that never answers gives a timeout error", async () => {
  const hang = new Promise<Response>(() => {});
  const fakeFetch = (_url: string | URL | Request, init?: RequestInit) =>
    Promise.race([
      hang,
      new Promise<Response>((_, reject) =>
        init?.signal?.addEventListener("abort", () =>
          reject(new DOMException("aborted", "AbortError")))
      ),
    ]);
  await assert.rejects(
    () =>
      originateCall("twilio", CALL, { accountSid: "a", authToken: "b" }, {
        fetch: fakeFetch as typeof fetch,
        timeoutMs: 20,
      }),
    (e: unknown) => e instanceof FlowcatError && e.kind === "timeout",
  );
});

Deno.test("originateCredentialsFromEnv: names every missing variable, never a value", () => {
  const env: Record<string, string> = { TWILIO_ACCOUNT_SID: "AC1", TWILIO_AUTH_TOKEN: "tok" };
  assert.deepEqual(originateCredentialsFromEnv("twilio", (n) => env[n]), {
    accountSid: "AC1",
    authToken: "tok",
  });
  assert.throws(
    () => originateCredentialsFromEnv("telnyx", (n) => env[n]),
    /TELNYX_API_KEY, TELNYX_CONNECTION_ID/,
  );
  assert.throws(() => originateCredentialsFromEnv("sinch", (n) => env[n]), /not supported/);
});
