/**
 * Error reporting to a Sentry-compatible server, against a local receiver that decodes the
 * envelopes: the real server started as `deno task start` starts it (the launcher grants the
 * DSN's host from `SENTRY_DSN`), a Gemini Live provider that crashes mid-call, and exactly one
 * event with the call's id and no secret (provider key, carrier secret, call token, DSN key).
 * Also: the envelope client's parts (DSN, scrubbing, stack frames, rate limit), route errors,
 * and reporting off (nothing loaded) without a DSN.
 */
import assert from "node:assert/strict";
import { FlowcatError } from "../core/errors.ts";
import { silentLogger } from "../core/log.ts";
import {
  createErrorReports,
  envelope,
  parseDsn,
  scrub,
  stackFrames,
} from "../providers/obs/error_reports.ts";
import { parseConfigText } from "../server/config.ts";
import { requiredEnv } from "../server/config_env.ts";
import { configuredDsn, errorReporterFrom } from "../server/error_reporting.ts";
import { serverPermissionOptions } from "../server/main.ts";
import { permissionFlags } from "../server/permissions.ts";
import { router } from "../server/router.ts";
import { until } from "./_core_helpers.ts";
import { SentryReceiver } from "./_sentry_receiver.ts";
import { startServerChild } from "./_server_child.ts";
import { dialTwilio } from "./_twilio_client.ts";
import { GeminiLiveFake } from "./fakes/gemini_live_fake.ts";

const DIR = ".tmp/error_reports_test";
const TWILIO_SECRET = "twilio-secret-for-reports";
const GEMINI_KEY = "gemini-key-not-to-be-sent";
const PUBLIC = "https://agent.example.com";
const MINIMAL = `agent: { remote: { url: "http://h" } }\nproviders: { realtime: { name: echo } }\n`;

Deno.test("error reports: a provider crash mid-call is one event with the call id and no secret", async () => {
  const receiver = new SentryReceiver();
  const gemini = await new GeminiLiveFake().start();
  await Deno.mkdir(DIR, { recursive: true });
  await Deno.copyFile("examples/echo_graph.yaml", `${DIR}/echo_graph.yaml`);
  const path = `${DIR}/agent.yaml`;
  await Deno.writeTextFile(
    path,
    `version: 1
agent: { graph: echo_graph.yaml }
pipeline: s2s
providers:
  realtime: { name: gemini, url: "${gemini.url}" }
telephony: { public_url: "${PUBLIC}", carriers: [twilio] }
playground: { enabled: false }
observability: { errors: { environment: test } }
`,
  );
  const dsn = receiver.dsn("publickey0123");
  const server = await startServerChild(path, {
    SENTRY_DSN: dsn,
    GEMINI_API_KEY: GEMINI_KEY,
    TWILIO_AUTH_TOKEN: TWILIO_SECRET,
  }, { launcher: true });
  let runId = 0;
  let token = "";
  try {
    const dialled = await dialTwilio(server.base, { secret: TWILIO_SECRET, publicUrl: PUBLIC });
    runId = dialled.runId;
    token = dialled.token;
    await gemini.waitUntil(() => gemini.messages("setup").length === 1, 8000, "the session");
    // The provider crashes: its socket drops and it takes no new session.
    gemini.refuseConnections = true;
    gemini.dropConnection(1011, "internal error");
    await until(() => server.stderr().includes("call ended"), 15_000, "the call to end");
    await until(() => receiver.events.length >= 1, 10_000, "the report");
    await dialled.call.close();
  } finally {
    assert.equal(await server.stop(), 0, server.stderr());
    await gemini.close();
  }
  try {
    assert.equal(receiver.events.length, 1, JSON.stringify(receiver.events));
    const [env] = receiver.envelopes;
    assert.equal(env.path, "/api/42/envelope/");
    assert.match(
      env.auth ?? "",
      /^Sentry sentry_version=7, sentry_key=publickey0123, sentry_client=flowcat\//,
    );
    assert.equal(env.contentType, "application/x-sentry-envelope");
    const ev = receiver.events[0] as {
      level: string;
      environment: string;
      tags: Record<string, string>;
      contexts: { call: Record<string, unknown> };
      exception: { values: { type: string; value: string }[] };
      fingerprint: string[];
      extra: Record<string, unknown>;
    };
    assert.equal(ev.level, "error");
    assert.equal(ev.environment, "test");
    assert.equal(ev.tags.call_id, String(runId));
    assert.equal(ev.tags.transport, "twilio");
    assert.equal(ev.tags.service, "realtime");
    assert.equal(ev.tags.provider, "gemini");
    assert.equal(ev.tags.leg_id, "CA1");
    assert.equal(ev.contexts.call.run_id, runId);
    assert.equal(ev.contexts.call.pipeline, "s2s");
    assert.equal(ev.exception.values[0].type, "CallFailure");
    assert.equal(ev.extra.caller, "the call ended");
    assert.deepEqual(ev.fingerprint.slice(0, 3), ["call-failure", "realtime", "gemini"]);
    const raw = env.raw;
    assert.ok(!raw.includes(GEMINI_KEY), "no provider key");
    assert.ok(!raw.includes(TWILIO_SECRET), "no carrier secret");
    assert.ok(!raw.includes("publickey0123"), "no DSN key in the body");
    assert.ok(token.length > 10 && !raw.includes(token), "no call token");
    assert.doesNotMatch(server.stderr(), /error reports? (cannot be sent|not sent)/);
  } finally {
    await receiver.close();
  }
});

