/**
 * What kind of filesystem holds the corpus, and what that means for a store
 * on it: whether kernel events hear other writers, whether a directory
 * listing can be trusted to be fresh, whether a directory fsync reaches the
 * disk that holds it.
 *
 * statfs names the filesystem type (NFS, FUSE, SMB…); for FUSE and NFS the
 * mount's options are read from /proc/self/mountinfo, and for sshfs (whose
 * options live in its own process, not the kernel) from the sshfs process's
 * command line. Linux only; elsewhere the corpus counts as local.
 */
import { readdirSync, readFileSync, realpathSync } from 'node:fs';
import fs from 'node:fs/promises';
import path from 'node:path';

/** statfs f_type values of filesystems whose files other hosts can write. */
const NETWORK_TYPES = new Map<number, string>([
  [0x6969, 'nfs'],
  [0x517b, 'smb'],
  [0xff534d42, 'cifs'],
  [0xfe534d42, 'smb2'],
  [0x00c36400, 'ceph'],
  [0x01021997, '9p'],
  [0x5346414f, 'afs'],
  [0x0bd00bd0, 'lustre'],
  [0x47504653, 'gpfs'],
  [0x65735546, 'fuse'],
  [0x013111a8, 'ibrix'],
  [0x564c, 'ncp'],
]);

export interface FilesystemFacts {
  /** The type as the mount table names it (`ext4`, `nfs4`, `fuse.sshfs`), or statfs's name for it. */
  type: string;
  /** Other hosts may write here; inotify does not hear them, so the directory must be listed. */
  shared: boolean;
  /**
   * Set when the mount is known to serve stale directory listings: a
   * sentence naming the mount option that fixes it. A writer refuses to
   * start on such a mount.
   */
  cachedListings: string | null;
  /**
   * Set when the mount's options could not be read, so freshness is unknown:
   * a warning, not a refusal.
   */
  unknownListings: string | null;
  /** Set when a directory fsync does not reach the file server: what that means for an acknowledged append. */
  entryNotDurable: string | null;
}

const LOCAL: FilesystemFacts = { type: 'local', shared: false, cachedListings: null, unknownListings: null, entryNotDurable: null };

/**
 * P_E_RELAY_SHARED_FS=1 treats the corpus as shared whatever statfs says:
 * for a cluster filesystem this module does not know, or a test that makes
 * a local disk lie like one (test/fixtures/fs-lies.c).
 */
export async function filesystemFacts(dir: string, env: NodeJS.ProcessEnv = process.env): Promise<FilesystemFacts> {
  const forced = env.P_E_RELAY_SHARED_FS === '1';
  const facts = await detect(dir);
  return forced && !facts.shared ? { ...facts, shared: true, type: `${facts.type} (P_E_RELAY_SHARED_FS=1)` } : facts;
}

async function detect(dir: string): Promise<FilesystemFacts> {
  if (process.platform !== 'linux') return LOCAL;
  let magic: number;
  try {
    magic = (await fs.statfs(dir)).type;
  } catch {
    return LOCAL;
  }
  const family = NETWORK_TYPES.get(magic >>> 0);
  const mount = mountOf(dir);
  if (family === undefined) return { ...LOCAL, type: mount?.fstype ?? 'local' };
  const type = mount?.fstype ?? family;
  const facts: FilesystemFacts = { type, shared: true, cachedListings: null, unknownListings: null, entryNotDurable: null };
  if (type === 'fuse.sshfs' || type === 'sshfs') {
    const options = mount ? sshfsOptions(mount.mountPoint) : null;
    if (options === null) {
      facts.unknownListings = `the sshfs options of ${mount?.mountPoint ?? dir} cannot be read from here; unless it was mounted with -o dir_cache=no, ` +
        `new records from other hosts stay out of its listings for up to 20 s`;
    } else if (!listingsFresh(options)) {
      facts.cachedListings = `${mount!.mountPoint} is an sshfs mount that caches directory listings (up to 20 s), so this writer would not see other ` +
        `hosts' records in time. Mount it again with -o dir_cache=no (or its older spelling -o cache=no), see docs/scaling.md.`;
    }
    facts.entryNotDurable = 'the record file is fsynced on the file server, but sshfs cannot fsync a directory there, so until the server commits its ' +
      'directory (ext4: within about 5 s) a power cut on the file server can lose the new name';
  } else if (family === 'nfs') {
    const o = mount?.superOptions ?? new Map<string, string>();
    const missing: string[] = [];
    if (o.get('acdirmax') !== '0' && !o.has('noac')) missing.push('actimeo=0');
    if (o.get('lookupcache') !== 'none') missing.push('lookupcache=none');
    if (mount === null) facts.unknownListings = `the NFS options of ${dir} cannot be read from here; mount it with -o actimeo=0,lookupcache=none so other hosts' records show up at once`;
    else if (missing.length > 0) {
      facts.cachedListings = `${mount.mountPoint} is an NFS mount that caches directory attributes and lookups, so this writer would not see other ` +
        `hosts' records in time. Mount it again with -o ${missing.join(',')}, see docs/scaling.md.`;
    }
  } else {
    facts.unknownListings = `${dir} is on ${type}, a network filesystem whose listing cache p-e-relay cannot check; see docs/scaling.md for the mount options to use`;
  }
  return facts;
}

