/**
 * A real Prometheus (Debian's `prometheus`) scrapes the agent server's `/metrics` every second
 * while two carrier calls run through the answer webhook and media WebSocket; the test asks
 * Prometheus's HTTP API (`/api/v1/query`) for the active-calls and turn-latency series, then runs
 * every query of the example Grafana dashboard (examples/grafana_dashboard.json). Ignored,
 * saying why, where `prometheus` is not installed (`.ci/run` installs it).
 */
import assert from "node:assert/strict";
import { silentLogger } from "../core/log.ts";
import { createAgentServer } from "../server/app.ts";
import { parseConfigText } from "../server/config.ts";
import { sleep } from "./_core_helpers.ts";
import { dialTwilio, speakTurn } from "./_twilio_client.ts";
import { DASHBOARD, dashboardQueries, runnable } from "./_grafana.ts";
import { HELLO_BYE_GRAPH } from "./_graph_fixture.ts";

const SECRET = "twilio-secret";
const PUBLIC = "https://agent.example.com";

function prometheusMissing(): string | undefined {
  try {
    const out = new Deno.Command("prometheus", {
      args: ["--version"],
      stdout: "null",
      stderr: "null",
    })
      .outputSync();
    return out.success ? undefined : "`prometheus --version` failed";
  } catch (err) {
    return err instanceof Deno.errors.NotFound
      ? "prometheus is not installed (apt-get install prometheus)"
      : `cannot run prometheus: ${err instanceof Error ? err.message : err}`;
  }
}

const missing = prometheusMissing();
if (missing !== undefined) console.warn(`prometheus scrape test ignored: ${missing}`);

function freePort(): number {
  const l = Deno.listen({ hostname: "127.0.0.1", port: 0 });
  const port = (l.addr as Deno.NetAddr).port;
  l.close();
  return port;
}

/** One instant vector from Prometheus: its samples' values as numbers, by label set. */
async function query(
  prom: string,
  q: string,
): Promise<{ metric: Record<string, string>; v: number }[]> {
  const res = await fetch(`${prom}/api/v1/query?query=${encodeURIComponent(q)}`);
  const body = await res.json();
  assert.equal(body.status, "success", JSON.stringify(body));
  return (body.data.result as { metric: Record<string, string>; value: [number, string] }[])
    .map((r) => ({ metric: r.metric, v: Number(r.value[1]) }));
}

/** Poll `q` until `ok` holds for its samples (or fail after `ms`, showing the last answer). */
async function eventually(
  prom: string,
  q: string,
  ok: (samples: { metric: Record<string, string>; v: number }[]) => boolean,
  ms = 20_000,
) {
  const end = performance.now() + ms;
  let last: unknown;
  while (performance.now() < end) {
    const samples = await query(prom, q);
    if (ok(samples)) return samples;
    last = samples;
    await sleep(250);
  }
  throw new Error(`prometheus never answered ${q} as hoped; last: ${JSON.stringify(last)}`);
}

