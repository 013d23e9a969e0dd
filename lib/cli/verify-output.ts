/**
 * `verify`'s lines about checkpoints and `.state/` (lib/ops/verify-checkpoints.ts,
 * lib/ops/verify-state.ts): one line per finding, each naming the record,
 * then one line saying how far this copy is proven complete.
 */
import type { VerifyReport } from '../ops/verify.js';
import { NAMED_AT_MOST } from '../ops/verify-state.js';

/** Findings that make verify exit 1: what is missing, altered, forked, or cannot be believed. */
export function verifyFailed(report: VerifyReport): boolean {
  const c = report.checkpoints;
  return report.damaged.length > 0 || c.unproven !== null || c.missing.length > 0 || c.altered.length > 0 || c.forks.length > 0 || c.broken.length > 0 || (report.state.index?.disagree.length ?? 0) > 0;
}

export function checkpointLines(report: VerifyReport): string[] {
  const c = report.checkpoints;
  const lines: string[] = [];
  for (const m of c.missing) lines.push(`missing ${m.id}: checkpoint ${m.checkpoint} lists it (${m.listed}) and this copy does not hold it`);
  for (const a of c.altered) lines.push(`altered ${a.id}: checkpoint ${a.checkpoint} lists ${a.listed} and this copy holds ${a.held}`);
  for (const f of c.forks) lines.push(`forked at ${f.at}: ${f.why}`);
  for (const b of c.broken) lines.push(`broken checkpoint ${b.id}: ${b.why}`);
  for (const id of c.unlisted.slice(0, NAMED_AT_MOST)) lines.push(`unlisted ${id}: held, and no checkpoint lists it (it arrived after its place was checkpointed, or from elsewhere)`);
  if (c.unlisted.length > NAMED_AT_MOST) lines.push(`unlisted: and ${c.unlisted.length - NAMED_AT_MOST} more`);
  lines.push(frontierLine(report));
  return lines;
}

function frontierLine(report: VerifyReport): string {
  const c = report.checkpoints;
  if (c.checkpoints === 0 && c.broken.length === 0) return 'no checkpoints here: completeness cannot be proven (the hub writes them: docs/mirroring.md)';
  const after = c.uncovered === 0 ? '' : `; ${c.uncovered} record${c.uncovered === 1 ? '' : 's'} after it not covered by a checkpoint yet`;
  const proof = c.frontier === null ? null : `up to ${c.frontier} (checkpoint ${c.frontierCheckpoint}; ${c.checkpoints} checkpoint${c.checkpoints === 1 ? '' : 's'}, ${signatureWords(report)})`;
  const problems = [
    count(c.missing.length, 'missing'),
    count(c.altered.length, 'altered'),
    count(c.forks.length, 'fork', 'forks'),
    count(c.broken.length, 'broken checkpoint', 'broken checkpoints'),
    count(report.damaged.length, 'damaged'),
  ].filter(Boolean);
  const unproven = c.unproven === null ? '' : unprovenWords(report);
  if (problems.length === 0 && unproven) return `${proof ? `complete and identical ${proof}; ` : ''}${unproven}${after}`;
  if (problems.length === 0 && proof) return `complete and identical ${proof}${after}`;
  return `not proven complete: ${problems.join(', ')}${proof ? `; consistent ${proof}` : '; nothing before the first problem is proven'}`;
}

/** Past the frontier, checkpoints that agree with the records and carry no signature checked with the checkpoint key. */
function unprovenWords(report: VerifyReport): string {
  const c = report.checkpoints;
  const u = c.unproven!;
  const s = c.signatures;
  const which = u.count === 1 ? `checkpoint ${u.checkpoint} is` : `the ${u.count} checkpoints up to ${u.checkpoint} are`;
  const where = c.frontier === null ? ` (${c.checkpoints} checkpoint${c.checkpoints === 1 ? '' : 's'}, ${signatureWords(report)})` : '';
  return `consistent, not proven up to ${u.to}${where}: ${which} not signed with ${s.key}'s key as checked here, so anyone who ` +
    `can write this copy could have rewritten the records and written ${u.count === 1 ? 'it' : 'them'}; compare the newest checkpoint's chain: ` +
    `with the primary's, or verify where keys/${s.key}.key is (--keys DIR)`;
}

function signatureWords(report: VerifyReport): string {
  const s = report.checkpoints.signatures;
  const words: string[] = [];
  if (s.checked > 0) words.push(`${s.checked} signature${s.checked === 1 ? '' : 's'} checked with ${s.key}'s key`);
  if (s.unchecked > 0) words.push(`${s.unchecked} signed by ${s.key} not checked: no usable keys/${s.key}.key here (--keys DIR)`);
  for (const o of s.others) words.push(`${o.count} signed by ${o.key}, not the checkpoint key ${s.key}: not checked`);
  if (s.unsigned > 0) words.push(`${s.unsigned} unsigned`);
  return words.join(', ');
}

function count(n: number, one: string, many = one): string {
  return n === 0 ? '' : `${n} ${n === 1 ? one : many}`;
}

/** What verify found in `.state/` (none of it is mirrored: a mirror or clone says nothing here). */
export function stateLines(report: VerifyReport): { out: string[]; info: string[] } {
  const { index, issued } = report.state;
  const out: string[] = [];
  const info: string[] = [];
  if (index?.unusable) info.push(`.state/index is not used by the store (${index.unusable}); the next open reads every record`);
  for (const d of index?.disagree ?? []) out.push(`state: .state/index disagrees with ${d.id}: ${d.why}; remove .state/index (the next open rebuilds it in one scan)`);
  if (index && index.disagreeing > index.disagree.length) out.push(`state: .state/index disagrees with ${index.disagreeing - index.disagree.length} more records`);
  if (index && !index.unusable && index.disagree.length === 0) info.push(`.state/index agrees with every record it describes (${index.records})`);
  for (const id of issued?.vanished ?? []) out.push(`state: .state/issued says ${id} was issued, and its record is not here (removed, or lost in a restore); its id is never given again`);
  if (issued && issued.vanishedCount > issued.vanished.length) out.push(`state: .state/issued names ${issued.vanishedCount - issued.vanished.length} more issued ids whose records are not here`);
  for (const id of issued?.ignored ?? []) out.push(
    `state: .state/issued's line ${id} is ignored by the store: it is far past every id before it and no record is ` +
    `near it (a log copied or edited); remove the line`);
  for (const id of issued?.misdescribed ?? []) out.push(
    `state: .state/issued's line for ${id} claims other than the record does (kind, from, to, the ids it names, or its key): ` +
    `a server that read the line held ${id} by it until a call read the file; restart the servers running now (a line is read once)`);
  if (issued && issued.misdescribedCount > issued.misdescribed.length) out.push(`state: .state/issued misdescribes ${issued.misdescribedCount - issued.misdescribed.length} more records`);
  if (issued && issued.vanished.length === 0 && issued.ignored.length === 0 && issued.misdescribedCount === 0) info.push(`.state/issued agrees with the records (high-water ${issued.believed ?? 'none'})`);
  return { out, info };
}