interface Mount {
  mountPoint: string;
  fstype: string;
  superOptions: Map<string, string>;
}

/** The mount that holds `dir`: the longest mount point that is a prefix of its real path. */
function mountOf(dir: string): Mount | null {
  let real: string;
  let table: string;
  try {
    real = realpathSync(dir);
    table = readFileSync('/proc/self/mountinfo', 'utf8');
  } catch {
    return null;
  }
  let best: Mount | null = null;
  for (const line of table.split('\n')) {
    const [left, right] = line.split(' - ');
    if (!left || !right) continue;
    const mountPoint = unescape(left.split(' ')[4] ?? '');
    const [fstype = '', , superOpts = ''] = right.split(' ');
    if (!(real === mountPoint || real.startsWith(mountPoint.endsWith('/') ? mountPoint : `${mountPoint}/`))) continue;
    if (best && best.mountPoint.length > mountPoint.length) continue;
    best = { mountPoint, fstype, superOptions: parseOptions(superOpts) }; // later lines are mounted over earlier ones
  }
  return best;
}

/** The -o options of the sshfs process serving `mountPoint`, or null when none is visible from here. */
function sshfsOptions(mountPoint: string): Map<string, string> | null {
  let pids: string[];
  try {
    pids = readdirSync('/proc').filter((name) => /^\d+$/.test(name));
  } catch {
    return null;
  }
  for (const pid of pids) {
    let argv: string[];
    try {
      argv = readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0');
    } catch {
      continue;
    }
    if (path.basename(argv[0] ?? '') !== 'sshfs') continue;
    const cwd = safeRealpath(`/proc/${pid}/cwd`);
    const names = argv.slice(1).filter((a) => a && !a.startsWith('-'));
    if (!names.some((a) => path.resolve(cwd ?? '/', a) === mountPoint)) continue;
    const options = new Map<string, string>();
    for (let i = 1; i < argv.length; i++) {
      const a = argv[i]!;
      const list = a === '-o' ? argv[++i] : a.startsWith('-o') ? a.slice(2) : null;
      if (list) for (const [k, v] of parseOptions(list)) options.set(k, v);
    }
    return options;
  }
  return null;
}

function listingsFresh(o: Map<string, string>): boolean {
  const no = (k: string) => o.get(k) === 'no';
  return no('dir_cache') || no('cache') || o.get('dcache_timeout') === '0' || o.get('dcache_dir_timeout') === '0';
}

function parseOptions(list: string): Map<string, string> {
  const out = new Map<string, string>();
  for (const item of list.split(',')) {
    if (!item) continue;
    const eq = item.indexOf('=');
    out.set(eq < 0 ? item : item.slice(0, eq), eq < 0 ? '' : item.slice(eq + 1));
  }
  return out;
}

function safeRealpath(p: string): string | null {
  try {
    return realpathSync(p);
  } catch {
    return null;
  }
}

/** mountinfo writes space, tab, newline and backslash as octal escapes. */
function unescape(field: string): string {
  return field.replace(/\\([0-7]{3})/g, (_, oct: string) => String.fromCharCode(parseInt(oct, 8)));
}
