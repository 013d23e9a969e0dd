/**
 * Filling a mirror: a corpus directory whose only writer is rsync, copying
 * from a primary (a local path or `host:path`). The mirror is marked as such
 * in its `.state/`, so every store opened on it refuses appends: a record
 * written here would shadow the primary's record of the same id forever.
 */
import { isRecordNameOfAnyWidth, listRecordNames } from '../disk/record-names.js';
import fs from 'node:fs/promises';
import path from 'node:path';
import { RelayError } from '../errors.js';
import { idShape } from '../model/ids.js';
import type { Logger } from '../log.js';
import { silentLogger } from '../log.js';
import { corpusPaths, tempBeside } from '../disk/paths.js';
import { readStateText } from '../disk/state-file.js';
import { RSYNC_VANISHED, isRemote, parseItemized, rsyncArgs, rsyncFailure, runRsync } from './rsync.js';
import { readSettings } from '../disk/settings.js';

export interface MirrorOptions {
  /** The primary's corpus: a local directory, `host:path` (ssh) or an rsync:// URL. */
  source: string;
  /** The mirror's corpus directory; created if needed. */
  corpus: string;
  /** rsync's --rsh, e.g. `ssh -p 2222`. */
  rsh?: string;
  env?: NodeJS.ProcessEnv;
  /** rsync's own messages go here (stderr in the CLI). */
  stderr: NodeJS.WritableStream;
  log?: Logger;
  /** Called as each record lands, in the order rsync renames them into place. */
  onArrived?(id: string): void;
}

export interface MirrorResult {
  source: string;
  corpus: string;
  /** Record ids that were not here before this run, in arrival order. */
  arrived: string[];
  /** Other files that arrived (settings, .gitattributes, a README). */
  otherFiles: string[];
  /** How many records the mirror holds now. */
  held: number;
}

export async function mirrorCorpus(options: MirrorOptions): Promise<MirrorResult> {
  const log = options.log ?? silentLogger;
  const paths = corpusPaths(options.corpus);
  const source = isRemote(options.source) ? options.source : path.resolve(options.source);
  if (!isRemote(options.source)) await checkLocalSource(source, paths.corpus);
  await fs.mkdir(paths.corpus, { recursive: true });
  await claimAsMirror(paths, source, log);

  const args = rsyncArgs(options.source, paths.corpus, { rsh: options.rsh });
  log.debug(`running rsync ${args.join(' ')}`);
  const arrived: string[] = [];
  const otherFiles: string[] = [];
  const run = await runRsync(args, {
    env: options.env,
    stderr: options.stderr,
    onLine: (line) => {
      const item = parseItemized(line);
      if (item === null) {
        if (line.trim()) options.stderr.write(`${line}\n`); // "skipping non-regular file …" and the like
        return;
      }
      if (item.type !== 'f' || !item.created) return;
      // Any width: the mirror's is known only once the source's settings arrive.
      if (isRecordNameOfAnyWidth(item.name)) {
        arrived.push(item.name);
        options.onArrived?.(item.name);
      } else otherFiles.push(item.name);
    },
  });
  if (run.exitCode === RSYNC_VANISHED) log.warn('some files vanished at the source while rsync ran; everything else arrived');
  else if (run.exitCode !== 0) throw rsyncFailure(run, source, arrived);

  const held = await checkWidth(paths.corpus, source);
  return { source, corpus: paths.corpus, arrived, otherFiles, held };
}

/** A local source must be a directory, and not the mirror itself (that would mark a primary read-only). */
async function checkLocalSource(source: string, corpus: string): Promise<void> {
  const real = await fs.realpath(source).catch(() => null);
  if (real === null || !(await fs.stat(real)).isDirectory()) {
    throw new RelayError('mirror_source_missing', `There is no directory at ${source} to mirror from. Pass the primary's corpus directory, or host:path for one reached over ssh.`);
  }
  const realCorpus = await fs.realpath(corpus).catch(() => null);
  if (realCorpus === real) {
    throw new RelayError('mirror_conflict', `${source} is the corpus this command would fill (--corpus), ` +
      `so mirroring it would only mark the primary read-only. Pass --corpus with a different directory for the mirror.`);
  }
  // A mirror inside its source would be copied into itself on every run.
  const inside = path.relative(real, realCorpus ?? path.resolve(corpus));
  if (inside && !inside.startsWith('..') && !path.isAbsolute(inside)) {
    throw new RelayError('mirror_conflict', `The mirror (--corpus ${corpus}) lies inside its source ${source}, ` +
      `so each run would copy the mirror into itself. Put the mirror outside the primary's corpus.`);
  }
}

/**
 * Marks the corpus as a mirror before rsync writes anything, so a server
 * opened during the first sync already refuses appends. A corpus that holds
 * records and is not a mirror is someone's primary: filling it from another
 * store would mix two histories under one set of ids.
 */
async function claimAsMirror(paths: ReturnType<typeof corpusPaths>, source: string, log: Logger): Promise<void> {
  // A mark that is no small regular file (a FIFO, a symlink) is a mark naming no primary, replaced below.
  const mark = await readStateText(paths.mirrorMark);
  const previous = mark === null ? null : typeof mark === 'string' ? mark.trim() : '';
  if (previous === null) {
    const own = await listRecordNames(paths.corpus);
    if (own.length > 0) {
      throw new RelayError('mirror_conflict', `${paths.corpus} holds ${own.length} record(s) of its own and is not a ` +
        `mirror; filling it from ${source} would mix two stores under one set of ids. ` +
        `Mirror into a new or empty directory (--corpus DIR).`);
    }
  } else if (previous !== source) {
    log.warn(`${paths.corpus} was a mirror of ${previous}; it now follows ${source}. Records it already holds are kept as they are.`);
  }
  await fs.mkdir(paths.state, { recursive: true });
  // Written beside and renamed over: never through a symlink or into a FIFO planted at its name.
  const temp = tempBeside(paths.mirrorMark);
  await fs.writeFile(temp, `${source}\n`, { flag: 'wx' });
  await fs.rename(temp, paths.mirrorMark).catch(async (err: unknown) => {
    await fs.unlink(temp).catch(() => {});
    throw err;
  });
  // A new mirror, like a new store (init), has used no signature yet, so its
  // guard's memory begins with it; otherwise a hub on it would refuse every
  // signed stream and wait as guard_reset for its first minute
  // (lib/auth/guard-memory.ts). A mirror whose replay directory went later
  // is left as memory lost.
  if (previous === null) {
    await fs.mkdir(paths.replay).catch((err: NodeJS.ErrnoException) => {
      if (err.code !== 'EEXIST') throw err;
    });
  }
}

/**
 * The settings file travels with rsync but never replaces one the mirror
 * already has (an `init` run before the first sync). If the widths differ,
 * the store would ignore every record of the source's width; say so.
 */
async function checkWidth(corpus: string, source: string): Promise<number> {
  const shape = idShape((await readSettings(corpus)).idWidth);
  const records = await listRecordNames(corpus);
  const foreign = records.filter((name) => shape.parseRecordId(name) === null);
  if (foreign.length > 0) {
    throw new RelayError('mirror_conflict', `Records from ${source} such as ${foreign[0]} do not have this corpus's ` +
      `id width (${shape.width} digits, from its .p-e-relay file), so no server here would see them. ` +
      `Mirror into a new, empty directory so the source's settings arrive with its records.`);
  }
  return records.length;
}
