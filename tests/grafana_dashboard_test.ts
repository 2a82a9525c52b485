/**
 * The example Grafana dashboard (examples/grafana_dashboard.json) parses, is importable as
 * Grafana expects (templated Prometheus data source, panel ids, a 24-column grid) and queries only
 * metric names and labels the agent server exports (server/server_metrics.ts); every family the
 * server exports is on it. tests/prometheus_scrape_test.ts runs its queries against a real
 * Prometheus scraping a server during calls.
 */
import assert from "node:assert/strict";
import { Family } from "../server/prometheus.ts";
import { createServerMetrics } from "../server/server_metrics.ts";
import { DASHBOARD, dashboardQueries } from "./_grafana.ts";

/** PromQL words that are not metric names. */
const PROMQL = new Set([
  "sum",
  "max",
  "min",
  "avg",
  "rate",
  "increase",
  "histogram_quantile",
  "by",
  "without",
  "time",
  "le",
]);

/** Labels every series may carry beyond its own: Prometheus's and the worker join's. */
const ANY_SERIES = new Set(["instance", "job", "le", "worker"]);

function exported() {
  const m = createServerMetrics();
  const families = new Map(
    m.registry.collect().map((f) => [f.name, { type: f.type, labels: [] as readonly string[] }]),
  );
  for (const v of Object.values(m)) {
    if (v instanceof Family) families.get(v.name)!.labels = v.labelNames;
  }
  return families;
}

/** The family a series name belongs to (`x_bucket`, `x_sum`, `x_count` of a histogram `x`). */
function familyOf(name: string, families: ReturnType<typeof exported>): string | undefined {
  if (families.has(name)) return name;
  const base = name.replace(/_(bucket|sum|count)$/, "");
  return families.get(base)?.type === "histogram" ? base : undefined;
}

Deno.test("grafana dashboard: parses and is shaped as Grafana imports it", async () => {
  const dash = JSON.parse(await Deno.readTextFile(DASHBOARD));
  assert.equal(dash.title, "Flowcat agent server");
  assert.equal(typeof dash.uid, "string");
  assert.ok(dash.schemaVersion >= 36);
  const vars = dash.templating.list.map((v: { name: string; type: string }) => [v.name, v.type]);
  assert.deepEqual(vars, [["datasource", "datasource"], ["instance", "query"]]);
  const ids = new Set<number>();
  for (const p of dash.panels) {
    assert.ok(!ids.has(p.id), `panel id ${p.id} once`);
    ids.add(p.id);
    assert.ok(p.gridPos.x + p.gridPos.w <= 24, `${p.title} fits the 24-column grid`);
    if (p.type === "row") continue;
    assert.deepEqual(p.datasource, { type: "prometheus", uid: "${datasource}" }, p.title);
    assert.ok(p.targets.length > 0, `${p.title} queries something`);
    for (const t of p.targets) {
      assert.match(t.expr, /instance=~"\$instance"/, `${p.title}: ${t.expr}`);
    }
  }
});

Deno.test("grafana dashboard: queries only what /metrics exports, and all of it", async () => {
  const dash = JSON.parse(await Deno.readTextFile(DASHBOARD));
  const families = exported();
  const used = new Set<string>();
  for (const { panel, expr } of dashboardQueries(dash)) {
    // Metric names: identifiers outside label matchers, braces and quotes.
    const bare = expr.replace(/\{[^}]*\}/g, "{}").replace(/"[^"]*"/g, '""').replace(
      /\[[^\]]*\]/g,
      "[]",
    );
    const names = (bare.match(/[a-zA-Z_:][a-zA-Z0-9_:]*/g) ?? []).filter((w) => !PROMQL.has(w));
    const grouping = [...expr.matchAll(/\b(?:by|without) \(([^)]*)\)/g)].flatMap((m) =>
      m[1].split(",").map((l) => l.trim())
    );
    const groupingSet = new Set(grouping);
    const metrics = names.filter((n) => !groupingSet.has(n));
    assert.ok(metrics.length > 0, `${panel}: ${expr}`);
    const labels = new Set<string>(ANY_SERIES);
    for (const name of metrics) {
      const family = familyOf(name, families);
      assert.ok(family !== undefined, `${panel}: ${name} is not a metric the server exports`);
      used.add(family);
      for (const l of families.get(family)!.labels) labels.add(l);
    }
    const matchers = [...expr.matchAll(/([a-zA-Z_][a-zA-Z0-9_]*)\s*(?:=~|!~|!=|=)\s*"/g)].map((m) =>
      m[1]
    );
    for (const l of [...grouping, ...matchers]) {
      assert.ok(labels.has(l), `${panel}: label ${l} is not on ${metrics.join(", ")}`);
    }
  }
  assert.deepEqual([...families.keys()].filter((f) => !used.has(f)), [], "every family is shown");
});