Deno.test("error reports: the launcher grants the DSN's host; the server reads SENTRY_DSN", async () => {
  const parsed = await parseConfigText(
    `version: 1
agent: { remote: { url: "http://127.0.0.1:8081" } }
providers: { realtime: { name: echo } }
playground: { enabled: false }
observability: { errors: { dsn: "https://k@o1.ingest.sentry.io/7" } }
`,
    "yaml",
    ".",
  );
  assert.ok(parsed.ok, JSON.stringify(!parsed.ok && parsed.problems));
  const config = parsed.config;
  const net = (env: Record<string, string>) =>
    permissionFlags(
      config,
      serverPermissionOptions(config, { config: "c.yaml" }, (n) => env[n]),
    ).find((f) => f.startsWith("--allow-net="));
  assert.match(net({})!, /o1\.ingest\.sentry\.io:443/);
  // SENTRY_DSN wins over the config's DSN.
  assert.match(net({ SENTRY_DSN: "http://k@127.0.0.1:9999/1" })!, /127\.0\.0\.1:9999/);
  assert.doesNotMatch(net({ SENTRY_DSN: "http://k@127.0.0.1:9999/1" })!, /sentry\.io/);
  assert.equal(configuredDsn(config, () => undefined), "https://k@o1.ingest.sentry.io/7");
  assert.ok(requiredEnv(config).some((e) => e.name === "SENTRY_DSN" && !e.required));
  const bad = await parseConfigText(
    `${MINIMAL}observability: { errors: { dsn: "not a dsn" } }\n`,
    "yaml",
    ".",
  );
  assert.ok(!bad.ok);
  assert.match(bad.problems[0].message, /is not a DSN/);
});

Deno.test("error reports: off without a DSN, and nothing is loaded", async () => {
  const parsed = await parseConfigText(MINIMAL, "yaml", ".");
  assert.ok(parsed.ok);
  assert.equal(await errorReporterFrom(parsed.config, () => undefined, silentLogger), undefined);
  assert.equal(configuredDsn(parsed.config, () => ""), undefined);
  // A SENTRY_DSN that is no DSN stops the start with one line that does not show it.
  await assert.rejects(
    errorReporterFrom(parsed.config, () => "secretish-not-a-dsn", silentLogger),
    (err) =>
      err instanceof FlowcatError && err.kind === "config" &&
      err.message.startsWith("SENTRY_DSN is not a DSN") && !err.message.includes("secretish"),
  );
});

