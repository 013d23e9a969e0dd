/**
 * What `verify` learns from the checkpoints a copy holds (lib/model/checkpoint.ts):
 * whether every record the hub held up to its newest checkpoint is here and
 * byte for byte the same, and if not, exactly which is missing, which is
 * altered, and where this copy's history forks from the hub's.
 *
 * Records are seen in id order, and a checkpoint only lists ids below its
 * own, so each checkpoint is checked the moment it is read, against the
 * digests already seen: nothing but one digest per record is kept (32
 * bytes; 32 MB at 1M records).
 */
import { timingSafeEqual } from 'node:crypto';
import { DEFAULT_HUB_KEY } from '../auth/hub-key.js';
import { isAgentName, loadKey } from '../auth/keys.js';
import type { Deposit } from '../model/deposit.js';
import { chainOf, CHECKPOINT_DEPOSITOR, parseCheckpoint, signCheckpoint, type Checkpoint, type CheckpointEntry } from '../model/checkpoint.js';
import { sortedIndexOf, type IdShape } from '../model/ids.js';
import { DIGEST_BYTES } from '../model/index-columns.js';

export interface CheckpointFindings {
  /** Checkpoints of the hub read (kind checkpoint, deposited-by hub). */
  checkpoints: number;
  newest: string | null;
  /** Every record up to this id is held, whole, as every checkpoint up to it says; null before the first checkpoint (or a problem in it). */
  frontier: string | null;
  /** The checkpoint that proves the frontier. */
  frontierCheckpoint: string | null;
  /**
   * Sound checkpoints past the frontier whose signature was not checked with
   * the checkpoint key, where that key is at hand or was named: they agree
   * with the records, and anyone could have written them. `to`: the last
   * record the newest of them covers. Null when there are none.
   */
  unproven: { to: string; checkpoint: string; count: number } | null;
  missing: { id: string; checkpoint: string; listed: string }[];
  altered: { id: string; checkpoint: string; listed: string; held: string }[];
  forks: { at: string; checkpoint: string; why: string }[];
  /** Checkpoints that cannot be believed as written: unreadable, a chain that does not follow from their records, a bad signature. */
  broken: { id: string; why: string }[];
  /** Held at or below the newest checkpoint's range, and listed by none: arrived after its place was checkpointed (a fill-in), or from elsewhere. */
  unlisted: string[];
  /** Held records after the newest checkpoint's range: not covered by any yet. */
  uncovered: number;
  /**
   * Signatures are checked with one key only, the checkpoint key (`hub`, or
   * `verify --checkpoint-key NAME`): a signature by any other name proves
   * nothing here, since agents' keys are held by mirror and replica hosts by
   * design. `unchecked`: signed in the checkpoint key's name, with no usable
   * key file at hand; `others`: signed by other names, never checked.
   */
  signatures: { key: string; checked: number; unsigned: number; unchecked: number; others: { key: string; count: number }[] };
}


export class CheckpointAudit {
  /** One digest per held record, by its position in `ids`; a damaged record's position stays unset. */
  private readonly digests: Uint8Array;
  private readonly whole: Uint8Array;
  /** Positions some checkpoint lists. */
  private readonly listed: Uint8Array;
  /** The hub checkpoints held, by id: their chain (what a successor's previous: must name). */
  private readonly chains = new Map<number, string>();
  /** Hub checkpoints that cannot be read: named once as broken, not again as what their successors follow. */
  private readonly unreadable = new Set<number>();
  /** The checkpoint the next one should follow. */
  private expected = { id: 0, chain: '' };
  private problemSeen = false;
  private newestLast = 0;
  /** The checkpoint key's bytes, once looked for (null: no usable key file). */
  private key: Buffer | null | undefined;
  /** The first checkpoint signed in the checkpoint key's name: from it on, every checkpoint must be. */
  private firstKeySigned: string | null = null;
  private readonly others = new Map<string, number>();
  private readonly findings: CheckpointFindings = {
    checkpoints: 0,
    newest: null,
    frontier: null,
    frontierCheckpoint: null,
    unproven: null,
    missing: [],
    altered: [],
    forks: [],
    broken: [],
    unlisted: [],
    uncovered: 0,
    signatures: { key: '', checked: 0, unsigned: 0, unchecked: 0, others: [] },
  };

