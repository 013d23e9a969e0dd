/**
 * The figures one run collects, and the table they print as. A figure holds
 * one value per repetition; when it has a reference (a ceiling or a peer) the
 * reference holds one value per repetition too, measured right beside it, and
 * the ratio is taken pair by pair.
 */
import { ratios, spread, type Spread } from './stats.js';

export interface Goal {
  /** What the goal bounds: the figure itself or its ratio to the reference. */
  on: 'value' | 'ratio';
  op: '>=' | '<=';
  target: number;
  /** Where the goal comes from, e.g. "issue 2". */
  source: string;
}

export interface Figure {
  section: string;
  name: string;
  unit: string;
  values: number[];
  reference?: { name: string; values: number[] };
  goal?: Goal;
  /** Corpus size, for the scaling table and plot. */
  size?: number;
  note?: string;
}

export interface FigureSummary extends Figure {
  value: Spread;
  ratio?: Spread;
  met?: boolean;
}

export class Results {
  readonly figures: Figure[] = [];
  readonly notes: string[] = [];

  add(figure: Figure): void {
    this.figures.push(figure);
    const s = summarize(figure);
    const ratio = s.ratio ? `  ×${fmt(s.ratio.median, 2)} of ${figure.reference!.name} (${fmt(s.ratio.min, 2)}–${fmt(s.ratio.max, 2)})` : '';
    const goal = s.goal ? `  goal ${goalText(s.goal)} ${s.met ? 'met' : 'NOT met'}` : '';
    if (figure.section !== 'Scaling') process.stdout.write(`  ${figure.name}: ${fmtSpread(s.value)} ${figure.unit}${ratio}${goal}\n`);
  }

  note(text: string): void {
    this.notes.push(text);
    process.stdout.write(`  note: ${text}\n`);
  }

  summaries(): FigureSummary[] {
    return this.figures.map(summarize);
  }
}

export function summarize(figure: Figure): FigureSummary {
  const value = spread(figure.values);
  const ratio = figure.reference ? spread(ratios(figure.values, figure.reference.values)) : undefined;
  let met: boolean | undefined;
  if (figure.goal) {
    const x = figure.goal.on === 'ratio' ? ratio?.median : value.median;
    met = x !== undefined && (figure.goal.op === '>=' ? x >= figure.goal.target : x <= figure.goal.target);
  }
  return { ...figure, value, ratio, met };
}

export function fmt(x: number, digits?: number): string {
  if (!Number.isFinite(x)) return String(x);
  const d = digits ?? (Math.abs(x) >= 100 ? 0 : Math.abs(x) >= 10 ? 1 : 2);
  return x.toLocaleString('en-US', { minimumFractionDigits: d, maximumFractionDigits: d });
}

export function fmtSpread(s: Spread, digits?: number): string {
  if (s.n <= 1) return fmt(s.median, digits);
  return `${fmt(s.median, digits)} (${fmt(s.min, digits)}–${fmt(s.max, digits)})`;
}

export function goalText(goal: Goal): string {
  const target = goal.on === 'ratio' ? `${goal.target}×` : fmt(goal.target);
  return `${goal.op.replace('>=', '≥').replace('<=', '≤')} ${target}`;
}

/** The whole run as Markdown: one table per section, for docs/performance-tables.md. */
export function markdownTables(summaries: FigureSummary[]): string {
  const out: string[] = [];
  // Scaling figures get their own table (a column per corpus size), from scaling.ts.
  const sections = [...new Set(summaries.map((s) => s.section))].filter((s) => s !== 'Scaling');
  for (const section of sections) {
    out.push(`### ${section}`, '', '| figure | median (min–max) | reference, same run | ratio (min–max) | goal |', '|---|---|---|---|---|');
    for (const s of summaries.filter((x) => x.section === section)) {
      const ref = s.reference ? `${s.reference.name}: ${fmt(spread(s.reference.values).median)}` : '';
      const ratio = s.ratio ? `${fmtSpread(s.ratio, 2)}×` : '';
      const goal = s.goal ? `${goalText(s.goal)}${s.goal.on === 'ratio' ? '' : ` ${s.unit}`} — ${s.met ? 'met' : '**not met**'} (${s.goal.source})` : '';
      out.push(`| ${s.name} | ${fmtSpread(s.value)} ${s.unit} | ${ref} | ${ratio} | ${goal} |`);
    }
    out.push('');
  }
  return out.join('\n');
}
