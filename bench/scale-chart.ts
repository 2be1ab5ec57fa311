/**
 * The scale curves drawn as plain SVG beside the bench's bar chart (bench/chart.ts): small
 * panels of lines over a logarithmic axis of sizes (live tasks, open listeners, held calls),
 * one line per store or figure, medians with their min–max whiskers where the points have
 * rounds. A flat curve is a level line; each panel names its curves' verdicts in its legend.
 */
import { scaleCurves, sizeLabel, verdictOf, type Curve } from './scale-figures.js';
import type { ScaleCheck } from './scale.js';

interface Series {
  curve: Curve;
  label: string;
  color: string;
  dashed?: boolean;
}

interface PanelSpec {
  title: string;
  series: { id: string; label: string; color: string; dashed?: boolean }[];
}

const MEMORY = '#e65100';
const REDIS = '#8e24aa';
/** The four poll curves of one figure (cpu, p50, p99): each store, forwarded and cached. */
function pollSeries(figure: string): PanelSpec['series'] {
  return (['memory', 'redis'] as const).flatMap((store) =>
    (['forwarded', 'cached'] as const).map((kind) => ({ id: `${store}-${kind}-${figure}`, label: `${store === 'memory' ? 'memory' : 'Redis'}, ${kind}`, color: store === 'memory' ? MEMORY : REDIS, dashed: kind === 'cached' })),
  );
}

const PANELS: PanelSpec[] = [
  { title: 'CPU µs per poll, most conns', series: pollSeries('cpu') },
  { title: 'p50 µs per poll, fewest conns', series: pollSeries('p50') },
  { title: 'p99 µs per poll, fewest conns', series: pollSeries('p99') },
  {
    title: 'bytes per live task',
    series: [
      { id: 'memory-heap', label: 'memory: gateway heap', color: MEMORY },
      { id: 'redis-used-memory', label: 'Redis: used_memory', color: REDIS },
    ],
  },
  {
    title: 'task creations per second (HTTP)',
    series: [
      { id: 'memory-creations', label: 'memory', color: MEMORY },
      { id: 'redis-creations', label: 'Redis', color: REDIS },
    ],
  },
  {
    title: 'push: heap B per open listener',
    series: [{ id: 'push-heap', label: 'memory, one replica', color: '#1565c0' }],
  },
  {
    title: 'push: delivery lag ms, by listeners',
    series: [
      { id: 'push-lag-p50', label: 'p50', color: '#1565c0' },
      { id: 'push-lag-p99', label: 'p99', color: '#1565c0', dashed: true },
    ],
  },
  {
    title: 'held calls: heap B per held call',
    series: [{ id: 'held-heap', label: 'memory, a socket per call', color: '#2e7d32' }],
  },
];

const COLUMNS = 4;
const PANEL_W = 290;
const PANEL_H = 230;
const PLOT = { left: 48, right: 16, top: 30, bottom: 78 };
const TOP = 50;

function esc(text: string): string {
  return text.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;');
}

function valueLabel(value: number): string {
  return value >= 10_000 ? `${(value / 1000).toFixed(1)}k` : value >= 100 ? String(Math.round(value)) : String(Math.round(value * 10) / 10);
}

