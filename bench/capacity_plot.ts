/**
 * The capacity plot as a standalone SVG (no dependencies): end-to-end p99 (solid) and p50
 * (dashed) per-frame latency, and the server pipeline's p99 (dotted, squares), against
 * concurrent calls; both axes logarithmic, one colour per worker-thread count, with the 5 ms
 * health limit and the 0.61 ms p99 target (docs/performance.md) drawn in, and (grey) the
 * end-to-end p99 of the bare-echo floor when it was measured.
 * @module
 */

import type { CapacityPoint } from "./capacity_point.ts";
import type { MachineInfo } from "./capacity_stats.ts";

const W = 720;
const H = 440;
const M = { left: 70, right: 200, top: 40, bottom: 56 };
const COLOURS = ["#1f77b4", "#d62728", "#2ca02c", "#9467bd"];

function esc(s: string): string {
  return s.replace(
    /[&<>"]/g,
    (c) => ({ "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;" })[c]!,
  );
}

function decades(lo: number, hi: number): number[] {
  const out: number[] = [];
  for (let e = Math.floor(Math.log10(lo)); e <= Math.ceil(Math.log10(hi)); e++) out.push(10 ** e);
  return out;
}

function label(v: number): string {
  return v >= 1000 ? `${v / 1000}k` : String(v);
}

/** The worst server-process pipeline p99 of a point (0 when it was not traced). */
function pipelineP99(p: CapacityPoint): number {
  return Math.max(0, ...p.server_split.map((t) => t.pipeline_ms.p99));
}

/** Render the plot for `points` (and the `floor` points of the bare echo, if any). */
export function capacitySvg(
  points: readonly CapacityPoint[],
  machine: MachineInfo,
  floor: readonly CapacityPoint[] = [],
): string {
  const ok = points.filter((p) => p.latency_ms.samples > 0);
  const base = floor.filter((p) => p.latency_ms.samples > 0).sort((a, b) => a.calls - b.calls);
  const xs = ok.map((p) => p.calls);
  const ys = ok.flatMap((p) => [p.latency_ms.p50, p.latency_ms.p99, pipelineP99(p)])
    .concat(base.map((p) => p.latency_ms.p99))
    .filter((y) => y > 0);
  const xHi = Math.max(2000, ...xs);
  const xTicks = [...decades(Math.min(10, ...xs), xHi).filter((t) => t < xHi), xHi];
  const yTicks = decades(Math.min(0.1, ...ys), Math.max(10, ...ys));
  const [x0, x1] = [Math.log10(xTicks[0]), Math.log10(xHi)];
  const [y0, y1] = [Math.log10(yTicks[0]), Math.log10(yTicks.at(-1)!)];
  const pw = W - M.left - M.right;
  const ph = H - M.top - M.bottom;
  const sx = (v: number) => M.left + ((Math.log10(v) - x0) / (x1 - x0)) * pw;
  const sy = (v: number) => M.top + ph - ((Math.log10(Math.max(v, 1e-3)) - y0) / (y1 - y0)) * ph;
  const f = (n: number) => n.toFixed(1);
  const parts: string[] = [
    `<svg xmlns="http://www.w3.org/2000/svg" width="${W}" height="${H}" viewBox="0 0 ${W} ${H}" ` +
    `font-family="sans-serif" font-size="12">`,
    `<rect width="${W}" height="${H}" fill="white"/>`,
    `<text x="${M.left}" y="22" font-size="14" font-weight="bold">Per-frame echo latency vs ` +
    `concurrent calls (${esc(machine.host)}, ${machine.cpus} CPUs)</text>`,
  ];
  for (const t of xTicks) {
    parts.push(
      `<line x1="${f(sx(t))}" y1="${M.top}" x2="${f(sx(t))}" y2="${M.top + ph}" stroke="#ddd"/>`,
      `<text x="${f(sx(t))}" y="${M.top + ph + 18}" text-anchor="middle">${label(t)}</text>`,
    );
  }
  for (const t of yTicks) {
    parts.push(
      `<line x1="${M.left}" y1="${f(sy(t))}" x2="${M.left + pw}" y2="${f(sy(t))}" stroke="#ddd"/>`,
      `<text x="${M.left - 8}" y="${f(sy(t) + 4)}" text-anchor="end">${t}</text>`,
    );
  }
  parts.push(
    `<rect x="${M.left}" y="${M.top}" width="${pw}" height="${ph}" fill="none" stroke="#444"/>`,
    `<text x="${M.left + pw / 2}" y="${H - 14}" text-anchor="middle">concurrent calls ` +
      `(log)</text>`,
    `<text transform="translate(18 ${M.top + ph / 2}) rotate(-90)" text-anchor="middle">` +
      `latency, ms (log)</text>`,
  );
  const refs: [number, string, string][] = [
    [5, "#e69f00", "5 ms (pipeline p99 limit)"],
    [0.61, "#999", "0.61 ms (target p99, 16 vCPU)"],
  ];
  let legendY = M.top + 10;
  const legend = (colour: string, dash: string, text: string, line = true) => {
    const lx = M.left + pw + 12;
    parts.push(
      line
        ? `<line x1="${lx}" y1="${legendY}" x2="${lx + 24}" y2="${legendY}" stroke="${colour}" ` +
          `stroke-width="2"${dash}/>`
        : `<circle cx="${lx + 12}" cy="${legendY}" r="3.5" fill="white" stroke="${colour}"/>`,
      `<text x="${lx + 30}" y="${legendY + 4}" font-size="11">${esc(text)}</text>`,
    );
    legendY += 18;
  };
  for (const [v, colour, text] of refs) {
    if (v < yTicks[0] || v > yTicks.at(-1)!) continue;
    parts.push(
      `<line x1="${M.left}" y1="${f(sy(v))}" x2="${M.left + pw}" y2="${f(sy(v))}" ` +
        `stroke="${colour}" stroke-dasharray="2 3"/>`,
    );
    legend(colour, ' stroke-dasharray="2 3"', text);
  }
  const workers = [...new Set(ok.map((p) => p.workers))].sort((a, b) => a - b);
  workers.forEach((w, i) => {
    const colour = COLOURS[i % COLOURS.length];
    const series = ok.filter((p) => p.workers === w).sort((a, b) => a.calls - b.calls);
    const lines = [
      ["p99", "", (p: CapacityPoint) => p.latency_ms.p99, "end-to-end p99"],
      ["p50", ' stroke-dasharray="6 4"', (p: CapacityPoint) => p.latency_ms.p50, "end-to-end p50"],
      ["pipeline p99", ' stroke-dasharray="1 3"', pipelineP99, "server pipeline p99"],
    ] as const;
    for (const [key, dash, value, text] of lines) {
      const shown = series.filter((p) => value(p) > 0);
      if (shown.length === 0) continue;
      const pts = shown.map((p) => `${f(sx(p.calls))},${f(sy(value(p)))}`).join(" ");
      parts.push(
        `<polyline points="${pts}" fill="none" stroke="${colour}" stroke-width="2"${dash}/>`,
      );
      for (const p of shown) {
        const cx = sx(p.calls);
        const cy = sy(value(p));
        const fill = p.healthy ? colour : "white";
        const title = `<title>${p.calls} calls, ${w} worker thread(s): ${key} ${value(p)} ms, ` +
          `lost ${p.frames_lost}</title>`;
        parts.push(
          key === "pipeline p99"
            ? `<rect x="${f(cx - 3)}" y="${f(cy - 3)}" width="6" height="6" fill="${fill}" ` +
              `stroke="${colour}">${title}</rect>`
            : `<circle cx="${f(cx)}" cy="${f(cy)}" r="3.5" fill="${fill}" stroke="${colour}">` +
              `${title}</circle>`,
        );
      }
      legend(colour, dash, `${text}, ${w} worker${w === 1 ? "" : "s"}`);
    }
  });
  if (base.length > 0) {
    const pts = base.map((p) => `${f(sx(p.calls))},${f(sy(p.latency_ms.p99))}`).join(" ");
    parts.push(
      `<polyline points="${pts}" fill="none" stroke="#888" stroke-width="2" ` +
        `stroke-dasharray="8 3 2 3"/>`,
    );
    legend("#888", ' stroke-dasharray="8 3 2 3"', "bare echo (floor), e2e p99");
  }
  legend("#444", "", "hollow: unhealthy point", false);
  parts.push("</svg>");
  return parts.join("\n") + "\n";
}