Deno.test("error reports: a route handler that throws is reported with its stack", async () => {
  const receiver = new SentryReceiver();
  try {
    const parsed = await parseConfigText(MINIMAL, "yaml", ".");
    assert.ok(parsed.ok);
    const reporter = await errorReporterFrom(
      parsed.config,
      (n) => (n === "SENTRY_DSN" ? receiver.dsn() : undefined),
      silentLogger,
    );
    assert.ok(reporter);
    const handle = router([{
      method: "GET",
      path: "/boom",
      handler: function explode() {
        throw new TypeError("boom at http://x/y?key=leaky");
      },
    }], {
      maxBodyBytes: 1024,
      logger: silentLogger,
      onError: (err, path) => reporter.unexpected(err, { where: "route", path }),
    });
    const res = await handle(new Request("http://127.0.0.1/boom"));
    assert.equal(res.status, 500);
    await reporter.flush(3000);
    const [ev] = receiver.events as {
      level: string;
      tags: Record<string, string>;
      exception: {
        values: { type: string; value: string; stacktrace: { frames: { function: string }[] } }[];
      };
    }[];
    assert.equal(ev.level, "error");
    assert.deepEqual(ev.tags, { where: "route", path: "/boom" });
    assert.equal(ev.exception.values[0].type, "TypeError");
    assert.equal(ev.exception.values[0].value, "boom at http://x/y?key=REDACTED");
    const frames = ev.exception.values[0].stacktrace.frames;
    assert.match(frames.at(-1)!.function, /explode/, "newest frame last, as Sentry reads them");
  } finally {
    await receiver.close();
  }
});

Deno.test("error reports: DSN, envelope, scrubbing and the rate limit", async () => {
  assert.deepEqual(parseDsn("https://abc@o1.ingest.sentry.io/42"), {
    publicKey: "abc",
    envelopeUrl: "https://o1.ingest.sentry.io/api/42/envelope/",
    host: "o1.ingest.sentry.io:443",
    projectId: "42",
  });
  assert.equal(
    parseDsn("http://k@sentry.local:9000/prefix/3")?.envelopeUrl,
    "http://sentry.local:9000/prefix/api/3/envelope/",
  );
  assert.equal(parseDsn("https://o1.ingest.sentry.io/42"), undefined, "no key");
  assert.equal(parseDsn("ftp://k@h/1"), undefined);
  assert.equal(
    scrub('key sk-live-123456 in "url": "wss://h/live?key=sk-live-123456&v=1"', ["sk-live-123456"]),
    'key [redacted] in "url": "wss://h/live?key=REDACTED&v=REDACTED"',
  );
  assert.equal(scrub("short abc stays", ["abc"]), "short abc stays");
  assert.deepEqual(
    stackFrames("Error: x\n    at f (file:///a/b.ts:3:9)\n    at ext:core/x.js:1:2"),
    [
      { filename: "ext:core/x.js", function: "?", lineno: 1, colno: 2, in_app: false },
      { filename: "/a/b.ts", function: "f", lineno: 3, colno: 9, in_app: true },
    ],
  );
  const body = envelope("e1", { level: "warning", message: "hello", tags: { a: "b" } }, {
    release: "flowcat@test",
    nowMs: 1_700_000_000_000,
  });
  const [header, item, payload] = body.trimEnd().split("\n").map((l) => JSON.parse(l));
  assert.deepEqual(header, { event_id: "e1", sent_at: "2023-11-14T22:13:20.000Z" });
  assert.deepEqual(item, { type: "event", content_type: "application/json" });
  assert.equal(payload.message.formatted, "hello");
  assert.equal(payload.timestamp, 1_700_000_000);
  assert.equal(payload.contexts.runtime.name, "deno");
  let posts = 0;
  const sent: string[] = [];
  const reports = createErrorReports({
    dsn: "https://key123456@sentry.example/9",
    maxPerMinute: 2,
    secrets: ["my-secret-value"],
    now: () => 5_000,
    fetch: (_url, init) => {
      posts++;
      sent.push(String(init?.body));
      return Promise.resolve(new Response("{}"));
    },
  });
  assert.ok(reports.send({ level: "error", message: "one my-secret-value" }));
  assert.ok(reports.send({ level: "error", message: "two" }, ["per-call-token"]));
  assert.equal(reports.send({ level: "error", message: "three" }), undefined);
  await reports.flush(1000);
  assert.equal(posts, 2);
  assert.equal(reports.dropped, 1);
  assert.ok(sent[0].includes("one [redacted]"));
  assert.ok(!sent.join("").includes("key123456"));
});