  constructor(
    /** Every held id, ascending: the order records are seen in. */
    private readonly ids: readonly number[],
    private readonly shape: IdShape,
    /** Where the hub's key is looked for, to check signatures (null: signatures are not checked). */
    private readonly keysDir: string | null,
    /** The one key name whose signatures are checked (keys/<name>.key). */
    private readonly checkpointKey: string = DEFAULT_HUB_KEY,
    /**
     * The caller named the key (`--checkpoint-key`): only checkpoints whose
     * signature was checked prove anything, even where its file is not at
     * hand. Where the file is at hand the same holds, named or not.
     */
    private readonly keyNamed = false,
  ) {
    this.findings.signatures.key = checkpointKey;
    this.digests = new Uint8Array(ids.length * DIGEST_BYTES);
    this.whole = new Uint8Array(ids.length);
    this.listed = new Uint8Array(ids.length);
  }

  /** The record at position `at` of `ids` is whole: note its digest, and check it if it is a checkpoint. */
  see(at: number, deposit: Deposit, record: Buffer): Promise<void> | undefined {
    this.whole[at] = 1;
    Buffer.from(deposit.digest.slice(7), 'hex').copy(this.digests, at * DIGEST_BYTES);
    if (deposit.depositedBy !== CHECKPOINT_DEPOSITOR || !looksLikeCheckpoint(record)) return;
    const id = this.shape.format(this.ids[at]!);
    const parsed = parseCheckpoint(record, this.shape);
    if ('invalid' in parsed) {
      this.findings.broken.push({ id, why: `it was deposited as a checkpoint but cannot be read as one: ${parsed.invalid}` });
      this.unreadable.add(this.ids[at]!);
      this.problemSeen = true;
      return;
    }
    return this.check(this.ids[at]!, parsed); // a promise only here: the hub's key may have to be read
  }

  private async check(n: number, c: Checkpoint): Promise<void> {
    const id = this.shape.format(n);
    const f = this.findings;
    const forksBefore = f.forks.length;
    let sound = this.linked(n, c);
    // A fork named at the checkpoint this one follows is why that checkpoint's digest differs from what this one
    // lists: the same finding, named once (as forked), not again as an altered record.
    const forkedPrevious = f.forks.length > forksBefore && f.forks.at(-1)!.at === this.shape.format(c.previous.id) ? c.previous.id : null;
    const entries: CheckpointEntry[] = [];
    for (const { n: m, short } of c.listed) {
      const at = sortedIndexOf(this.ids, m);
      const listed = `sha256:${short}…`;
      if (at === -1) {
        if (!f.missing.some((x) => x.id === this.shape.format(m))) f.missing.push({ id: this.shape.format(m), checkpoint: id, listed });
        sound = false;
        continue;
      }
      this.listed[at] = 1;
      if (!this.whole[at]) {
        sound = false; // damaged: verify names it already
        continue;
      }
      const held = this.digestAt(at);
      if (held.slice(7, 7 + short.length) !== short) {
        if (m !== forkedPrevious) f.altered.push({ id: this.shape.format(m), checkpoint: id, listed, held });
        sound = false;
        continue;
      }
      entries.push({ n: m, digest: held });
    }
    // Only when every listed record is here and agrees on its short digest does the chain say something new.
    if (entries.length === c.listed.length && chainOf(c.previous.chain, entries, this.shape) !== c.chain) {
      f.broken.push({ id, why: `its chain ${c.chain} is not what the records it lists hash to: one of them differs beyond its first digits, or the checkpoint was written by hand` });
      sound = false;
    }
    const signature = await this.signatureHolds(id, c);
    if (!signature) sound = false;
    this.chains.set(n, c.chain);
    this.expected = { id: n, chain: c.chain };
    f.checkpoints++;
    f.newest = id;
    if (c.last > this.newestLast) this.newestLast = c.last;
    if (!sound) this.problemSeen = true;
    if (this.problemSeen) return;
    // A copy rewritten from its first checkpoint on is consistent with itself: only the checkpoint key's signature
    // says the hub wrote it. Each chain holds the one before, so a checked checkpoint proves those before it too.
    if (signature === 'checked' || !(this.keyNamed || (await this.checkpointKeyBytes()) !== null)) {
      f.frontier = this.shape.format(c.last);
      f.frontierCheckpoint = id;
      f.unproven = null;
    } else {
      f.unproven = { to: this.shape.format(c.last), checkpoint: id, count: (f.unproven?.count ?? 0) + 1 };
    }
  }