Deno.test({
  name: "prometheus scrape: a real Prometheus reads active calls and turn latency from /metrics",
  ignore: missing !== undefined,
  fn: async () => {
    const r = await parseConfigText(
      JSON.stringify({
        agent: {
          graph: HELLO_BYE_GRAPH,
        },
        providers: { realtime: { name: "echo", options: { tts: "none", greeting: "hi" } } },
        telephony: { public_url: PUBLIC, carriers: ["twilio"] },
      }),
      "json",
      ".",
    );
    if (!r.ok) throw new Error(JSON.stringify(r.problems));
    const app = await createAgentServer({
      config: r.config,
      env: (n) => (n === "TWILIO_AUTH_TOKEN" ? SECRET : undefined),
      logger: silentLogger,
    });
    const server = Deno.serve({ hostname: "127.0.0.1", port: 0, onListen: () => {} }, app.handler);
    const base = `http://127.0.0.1:${server.addr.port}`;

    await Deno.mkdir(".tmp", { recursive: true });
    const dir = await Deno.makeTempDir({ dir: ".tmp", prefix: "prometheus_" });
    await Deno.writeTextFile(
      `${dir}/prometheus.yml`,
      [
        "global: { scrape_interval: 1s, evaluation_interval: 1s }",
        "scrape_configs:",
        "  - job_name: flowcat",
        "    scrape_interval: 1s",
        "    scrape_timeout: 1s",
        "    metrics_path: /metrics",
        `    static_configs: [{ targets: ["127.0.0.1:${server.addr.port}"] }]`,
        "",
      ].join("\n"),
    );
    const promPort = freePort();
    const prom = `http://127.0.0.1:${promPort}`;
    const child = new Deno.Command("prometheus", {
      args: [
        `--config.file=${dir}/prometheus.yml`,
        `--storage.tsdb.path=${dir}/data`,
        `--web.listen-address=127.0.0.1:${promPort}`,
        "--log.level=warn",
      ],
      stdout: "null",
      stderr: "piped",
    }).spawn();
    let promLog = "";
    const logDone = (async () => {
      for await (const c of child.stderr) promLog += new TextDecoder().decode(c);
    })();
    const calls: Awaited<ReturnType<typeof dialTwilio>>[] = [];
    try {
      // Ready once its API answers.
      const readyBy = performance.now() + 20_000;
      for (;;) {
        const res = await fetch(`${prom}/-/ready`).catch(() => undefined);
        const up = res?.status === 200;
        await res?.body?.cancel();
        if (up) break;
        if (performance.now() > readyBy) throw new Error(`prometheus never ready:\n${promLog}`);
        await sleep(200);
      }
      await eventually(prom, 'up{job="flowcat"}', (s) => s.length === 1 && s[0].v === 1);

      // Two calls at once: Prometheus sees two active calls.
      for (let i = 0; i < 2; i++) {
        calls.push(await dialTwilio(base, { secret: SECRET, publicUrl: PUBLIC }));
      }
      await eventually(prom, "flowcat_active_calls", (s) => s.length === 1 && s[0].v === 2);

      // A turn each (the echo answers it), then both hang up.
      for (const c of calls) await speakTurn(c.call);
      await eventually(prom, "flowcat_turn_latency_seconds_count", (s) => s[0]?.v === 2);
      for (const c of calls) await c.call.hangup();
      await eventually(prom, "flowcat_active_calls", (s) => s[0]?.v === 0);

      const ended = await eventually(
        prom,
        'flowcat_calls_ended_total{reason="caller_hung_up"}',
        (s) => s[0]?.v === 2,
      );
      assert.equal(ended[0].metric.transport, "twilio");
      const buckets = await query(prom, "flowcat_turn_latency_seconds_bucket");
      const inf = buckets.find((b) => b.metric.le === "+Inf");
      assert.equal(inf?.v, 2, JSON.stringify(buckets));
      const p50 = await query(
        prom,
        "histogram_quantile(0.5, sum by (le) (flowcat_turn_latency_seconds_bucket))",
      );
      assert.ok(p50[0].v > 0 && p50[0].v <= 2, `median turn latency ${p50[0].v} s`);
      const peak = await query(prom, "max_over_time(flowcat_active_calls[5m])");
      assert.equal(peak[0].v, 2);
      const ttfb = await query(prom, "flowcat_provider_ttfb_seconds_count");
      assert.equal(ttfb[0]?.metric.service, "realtime");
      assert.equal(ttfb[0]?.metric.provider, "echo");

      // Every query of the example Grafana dashboard is PromQL this Prometheus runs (rates over
      // a few seconds of history have no value yet; the gauges do).
      const dash = JSON.parse(await Deno.readTextFile(DASHBOARD));
      const answers = new Map<string, number>();
      for (const { panel, expr } of dashboardQueries(dash)) {
        const samples = await query(prom, runnable(expr));
        if (samples.length > 0 && !answers.has(panel)) answers.set(panel, samples[0].v);
      }
      assert.equal(answers.get("Active calls"), 0, "both calls are over");
      assert.ok((answers.get("Memory") ?? 0) > 1e6, JSON.stringify([...answers]));
      assert.ok((answers.get("Uptime") ?? 0) > 0);
    } finally {
      for (const c of calls) await c.call.close();
      child.kill("SIGTERM");
      await child.status;
      await logDone;
      await app.calls.drain(1000);
      await server.shutdown();
      await app.close();
      await Deno.remove(dir, { recursive: true }).catch(() => {});
    }
  },
});
