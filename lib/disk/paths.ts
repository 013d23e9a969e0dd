/**
 * Where things live on disk: every directory and fixed file of a corpus and
 * of a keys directory is named here (but `bell-holders/`, which
 * bell-holders.ts places beside whatever bells directory it is handed, so
 * that bells need no corpus), and so is every temp file's name (a
 * record's under .state/tmp/, `tempName`; one beside a file it replaces,
 * `tempBeside`). The
 * rooms that keep many files in one of these directories (the replay guard,
 * marks, the roster, bells, idempotency claims) name the files inside it
 * themselves, as the layout below shows.
 *
 *   corpus/
 *     relay-0001            one record: deposit header, '---', the bytes received
 *     .p-e-relay            the store's settings (id width); travels with rsync and git
 *     .gitattributes        '* -text' so git never rewrites a record's bytes
 *     .gitignore            ignores .state/
 *     .state/               this machine's working state; never mirrored or committed
 *       tmp/                records being written (same filesystem, for link())
 *       issued              high-water log: one id per line (and what it holds), append-only
 *       index               the index snapshot: a cache of what the records say, checked before use
 *       index.build         held while one process builds the first snapshot for the others (snapshot-build.ts)
       text-index          the word index of the text filter: a cache, checked against the records before use (text-index-file.ts)
 *       replay/<minute>/<sha256 of a signature>   the one-time signature guard, shared by every process
 *       mirror              present when rsync fills this corpus (appends refused)
 *       idempotency/<sha256 of channel and key>.<n>     a claim on a key while its record is stored (spec §8b)
 *       idempotency/<sha256 of channel and key>.done    the id stored under that key, kept a day
 *       marks/<agent>/<filter set>   a named agent's mark per filter set, at most 64 (lib/store/agents/marks.ts)
 *       marks/<agent>/.start          where the agent first started: every new mark's broadcasts begin there
 *       marks/<agent>/.<set>.lock     held while a process moves that mark (file-lock.ts)
 *       marks/<agent>@legacy          `inbox`'s one mark per agent from before filter sets, moved aside
 *       roster/<name>, roster/.live/<host>.<boot>.<pid>   who is there (lib/store/agents/roster.ts)
 *       bells/<hash>        a doorbell per recipient (or replied-to record) someone here waits for (bells.ts)
 *       bell-holders/<process>/<hash>   which bells each live process holds (bell-holders.ts)
 *   keys/
 *     <agent>.key           HMAC key, mode 0600
 *     .gitignore            ignores *.key
 */
import path from 'node:path';
import { hostIdentity, hostTag, type HostIdentity } from './host.js';

export interface CorpusPaths {
  readonly corpus: string;
  readonly settings: string;
  readonly gitattributes: string;
  readonly gitignore: string;
  readonly readme: string;
  readonly state: string;
  readonly tmp: string;
  readonly issued: string;
  readonly snapshot: string;
  readonly snapshotBuild: string;
  readonly textIndex: string;
  readonly replay: string;
  readonly mirrorMark: string;
  readonly idempotency: string;
  readonly marks: string;
  readonly roster: string;
  readonly bells: string;
  /** Beside it, the lock every work claim's decision takes (spec §8e); the file itself is never written. */
  readonly workClaims: string;
  record(id: string): string;
}

export function corpusPaths(corpusDir: string): CorpusPaths {
  const corpus = path.resolve(corpusDir);
  const state = path.join(corpus, '.state');
  return {
    corpus,
    settings: path.join(corpus, '.p-e-relay'),
    gitattributes: path.join(corpus, '.gitattributes'),
    gitignore: path.join(corpus, '.gitignore'),
    readme: path.join(corpus, 'README.md'),
    state,
    tmp: path.join(state, 'tmp'),
    issued: path.join(state, 'issued'),
    snapshot: path.join(state, 'index'),
    snapshotBuild: path.join(state, 'index.build'),
    textIndex: path.join(state, 'text-index'),
    replay: path.join(state, 'replay'),
    mirrorMark: path.join(state, 'mirror'),
    idempotency: path.join(state, 'idempotency'),
    marks: path.join(state, 'marks'),
    roster: path.join(state, 'roster'),
    bells: path.join(state, 'bells'),
    workClaims: path.join(state, 'work-claims'),
    // Callers pass only ids that parsed against the store's shape, so a name
    // like `../x` can never reach this join.
    record: (id: string) => path.join(corpus, id),
  };
}

export interface KeyPaths {
  readonly keys: string;
  readonly gitignore: string;
  key(agent: string): string;
}

export function keyPaths(keysDir: string): KeyPaths {
  const keys = path.resolve(keysDir);
  return {
    keys,
    gitignore: path.join(keys, '.gitignore'),
    key: (agent: string) => path.join(keys, `${agent}.key`),
  };
}

/**
 * A temp name beside `target`, for a file (or directory) made whole there and
 * then renamed over it (a mark, a roster entry, the signature guard's
 * directory): hidden, unguessable, and made exclusively by its caller, so no
 * one can plant it first. node:crypto is fetched on first use: a server that
 * never replaces a file never loads it.
 */
export function tempBeside(target: string): string {
  const nonce = process.getBuiltinModule('node:crypto').randomBytes(12).toString('hex');
  return path.join(path.dirname(target), `.${path.basename(target)}.${nonce}.tmp`);
}

/**
 * A temp file name that says which process owns it, on which host and boot, so
 * `verify --clean` on one host of a shared corpus can tell its own dead
 * writers' files from another host's live ones: `HOST.BOOT.PID-TIME-SEQ.tmp`.
 */
export function tempName(pid: number, seq: number, owner: HostIdentity = hostIdentity()): string {
  return `${hostTag(owner)}.${pid}-${Date.now().toString(36)}-${seq}.tmp`;
}

export interface TempOwner {
  /** null for names made before temp names carried a host: this host's, judged by pid alone. */
  host: string | null;
  boot: string | null;
  pid: number;
}

/** Who owns a temp file, or null for a name we did not make. */
export function tempOwner(name: string): TempOwner | null {
  const m = /^(?:([A-Za-z0-9_-]+)\.([0-9a-z]+)\.)?(\d+)-[0-9a-z]+-\d+\.tmp$/.exec(name);
  if (!m) return null;
  return { host: m[1] ?? null, boot: m[2] ?? null, pid: Number(m[3]) };
}