  /** Whether the checkpoint follows the one before it here; a fork is named where it is not. */
  private linked(n: number, c: Checkpoint): boolean {
    const id = this.shape.format(n);
    const prev = c.previous;
    const prevId = this.shape.format(prev.id);
    if (prev.id === this.expected.id && (prev.id === 0 || prev.chain === this.expected.chain)) return true;
    if (prev.id === 0) {
      this.findings.forks.push({ at: id, checkpoint: id, why: `checkpoint ${id} says it is the first, but ${this.shape.format(this.expected.id)} is one before it: two histories of checkpoints` });
      return false;
    }
    const heldChain = this.chains.get(prev.id);
    if (heldChain === undefined) {
      // Not held, or damaged: verify names it so already. Held whole and not a checkpoint: another history.
      const at = sortedIndexOf(this.ids, prev.id);
      if (at === -1 || !this.whole[at] || this.unreadable.has(prev.id)) return false;
      this.findings.forks.push({ at: prevId, checkpoint: id, why: `checkpoint ${id} follows a checkpoint ${prevId}, ` +
        `but the ${prevId} held here is not a checkpoint of the hub: this copy and the hub that wrote ${id} hold ` +
        `different histories` });
      return false;
    }
    if (heldChain !== prev.chain) {
      this.findings.forks.push({ at: prevId, checkpoint: id, why: `checkpoint ${id} follows a ${prevId} whose chain ` +
        `is ${prev.chain}, but the ${prevId} held here has chain ${heldChain}: this copy and the hub that wrote ${id} ` +
        `hold different histories from ${prevId} or before` });
      return false;
    }
    this.findings.forks.push({ at: prevId, checkpoint: id, why: `checkpoint ${id} follows ${prevId}, ` +
      `which ${this.shape.format(this.expected.id)} already follows: two checkpoints after one (a second history ` +
      `written onto this copy)` });
    return false;
  }

  /** False: broken. 'checked': its signature is the checkpoint key's. True: nothing owed, and nothing proven by it. */
  private async signatureHolds(id: string, c: Checkpoint): Promise<boolean | 'checked'> {
    const s = this.findings.signatures;
    const name = this.checkpointKey;
    const signer = c.signature?.key ?? null;
    if (signer !== name) {
      if (signer === null) s.unsigned++;
      else this.others.set(signer, (this.others.get(signer) ?? 0) + 1);
      if (this.firstKeySigned === null) return true; // nothing before it was signed by the checkpoint key: nothing is owed
      const what = signer === null ? 'it is unsigned' : `it is signed by ${signer}, not by the checkpoint key ${name}`;
      this.findings.broken.push({ id, why: `${what}, and ${this.firstKeySigned} before it was signed by ${name}: a hub that signs does not ` +
        `stop, so it was written or rewritten by someone else (any holder of another key can sign; only ${name}'s signature is checked)` });
      return false;
    }
    this.firstKeySigned ??= id;
    const key = await this.checkpointKeyBytes();
    if (key === null) {
      s.unchecked++;
      return true;
    }
    const expected = Buffer.from(signCheckpoint(key, this.shape.format(c.first), this.shape.format(c.last), c.chain), 'hex');
    const sig = Buffer.from(c.signature!.sig, 'hex');
    if (sig.length === expected.length && timingSafeEqual(expected, sig)) {
      s.checked++;
      return 'checked';
    }
    this.findings.broken.push({ id, why: `its signature is not ${name}'s key's: it was not written by a holder of keys/${name}.key, or was edited since` });
    return false;
  }

  private async checkpointKeyBytes(): Promise<Buffer | null> {
    if (this.key === undefined) {
      const found = this.keysDir === null || !isAgentName(this.checkpointKey) ? null : await loadKey(this.keysDir, this.checkpointKey);
      this.key = found !== null && 'key' in found ? found.key : null;
    }
    return this.key;
  }

  /** The findings, once every record has been seen. */
  finish(): CheckpointFindings {
    const f = this.findings;
    for (let at = 0; at < this.ids.length; at++) {
      const n = this.ids[at]!;
      if (this.chains.has(n)) continue; // a checkpoint proves itself by what its successor lists
      if (n > this.newestLast) f.uncovered++;
      else if (!this.listed[at] && this.whole[at]) f.unlisted.push(this.shape.format(n));
    }
    f.signatures.others = [...this.others].map(([key, count]) => ({ key, count }));
    return f;
  }

  private digestAt(at: number): string {
    return `sha256:${Buffer.from(this.digests.buffer, at * DIGEST_BYTES, DIGEST_BYTES).toString('hex')}`;
  }
}

/** A cheap look before parsing: the hub deposits other records too, in principle. */
function looksLikeCheckpoint(record: Buffer): boolean {
  return record.indexOf('\nkind: checkpoint\n') !== -1;
}
