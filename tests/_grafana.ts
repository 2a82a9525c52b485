/** Reading the example Grafana dashboard (examples/grafana_dashboard.json) in tests. */

/** The dashboard file. */
export const DASHBOARD = "examples/grafana_dashboard.json";

/** A panel query: its panel's title and its PromQL. */
export interface PanelQuery {
  panel: string;
  expr: string;
}

/** Every PromQL query of the dashboard's panels (rows' nested panels too). */
export function dashboardQueries(dash: { panels?: unknown[] }): PanelQuery[] {
  const out: PanelQuery[] = [];
  const walk = (panels: unknown[] | undefined) => {
    for (const p of panels ?? []) {
      const panel = p as { title?: string; targets?: { expr?: string }[]; panels?: unknown[] };
      for (const t of panel.targets ?? []) {
        if (typeof t.expr === "string") out.push({ panel: panel.title ?? "", expr: t.expr });
      }
      walk(panel.panels);
    }
  };
  walk(dash.panels);
  return out;
}

/** `expr` with the dashboard's variables given values Prometheus can run (`$instance` -> `.*`). */
export function runnable(expr: string): string {
  return expr.replaceAll("$instance", ".*");
}
