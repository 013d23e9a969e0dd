/**
 * What a bell stands for, apart from who listens to it (bells.ts): the bells
 * a record rings and the bells a filter hears, and the file each is. These
 * are facts of a record and a filter alone, the same in every process, so
 * a writer that rings and a listener that watches agree on the file without
 * ever meeting; bells.ts keeps this process's watches of them.
 */
import path from 'node:path';
import type { RecordFilter } from '../../model/filter.js';
import { parseRecipients } from '../../model/filter.js';

let crypto: typeof import('node:crypto') | undefined; // fetched on first use: a server with no bells never loads it

/** What a bell stands for: `to:NAME` (a recipient) or `re:N` (a record replied to). */
export type BellKey = string;

/** The bells a record rings: its recipients, and the records it names in parent:/ref:. */
export function bellsOf(claims: { to: string | null; named: readonly number[] }): BellKey[] {
  return [...parseRecipients(claims.to).map((name) => `to:${name}`), ...claims.named.map((n) => `re:${n}`)];
}

/**
 * The bells that hear every record a filter can match, or null when no set
 * of bells does (no `to` and no `replies_to`: only the directory hears them all).
 * Filters combine with AND, so one of them covering the record is enough.
 */
export function bellsFor(filter: RecordFilter | null | undefined): BellKey[] | null {
  if (filter?.to) return [...filter.to].map((name) => `to:${name}`);
  if (filter?.repliesTo !== undefined) return [`re:${filter.repliesTo}`];
  return null;
}

/** A bell's file name: a hash, so any name is a safe, short, case-exact file name. */
export function bellName(key: BellKey): string {
  crypto ??= process.getBuiltinModule('node:crypto') as typeof import('node:crypto');
  return crypto.hash('sha256', key).slice(0, 32);
}

export function bellFile(dir: string, key: BellKey): string {
  return path.join(dir, bellName(key));
}
