/**
 * Text search over stdio: list_relays with `text` (one rare word: a record
 * number, which one record's body holds) through the SDK client to one
 * `p-e-relay serve`, at each corpus size up to 100k. The first search of a
 * server reads every record once (the word index is built then, never at
 * start-up or on an append); the searches after read only what landed since.
 *
 * A server's first search writes the words it read to `.state/text-index`;
 * the next server of the corpus to search loads that file instead of
 * reading every record: its first search is timed apart (the file is
 * removed before each repetition, so the first figure is a cold build).
 *
 * Reference: `grep -rlw WORD` over the same corpus in the same repetition,
 * the ceiling of any search that reads the files for each query (the page
 * cache warm, as it is for the server).
 */
import { execFile } from 'node:child_process';
import { existsSync, rmSync } from 'node:fs';
import path from 'node:path';
import { promisify } from 'node:util';
import { idShape } from '../../lib/model/ids.js';
import { sizeLabel, type Section } from '../lib/context.js';
import { cachedCorpus, mulberry32 } from '../lib/corpus.js';
import { relayServer, textOf } from '../lib/procs.js';
import { nowMs } from '../lib/stats.js';

const run = promisify(execFile);
/** Searches timed per repetition once the index is built; their median is the repetition's figure. */
const WARM_QUERIES = 20;
/** Reading a million files for the first search takes a minute; the figures stop at 100k. */
const MAX_SIZE = 100_000;

export const searchSection: Section = {
  name: 'search',
  title: 'Text search over stdio: list_relays text, one rare word',
  async run(ctx) {
    const { results, reps } = ctx;
    for (const { size, width } of ctx.sizes.filter((s) => s.size <= MAX_SIZE)) {
      const { corpus } = await cachedCorpus(size, width, ctx.log);
      const shape = idShape(width);
      const random = mulberry32(size + 7);
      const rare = () => String(1 + Math.floor(random() * size)); // "Record 4242." is in one body only (ids are zero-padded)
      const search = async (server: Awaited<ReturnType<typeof relayServer>>, word: string) => {
        const t0 = nowMs();
        const answer = textOf(await server.call('list_relays', { text: word }));
        const ms = nowMs() - t0;
        if (!answer.includes(shape.format(Number(word)))) throw new Error(`list_relays text ${word} answered "${answer.slice(0, 200)}" without ${shape.format(Number(word))}`);
        return ms;
      };
      const grep = async (word: string) => {
        const t0 = nowMs();
        const { stdout } = await run('grep', ['-rlw', '--exclude-dir=.state', word, corpus], { maxBuffer: 1 << 24 }).catch((err) => err as { stdout: string });
        const ms = nowMs() - t0;
        if (!stdout.includes(shape.format(Number(word)))) throw new Error(`grep -rlw ${word} did not find ${shape.format(Number(word))}`);
        return ms;
      };
      await grep(rare()); // warm the page cache, as the server's scan warms it
      const first: number[] = [];
      const second: number[] = [];
      const shared = path.join(corpus, '.state', 'text-index');
      const warm: number[] = [];
      const ceiling: number[] = [];
      for (let r = 0; r < reps; r++) {
        rmSync(shared, { force: true });
        const server = await relayServer(corpus);
        await server.call('exists', { id: shape.format(size) }); // the scan is done
        first.push(await search(server, rare()));
        const times: number[] = [];
        for (let q = 0; q < WARM_QUERIES; q++) times.push(await search(server, rare()));
        await server.close();
        warm.push(times.sort((a, b) => a - b)[Math.floor(times.length / 2)]!);
        if (!existsSync(shared)) throw new Error(`the first server's search wrote no ${shared}`);
        const next = await relayServer(corpus);
        await next.call('exists', { id: shape.format(size) });
        second.push(await search(next, rare()));
        await next.close();
        ceiling.push(await grep(rare()));
      }
      const reference = { name: 'grep -rlw', values: ceiling };
      results.add({ section: 'Ceilings', name: `grep -rlw one word, ${sizeLabel(size)} records`, unit: 'ms', values: ceiling });
      results.add({ section: 'Search (stdio)', name: `first search of a server (reads every record), ${sizeLabel(size)} records`, unit: 'ms', values: first, reference });
      results.add({
        section: 'Search (stdio)', name: `first search of another server (loads .state/text-index), ${sizeLabel(size)} records`, unit: 'ms', values: second, reference,
        ...(size === 100_000 ? { goal: { on: 'ratio' as const, op: '<=' as const, target: 1, source: 'issue 41' } } : {}),
      });
      results.add({
        section: 'Search (stdio)', name: `rare word, ${sizeLabel(size)} records`, unit: 'ms', values: warm, reference,
        ...(size === 100_000 ? { goal: { on: 'value' as const, op: '<=' as const, target: 200, source: 'text search' } } : {}),
      });
    }
  },
};
