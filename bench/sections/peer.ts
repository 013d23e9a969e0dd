/**
 * A peer, side by side: the official @modelcontextprotocol/server-memory, a
 * stdio MCP server that keeps a knowledge graph in one JSONL file and, on
 * every write, reads the whole file and writes it back (temp file + rename,
 * no fsync). Both are driven by the same SDK client: serial writes at 100,
 * 2,000 and 10,000 existing records, and records lost when 20 writes arrive
 * at once, from one process and from two processes sharing the store.
 */
import { createRequire } from 'node:module';
import fs from 'node:fs/promises';
import path from 'node:path';
import { checkCorpus } from '../lib/check.js';
import { sizeLabel, type BenchContext, type Section } from '../lib/context.js';
import { benchRecord, cachedCorpus, copyCorpus, mulberry32 } from '../lib/corpus.js';
import { connectStdio, relayServer, type StdioPeer } from '../lib/procs.js';
import { rate } from '../lib/stats.js';

const MEMORY_PACKAGE = createRequire(import.meta.url).resolve('@modelcontextprotocol/server-memory/package.json');
const MEMORY_BIN = path.join(path.dirname(MEMORY_PACKAGE), 'dist', 'index.js');
let seq = 0;

const entity = (i: number, text: string) => ({ name: `bench-${i}`, entityType: 'note', observations: [text] });
/**
 * A record of the bench corpus's size and shape, but naming no other record:
 * a parent: or ref: to an id not held yet makes it KNOWN_MISSING, and the
 * next free id steps over it, which would read as a gap in the loss count.
 */
const text = (i: number) => benchRecord(i, 6, mulberry32(i)).replace(/^(parent|ref): .*\n/gm, '');

/** A memory file holding `size` entities of about a record's size each. */
async function memoryFile(ctx: BenchContext, size: number): Promise<string> {
  const file = path.join(await fs.mkdtemp(path.join(ctx.tmp, 'memory-')), 'memory.jsonl');
  const lines = Array.from({ length: size }, (_, i) => JSON.stringify({ type: 'entity', ...entity(-1 - i, text(i + 1)) }));
  await fs.writeFile(file, lines.join('\n'));
  return file;
}

const memoryServer = (file: string) => connectStdio(process.execPath, [MEMORY_BIN], { MEMORY_FILE_PATH: file });

async function entitiesIn(file: string): Promise<number> {
  const data = await fs.readFile(file, 'utf8');
  return data.split('\n').filter((l) => l.includes('"type":"entity"')).length;
}

/** Fires `perProcess` writes at once at each server; returns how many were acknowledged. */
async function burst(servers: StdioPeer[], perProcess: number, write: (s: StdioPeer, i: number) => Promise<unknown>): Promise<number> {
  const outcomes = await Promise.allSettled(servers.flatMap((s) => Array.from({ length: perProcess }, () => write(s, seq++))));
  return outcomes.filter((o) => o.status === 'fulfilled').length;
}

export const peerSection: Section = {
  name: 'peer',
  title: 'Peer: @modelcontextprotocol/server-memory beside p-e-relay, same client, same machine',
  async run(ctx) {
    const { results, reps } = ctx;
    const ms = ctx.window(1000, 300);
    const section = 'Peer (server-memory)';
    for (const size of ctx.quick ? [100, 2000] : [100, 2000, 10_000]) {
      const corpus = await cachedCorpus(size, 6, ctx.log);
      const memory = await memoryFile(ctx, size);
      const copy = await copyCorpus(corpus, ctx.tmp);
      const [peer, relay] = await Promise.all([memoryServer(memory), relayServer(copy.corpus)]);
      // Warm both up: the relay's start-up scan is done, and each has handled a write.
      await relay.call('exists', { id: `relay-${String(size).padStart(6, '0')}` });
      await relay.call('append_relay', { bytes: text(seq++) });
      await peer.call('create_entities', { entities: [entity(seq++, text(seq))] });
      const v = { peer: [] as number[], relay: [] as number[] };
      for (let r = 0; r < reps; r++) {
        v.peer.push(await rate(ms, () => peer.call('create_entities', { entities: [entity(seq++, text(seq))] })));
        v.relay.push(await rate(ms, () => relay.call('append_relay', { bytes: text(seq++) })));
      }
      await Promise.all([peer.close(), relay.close()]);
      await copy.dispose();
      results.add({ section, name: `server-memory create_entities, serial, ${sizeLabel(size)} existing`, unit: 'writes/s', values: v.peer });
      results.add({ section, name: `p-e-relay append_relay (durable), serial, ${sizeLabel(size)} existing`, unit: 'appends/s', values: v.relay, reference: { name: 'server-memory', values: v.peer } });
    }

    for (const processes of [1, 2]) {
      const lost = { peer: [] as number[], relay: [] as number[] };
      for (let r = 0; r < (ctx.quick ? 1 : reps); r++) {
        const memory = await memoryFile(ctx, 100);
        const peers = await Promise.all(Array.from({ length: processes }, () => memoryServer(memory)));
        const acked = await burst(peers, 20 / processes, (s, i) => s.call('create_entities', { entities: [entity(i, text(i))] }));
        await Promise.all(peers.map((p) => p.close()));
        lost.peer.push(acked - ((await entitiesIn(memory)) - 100));

        const copy = await copyCorpus(await cachedCorpus(100, 6, ctx.log), ctx.tmp);
        const relays = await Promise.all(Array.from({ length: processes }, () => relayServer(copy.corpus)));
        const ackedRelay = await burst(relays, 20 / processes, (s, i) => s.call('append_relay', { bytes: text(i) }));
        await Promise.all(relays.map((p) => p.close()));
        const check = await checkCorpus(copy.corpus, 6);
        lost.relay.push(ackedRelay - (check.held - 100) + check.gaps + check.damaged + check.duplicates);
        await copy.dispose();
      }
      const from = processes === 1 ? 'one process' : 'two processes';
      results.add({ section, name: `server-memory: of 20 concurrent writes from ${from}, lost`, unit: 'records', values: lost.peer });
      results.add({ section, name: `p-e-relay: of 20 concurrent appends from ${from}, lost`, unit: 'records', values: lost.relay, goal: { on: 'value', op: '<=', target: 0, source: 'spec §6' } });
    }
    results.note('server-memory rewrites its whole JSONL file on every write (temp file + rename) and never fsyncs; p-e-relay fsyncs the record and the directory before it answers. Its writes/s are therefore not durable writes.');
  },
};
