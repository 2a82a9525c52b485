/**
 * `GET /metrics` (server/metrics_route.ts): open to a scraper on this machine, a bearer token
 * for anyone else (403 when none is configured), the Prometheus content type, and the server's
 * and process's series.
 */
import assert from "node:assert/strict";
import { silentLogger } from "../core/log.ts";
import { createAgentServer } from "../server/app.ts";
import { isLoopbackAddress, scrapeVerdict } from "../server/metrics_route.ts";
import { parse, yaml } from "./_server_config_helpers.ts";

async function app(extra = "") {
  const r = await parse(yaml(extra));
  if (!r.ok) throw new Error(JSON.stringify(r.problems));
  return await createAgentServer({
    config: r.config,
    env: (n) => (n === "FLOWCAT_API_TOKEN" ? "scrape-secret" : undefined),
    logger: silentLogger,
  });
}

/** A request as the router sees it from `remote`. */
function from(remote: string): Deno.ServeHandlerInfo {
  return {
    remoteAddr: { transport: "tcp", hostname: remote, port: 40000 },
    completed: Promise.resolve(),
  } as Deno.ServeHandlerInfo;
}

Deno.test("metrics route: loopback scrapes read the Prometheus text of the server and process", async () => {
  const a = await app();
  const server = Deno.serve({ hostname: "127.0.0.1", port: 0, onListen: () => {} }, a.handler);
  try {
    const res = await fetch(`http://127.0.0.1:${server.addr.port}/metrics`);
    assert.equal(res.status, 200);
    assert.equal(res.headers.get("content-type"), "text/plain; version=0.0.4; charset=utf-8");
    const text = await res.text();
    for (
      const want of [
        "# TYPE flowcat_active_calls gauge",
        "flowcat_active_calls 0",
        "# TYPE flowcat_calls_ended_total counter",
        "# TYPE flowcat_turn_latency_seconds histogram",
        "# TYPE flowcat_provider_ttfb_seconds histogram",
        "# TYPE flowcat_provider_errors_total counter",
        "# TYPE flowcat_frames_dropped_total counter",
        "# TYPE flowcat_event_loop_lag_seconds gauge",
      ]
    ) assert.ok(text.includes(want), `${want} in:\n${text}`);
    const rss = Number(/^process_resident_memory_bytes (\d+)$/m.exec(text)?.[1]);
    assert.ok(rss > 1_000_000, `resident memory ${rss}`);
    const proxied = await fetch(`http://127.0.0.1:${server.addr.port}/metrics`, {
      headers: { "x-forwarded-for": "203.0.113.9" },
    });
    assert.equal(proxied.status, 403, "through a local proxy, a scrape is not local");
    await proxied.body?.cancel();
  } finally {
    await server.shutdown();
    await a.close();
  }
});

Deno.test("metrics route: from another host, the api token as bearer; 403 without one configured", async () => {
  const open = await app();
  const req = (headers: Record<string, string> = {}) =>
    new Request("http://agent/metrics", { headers });
  const none = await open.handler(req(), from("10.1.2.3"));
  assert.equal(none.status, 403);
  assert.match((await none.json()).error, /api\.token_env/);

  const guarded = await app("api: { token_env: FLOWCAT_API_TOKEN }");
  const missing = await guarded.handler(req(), from("10.1.2.3"));
  assert.equal(missing.status, 401);
  assert.equal(missing.headers.get("www-authenticate"), "Bearer");
  await missing.body?.cancel();
  const wrong = await guarded.handler(
    req({ authorization: "Bearer scrape-secreT" }),
    from("10.1.2.3"),
  );
  assert.equal(wrong.status, 401);
  await wrong.body?.cancel();
  const right = await guarded.handler(
    req({ authorization: "Bearer scrape-secret" }),
    from("10.1.2.3"),
  );
  assert.equal(right.status, 200);
  assert.match(await right.text(), /^flowcat_active_calls 0$/m);
  const local = await guarded.handler(req(), from("127.0.0.1"));
  assert.equal(local.status, 200, "loopback needs no token");
  await local.body?.cancel();
  assert.ok(
    guarded.metrics.registry.expose().includes(
      'flowcat_requests_refused_total{reason="metrics_auth"} 2',
    ),
  );
  await open.close();
  await guarded.close();
});

Deno.test("metrics route: what counts as loopback, and the verdicts", () => {
  for (const a of ["127.0.0.1", "127.9.8.7", "::1", "[::1]", "::ffff:127.0.0.1"]) {
    assert.ok(isLoopbackAddress(a), a);
  }
  for (const a of ["10.0.0.1", "0.0.0.0", "::", "128.0.0.1", "localhost", undefined]) {
    assert.ok(!isLoopbackAddress(a), String(a));
  }
  const h = (o: Record<string, string> = {}) => new Headers(o);
  assert.equal(scrapeVerdict(h(), "127.0.0.1", undefined), "ok");
  assert.equal(scrapeVerdict(h({ forwarded: "for=1.2.3.4" }), "127.0.0.1", undefined), "forbidden");
  assert.equal(scrapeVerdict(h({ "x-real-ip": "1.2.3.4" }), "127.0.0.1", "t"), "unauthorized");
  assert.equal(scrapeVerdict(h({ authorization: "Bearer t" }), "10.0.0.1", "t"), "ok");
  assert.equal(scrapeVerdict(h({ authorization: "Bearer x" }), "127.0.0.1", "t"), "unauthorized");
  assert.equal(scrapeVerdict(h({ authorization: "Bearer t" }), "10.0.0.1", ""), "forbidden");
});
