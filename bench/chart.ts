/**
 * The chart of the same numbers as the table, drawn as plain SVG (no dependency): one row of
 * bars per scenario, one bar per target, in three panels — proxy CPU per request and requests
 * per second at 50 connections, p50 latency at one connection. Bars are medians; the whiskers
 * run from min to max over the kept rounds.
 */
import type { CellSummary, Spread } from './report.js';
import { SCENARIOS, type ScenarioName } from './scenarios.js';
import { TARGET_LABELS, type TargetName } from './targets.js';

const COLORS: Record<TargetName, string> = {
  direct: '#9e9e9e',
  nginx: '#2e7d32',
  fastify: '#1565c0',
  'taskgate-memory': '#e65100',
  'taskgate-redis': '#8e24aa',
  'taskgate-traced': '#ff8f00',
};

interface Panel {
  title: string;
  connections: number;
  pick: (cell: CellSummary) => Spread | null;
}

const PANELS: Panel[] = [
  { title: 'proxy CPU µs/request, 50 conns (lower: better)', connections: 50, pick: (c) => c.proxyCpuUsPerRequest },
  { title: 'requests/s, 50 conns (higher: better)', connections: 50, pick: (c) => c.rps },
  { title: 'p50 latency µs, 1 conn (lower: better)', connections: 1, pick: (c) => c.p50Us },
];

const LABEL_W = 170;
const PANEL_W = 300;
const GAP = 40;
const BAR_H = 11;
const GROUP_GAP = 14;
const TOP = 78;

function esc(text: string): string {
  return text.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;');
}

function label(value: number): string {
  return value >= 10_000 ? `${(value / 1000).toFixed(1)}k` : value >= 100 ? String(Math.round(value)) : value.toFixed(1);
}

export function renderChart(cells: CellSummary[], scenarios: readonly ScenarioName[], targets: readonly TargetName[], subtitle: string): string {
  const groupH = (n: number) => n * BAR_H + GROUP_GAP;
  const rowsOf = (s: ScenarioName) => targets.filter((t) => cells.some((c) => c.scenario === s && c.target === t));
  const height = TOP + scenarios.reduce((h, s) => h + groupH(Math.max(1, rowsOf(s).length)), 0) + 40;
  const width = LABEL_W + PANELS.length * (PANEL_W + GAP) + 10;
  const out: string[] = [
    `<svg xmlns="http://www.w3.org/2000/svg" width="${width}" height="${height}" viewBox="0 0 ${width} ${height}" font-family="Helvetica, Arial, sans-serif" font-size="11">`,
    `<rect width="${width}" height="${height}" fill="#ffffff"/>`,
    `<text x="10" y="20" font-size="15" font-weight="bold">taskgate benchmarks</text>`,
    `<text x="10" y="38" fill="#555">${esc(subtitle)}</text>`,
  ];
  // Legend: one swatch per target.
  let lx = 10;
  for (const t of targets) {
    out.push(`<rect x="${lx}" y="48" width="10" height="10" fill="${COLORS[t]}"/><text x="${lx + 14}" y="57">${esc(TARGET_LABELS[t])}</text>`);
    lx += 26 + TARGET_LABELS[t].length * 6;
  }

  PANELS.forEach((panel, p) => {
    const x0 = LABEL_W + p * (PANEL_W + GAP);
    const values = cells.filter((c) => c.connections === panel.connections).map(panel.pick).filter((s): s is Spread => s !== null);
    const max = Math.max(1, ...values.map((s) => s.max)) * 1.15;
    const scale = (v: number) => (v / max) * (PANEL_W - 40);
    out.push(`<text x="${x0}" y="${TOP - 6}" font-weight="bold">${esc(panel.title)}</text>`);
    out.push(`<line x1="${x0}" y1="${TOP}" x2="${x0}" y2="${height - 30}" stroke="#333"/>`);
    let y = TOP + 4;
    for (const scenario of scenarios) {
      const rows = rowsOf(scenario);
      if (p === 0) out.push(`<text x="${LABEL_W - 8}" y="${y + (rows.length * BAR_H) / 2 + 4}" text-anchor="end">${esc(SCENARIOS[scenario].short)}</text>`);
      for (const target of rows) {
        const cell = cells.find((c) => c.scenario === scenario && c.target === target && c.connections === panel.connections);
        const s = cell ? panel.pick(cell) : null;
        if (s) {
          const w = scale(s.median);
          out.push(`<rect x="${x0}" y="${y}" width="${w.toFixed(1)}" height="${BAR_H - 2}" fill="${COLORS[target]}"><title>${esc(`${target}: ${s.median} (${s.min}–${s.max})`)}</title></rect>`);
          const cy = y + (BAR_H - 2) / 2;
          out.push(`<line x1="${(x0 + scale(s.min)).toFixed(1)}" y1="${cy}" x2="${(x0 + scale(s.max)).toFixed(1)}" y2="${cy}" stroke="#000" stroke-width="1"/>`);
          out.push(`<text x="${(x0 + scale(s.max) + 4).toFixed(1)}" y="${y + BAR_H - 3}" font-size="9" fill="#333">${label(s.median)}</text>`);
        } else {
          out.push(`<text x="${x0 + 4}" y="${y + BAR_H - 3}" font-size="9" fill="#999">n/a</text>`);
        }
        y += BAR_H;
      }
      y += GROUP_GAP;
    }
  });
  out.push(`<text x="10" y="${height - 10}" fill="#777" font-size="10">bars: median over kept rounds; whiskers: min–max. Direct has no proxy, so no CPU bar.</text>`);
  out.push('</svg>');
  return `${out.join('\n')}\n`;
}
