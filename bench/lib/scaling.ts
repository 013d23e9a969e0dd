/**
 * How the size-dependent figures move from 1k to 10k to 100k records: a table
 * with a column per size, and an SVG plot (written by hand: no plotting
 * dependency) of each figure relative to its value at the smallest size, so
 * lines of different units share one chart and a flat line means "does not
 * grow with the corpus".
 */
import { fmt, type FigureSummary } from './results.js';

interface Series {
  name: string;
  unit: string;
  points: { size: number; value: number }[];
}

function series(summaries: FigureSummary[]): Series[] {
  const byName = new Map<string, Series>();
  for (const s of summaries) {
    if (s.size === undefined) continue;
    const key = s.name;
    let entry = byName.get(key);
    if (!entry) byName.set(key, (entry = { name: key, unit: s.unit, points: [] }));
    entry.points.push({ size: s.size, value: s.value.median });
  }
  return [...byName.values()].filter((x) => x.points.length > 1).map((x) => ({ ...x, points: x.points.sort((a, b) => a.size - b.size) }));
}

export function scalingMarkdown(summaries: FigureSummary[]): string {
  const all = series(summaries);
  if (all.length === 0) return '';
  const sizes = [...new Set(all.flatMap((s) => s.points.map((p) => p.size)))].sort((a, b) => a - b);
  const out = ['### Scaling (medians)', '', `| figure | ${sizes.map((n) => `${n.toLocaleString('en-US')} records`).join(' | ')} | largest ÷ smallest |`, `|---|${sizes.map(() => '---|').join('')}---|`];
  for (const s of all) {
    const cells = sizes.map((n) => {
      const p = s.points.find((q) => q.size === n);
      return p ? `${fmt(p.value)} ${s.unit}` : '';
    });
    const first = s.points[0]!.value;
    const last = s.points[s.points.length - 1]!.value;
    out.push(`| ${s.name} | ${cells.join(' | ')} | ×${fmt(last / first, 2)} |`);
  }
  return out.join('\n') + '\n';
}

const COLORS = ['#1f77b4', '#d62728', '#2ca02c', '#9467bd', '#ff7f0e', '#8c564b', '#e377c2', '#17becf', '#7f7f7f', '#bcbd22', '#393b79', '#637939'];
const esc = (s: string) => s.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;');

export function scalingSvg(summaries: FigureSummary[]): string | null {
  const all = series(summaries);
  if (all.length === 0) return null;
  const W = 1040;
  const plot = { left: 70, top: 40, width: 480, height: 380 };
  const H = Math.max(plot.top + plot.height + 60, 60 + all.length * 22);
  const sizes = [...new Set(all.flatMap((s) => s.points.map((p) => p.size)))].sort((a, b) => a - b);
  const rel = all.map((s) => s.points.map((p) => ({ size: p.size, r: p.value / s.points[0]!.value })));
  const rs = rel.flat().map((p) => p.r);
  const lo = Math.min(1 / 2, ...rs);
  const hi = Math.max(2, ...rs, sizes[sizes.length - 1]! / sizes[0]!); // room for the grows-with-records line
  const y0 = Math.floor(Math.log10(lo));
  const y1 = Math.ceil(Math.log10(hi));
  const x = (n: number) => plot.left + ((Math.log10(n) - Math.log10(sizes[0]!)) / (Math.log10(sizes[sizes.length - 1]!) - Math.log10(sizes[0]!) || 1)) * plot.width;
  const y = (r: number) => plot.top + plot.height - ((Math.log10(r) - y0) / (y1 - y0)) * plot.height;
  const parts: string[] = [];
  parts.push(`<svg xmlns="http://www.w3.org/2000/svg" width="${W}" height="${H}" viewBox="0 0 ${W} ${H}" font-family="sans-serif" font-size="12">`);
  parts.push(`<rect width="${W}" height="${H}" fill="white"/>`);
  parts.push(`<text x="${plot.left}" y="22" font-size="14" font-weight="bold">p-e-relay: each figure relative to its value at ${sizes[0]!.toLocaleString('en-US')} records (log–log)</text>`);
  parts.push(`<text x="${plot.left + plot.width + 30}" y="${plot.top + plot.height}" fill="#555">Rates (calls/s, appends/s): higher is better. Times, memory: lower is better.</text>`);
  parts.push(`<text x="${plot.left + plot.width + 30}" y="${plot.top + plot.height + 18}" fill="#555">Dashed: growing in proportion to the number of records.</text>`);
  for (let e = y0; e <= y1; e++) {
    for (const m of [1, 2, 5]) {
      const r = m * 10 ** e;
      if (r < 10 ** y0 || r > 10 ** y1) continue;
      const yy = y(r).toFixed(1);
      parts.push(`<line x1="${plot.left}" x2="${plot.left + plot.width}" y1="${yy}" y2="${yy}" stroke="${m === 1 ? '#bbb' : '#eee'}"/>`);
      parts.push(`<text x="${plot.left - 6}" y="${yy}" text-anchor="end" dominant-baseline="middle">×${r >= 1 ? r : r.toFixed(Math.max(0, -e))}</text>`);
    }
  }
  for (const n of sizes) {
    const xx = x(n).toFixed(1);
    parts.push(`<line x1="${xx}" x2="${xx}" y1="${plot.top}" y2="${plot.top + plot.height}" stroke="#ddd"/>`);
    parts.push(`<text x="${xx}" y="${plot.top + plot.height + 18}" text-anchor="middle">${n.toLocaleString('en-US')}</text>`);
  }
  parts.push(`<text x="${plot.left + plot.width / 2}" y="${plot.top + plot.height + 40}" text-anchor="middle">records in the corpus</text>`);
  const first = sizes[0]!;
  const last = sizes[sizes.length - 1]!;
  parts.push(`<line x1="${x(first).toFixed(1)}" y1="${y(1).toFixed(1)}" x2="${x(last).toFixed(1)}" y2="${y(last / first).toFixed(1)}" stroke="#999" stroke-dasharray="6 4"/>`);
  rel.forEach((points, i) => {
    const color = COLORS[i % COLORS.length]!;
    const d = points.map((p, k) => `${k ? 'L' : 'M'}${x(p.size).toFixed(1)},${y(p.r).toFixed(1)}`).join(' ');
    parts.push(`<path d="${d}" fill="none" stroke="${color}" stroke-width="2"/>`);
    for (const p of points) parts.push(`<circle cx="${x(p.size).toFixed(1)}" cy="${y(p.r).toFixed(1)}" r="3" fill="${color}"/>`);
    const s = all[i]!;
    const ly = 50 + i * 22;
    const lx = plot.left + plot.width + 30;
    const last = s.points[s.points.length - 1]!;
    parts.push(`<line x1="${lx}" x2="${lx + 20}" y1="${ly}" y2="${ly}" stroke="${color}" stroke-width="3"/>`);
    parts.push(`<text x="${lx + 26}" y="${ly}" dominant-baseline="middle">${esc(s.name)}: ${fmt(s.points[0]!.value)} → ${fmt(last.value)} ${esc(s.unit)}</text>`);
  });
  parts.push('</svg>');
  return parts.join('\n') + '\n';
}