function renderPanel(spec: PanelSpec, series: Series[], x0: number, y0: number): string[] {
  const out: string[] = [`<text x="${x0 + 4}" y="${y0 + 16}" font-weight="bold">${esc(spec.title)}</text>`];
  const w = PANEL_W - PLOT.left - PLOT.right;
  const h = PANEL_H - PLOT.top - PLOT.bottom;
  const px = x0 + PLOT.left;
  const py = y0 + PLOT.top;
  const points = series.flatMap((s) => s.curve.points);
  if (points.length === 0) {
    out.push(`<text x="${px + 4}" y="${py + h / 2}" fill="#999">not measured</text>`);
    return out;
  }
  const xs = [...new Set(points.map((p) => p.x))].sort((a, b) => a - b);
  const [lo, hi] = [Math.log10(xs[0]!), Math.log10(xs[xs.length - 1]!)];
  const sx = (x: number) => px + (hi === lo ? w / 2 : ((Math.log10(x) - lo) / (hi - lo)) * w);
  const top = Math.max(1, ...points.map((p) => p.max ?? p.y)) * 1.15;
  const sy = (y: number) => py + h - (y / top) * h;
  out.push(`<line x1="${px}" y1="${py}" x2="${px}" y2="${py + h}" stroke="#333"/><line x1="${px}" y1="${py + h}" x2="${px + w}" y2="${py + h}" stroke="#333"/>`);
  for (const f of [0, 0.5, 1]) {
    const y = sy(top * f);
    out.push(`<line x1="${px - 3}" y1="${y.toFixed(1)}" x2="${px + w}" y2="${y.toFixed(1)}" stroke="#eee"/><text x="${px - 5}" y="${(y + 3).toFixed(1)}" text-anchor="end" font-size="9" fill="#555">${valueLabel(top * f)}</text>`);
  }
  for (const x of xs) out.push(`<text x="${sx(x).toFixed(1)}" y="${py + h + 13}" text-anchor="middle" font-size="9" fill="#555">${sizeLabel(x)}</text>`);
  series.forEach((s, i) => {
    const pts = [...s.curve.points].sort((a, b) => a.x - b.x);
    const path = pts.map((p, k) => `${k === 0 ? 'M' : 'L'}${sx(p.x).toFixed(1)},${sy(p.y).toFixed(1)}`).join(' ');
    out.push(`<path d="${path}" fill="none" stroke="${s.color}" stroke-width="1.6"${s.dashed ? ' stroke-dasharray="5,3"' : ''}/>`);
    for (const p of pts) {
      const [cx, cy] = [sx(p.x), sy(p.y)];
      if (p.min !== undefined && p.max !== undefined) out.push(`<line x1="${cx.toFixed(1)}" y1="${sy(p.min).toFixed(1)}" x2="${cx.toFixed(1)}" y2="${sy(p.max).toFixed(1)}" stroke="${s.color}" stroke-width="1"/>`);
      // A point below the measurement's resolution is drawn hollow (and left out of the verdict).
      const fill = p.unresolved ? `fill="#ffffff" stroke="${s.color}"` : `fill="${s.color}"`;
      out.push(`<circle cx="${cx.toFixed(1)}" cy="${cy.toFixed(1)}" r="2.5" ${fill}><title>${esc(`${s.label}, ${sizeLabel(p.x)}: ${p.y}${p.min !== undefined ? ` (${p.min}–${p.max})` : ''}${p.unresolved ? ', below the resolution: not judged' : ''}`)}</title></circle>`);
      out.push(`<text x="${(cx + 4).toFixed(1)}" y="${(cy - 4).toFixed(1)}" font-size="8" fill="${s.color}">${valueLabel(p.y)}</text>`);
    }
    const verdict = verdictOf(s.curve);
    const flat = verdict.flat === null ? '' : verdict.flat ? ' — flat' : ` — ${verdict.lastOverFirst}× last ÷ first`;
    const ly = py + h + 28 + i * 12;
    out.push(`<line x1="${px}" y1="${ly - 3}" x2="${px + 16}" y2="${ly - 3}" stroke="${s.color}" stroke-width="1.6"${s.dashed ? ' stroke-dasharray="5,3"' : ''}/><text x="${px + 20}" y="${ly}" font-size="9">${esc(`${s.label}${flat}`)}</text>`);
  });
  return out;
}

export function renderScaleChart(check: ScaleCheck, subtitle: string): string {
  const curves = new Map(scaleCurves(check).map((c) => [c.id, c]));
  const rows = Math.ceil(PANELS.length / COLUMNS);
  const width = COLUMNS * PANEL_W + 20;
  const height = TOP + rows * PANEL_H + 24;
  const out: string[] = [
    `<svg xmlns="http://www.w3.org/2000/svg" width="${width}" height="${height}" viewBox="0 0 ${width} ${height}" font-family="Helvetica, Arial, sans-serif" font-size="11">`,
    `<rect width="${width}" height="${height}" fill="#ffffff"/>`,
    `<text x="10" y="20" font-size="15" font-weight="bold">taskgate scale curves</text>`,
    `<text x="10" y="38" fill="#555">${esc(subtitle)}</text>`,
  ];
  PANELS.forEach((spec, i) => {
    const series = spec.series.flatMap((s): Series[] => {
      const curve = curves.get(s.id);
      return curve && curve.points.length > 0 ? [{ curve, ...s }] : [];
    });
    out.push(...renderPanel(spec, series, 10 + (i % COLUMNS) * PANEL_W, TOP + Math.floor(i / COLUMNS) * PANEL_H));
  });
  out.push(`<text x="10" y="${height - 8}" fill="#777" font-size="10">x: live tasks, open listeners or held calls (log scale); points: medians over the kept rounds, whiskers min–max, hollow: below the resolution; a flat curve is a level line (docs/benchmarks.md "Scale").</text>`);
  out.push('</svg>');
  return `${out.join('\n')}\n`;
}
