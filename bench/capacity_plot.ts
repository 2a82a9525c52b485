/**
 * The capacity plot as a standalone SVG (no dependencies): p99 (solid) and p50 (dashed)
 * per-frame latency against concurrent calls, both axes logarithmic, one colour per server
 * process count, with the 5 ms health limit and the specification's 0.61 ms target drawn in.
 * @module
 */

import type { CapacityPoint } from "./capacity_point.ts";
import type { MachineInfo } from "./capacity_stats.ts";

const W = 720;
const H = 440;
const M = { left: 70, right: 170, top: 40, bottom: 56 };
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

/** Render the plot for `points`. */
export function capacitySvg(points: readonly CapacityPoint[], machine: MachineInfo): string {
  const ok = points.filter((p) => p.latency_ms.samples > 0);
  const xs = ok.map((p) => p.calls);
  const ys = ok.flatMap((p) => [p.latency_ms.p50, p.latency_ms.p99]).filter((y) => y > 0);
  const xTicks = decades(Math.min(10, ...xs), Math.max(2000, ...xs));
  const yTicks = decades(Math.min(0.1, ...ys), Math.max(10, ...ys));
  const [x0, x1] = [Math.log10(xTicks[0]), Math.log10(xTicks.at(-1)!)];
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
    [5, "#e69f00", "5 ms health limit"],
    [0.61, "#999", "spec p99 target 0.61 ms (16 vCPU)"],
  ];
  let legendY = M.top + 10;
  const legend = (colour: string, dash: string, text: string) => {
    const lx = M.left + pw + 12;
    parts.push(
      `<line x1="${lx}" y1="${legendY}" x2="${lx + 24}" y2="${legendY}" stroke="${colour}" ` +
        `stroke-width="2"${dash}/>`,
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
    for (const [key, dash] of [["p99", ""], ["p50", ' stroke-dasharray="6 4"']] as const) {
      const pts = series.map((p) => `${f(sx(p.calls))},${f(sy(p.latency_ms[key]))}`).join(" ");
      parts.push(
        `<polyline points="${pts}" fill="none" stroke="${colour}" stroke-width="2"${dash}/>`,
      );
      for (const p of series) {
        const cx = f(sx(p.calls));
        const cy = f(sy(p.latency_ms[key]));
        const fill = p.healthy ? colour : "white";
        parts.push(
          `<circle cx="${cx}" cy="${cy}" r="3.5" fill="${fill}" stroke="${colour}">` +
            `<title>${p.calls} calls, ${w} process(es): ${key} ${p.latency_ms[key]} ms, ` +
            `lost ${p.frames_lost}</title></circle>`,
        );
      }
      legend(colour, dash, `${key}, ${w} process${w === 1 ? "" : "es"}`);
    }
  });
  legend("#444", "", "hollow dot: saturated");
  parts.push("</svg>");
  return parts.join("\n") + "\n";
}
