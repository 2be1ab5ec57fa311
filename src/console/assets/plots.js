// Two small line plots, drawn as SVG by this page: live tasks by status, and poll outcomes per
// minute, over the samples the gateway keeps (one per 10 s, one hour at most).
import { el, fill, svg } from './dom.js';

const WIDTH = 480;
const HEIGHT = 160;
const PAD = { left: 34, right: 8, top: 8, bottom: 20 };

/**
 * `points`: [{ at: ISO time, values: { name: number } }], oldest first; `names`: the series.
 * The y axis starts at 0; the x axis spans the samples given.
 */
export function drawLines(target, legend, points, names) {
  const title = target.querySelector('title');
  target.replaceChildren(title);
  const times = points.map((p) => Date.parse(p.at));
  const max = Math.max(1, ...points.flatMap((p) => names.map((n) => p.values[n] ?? 0)));
  const t0 = times[0] ?? Date.now();
  const t1 = Math.max(t0 + 1, times.at(-1) ?? t0 + 1);
  const x = (t) => PAD.left + ((t - t0) / (t1 - t0)) * (WIDTH - PAD.left - PAD.right);
  const y = (v) => HEIGHT - PAD.bottom - (v / max) * (HEIGHT - PAD.top - PAD.bottom);
  target.append(
    svg('line', { class: 'axis', x1: PAD.left, y1: y(0), x2: WIDTH - PAD.right, y2: y(0) }),
    svg('line', { class: 'axis', x1: PAD.left, y1: PAD.top, x2: PAD.left, y2: y(0) }),
    svg('text', { class: 'tick', x: PAD.left - 4, y: PAD.top + 8, 'text-anchor': 'end' }, formatCount(max)),
    svg('text', { class: 'tick', x: PAD.left - 4, y: y(0), 'text-anchor': 'end' }, '0'),
  );
  if (points.length > 0) {
    target.append(
      svg('text', { class: 'tick', x: PAD.left, y: HEIGHT - 4 }, clock(t0)),
      svg('text', { class: 'tick', x: WIDTH - PAD.right, y: HEIGHT - 4, 'text-anchor': 'end' }, clock(t1)),
    );
  } else {
    target.append(svg('text', { class: 'tick', x: WIDTH / 2, y: HEIGHT / 2, 'text-anchor': 'middle' }, 'no samples yet'));
  }
  for (const name of names) {
    if (points.length === 0) continue;
    const path = points.map((p, i) => `${i === 0 ? 'M' : 'L'}${x(times[i]).toFixed(1)},${y(p.values[name] ?? 0).toFixed(1)}`).join(' ');
    target.append(svg('path', { class: `series s-${name}`, d: path }));
  }
  const latest = points.at(-1)?.values ?? {};
  fill(legend, names.map((name) => el('li', {}, el('span', { class: `swatch s-${name}`, 'aria-hidden': 'true' }), `${name} ${formatCount(latest[name] ?? 0)}`)));
}

function formatCount(value) {
  return value >= 100 || Number.isInteger(value) ? String(Math.round(value)) : value.toFixed(1);
}

function clock(ms) {
  return new Date(ms).toLocaleTimeString([], { hour: '2-digit', minute: '2-digit' });
}
