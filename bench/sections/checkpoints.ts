/**
 * What checkpoints cost (lib/store/checkpoint-writer.ts, docs/mirroring.md):
 * the bytes a checkpoint over 1,000 records adds, against those records'
 * own bytes, and the CPU of writing one on a corpus of each size, against
 * the CPU of appending the 1,000 records it covers, measured right before
 * it in the same store. In-process on a writable copy of each cached corpus
 * (its index from the snapshot, as a restarted hub has it); the first
 * checkpoints on a corpus that has none (all of it covered at once) are
 * measured once per size.
 */
import fs from 'node:fs/promises';
import path from 'node:path';
import { silentLogger } from '../../lib/log.js';
import { CheckpointWriter } from '../../lib/store/checkpoint-writer.js';
import { openStore } from '../../lib/store/store.js';
import { sizeLabel, type Section } from '../lib/context.js';
import { benchRecord, cachedCorpus, copyCorpus, mulberry32 } from '../lib/corpus.js';

/** Records between two checkpoints: the hub's default cadence. */
const EVERY = 1000;

/** CPU milliseconds (user + system) that `work` took in this process. */
async function cpuMs(work: () => Promise<unknown>): Promise<number> {
  const before = process.cpuUsage();
  await work();
  const used = process.cpuUsage(before);
  return (used.user + used.system) / 1000;
}

export const checkpointsSection: Section = {
  name: 'checkpoints',
  title: 'Checkpoints: bytes per 1,000 records, CPU per checkpoint',
  async run(ctx) {
    const section = 'Checkpoints';
    for (const { size, width } of ctx.sizes) {
      const source = await cachedCorpus(size, width, ctx.log);
      const copy = await copyCorpus(source, ctx.tmp);
      const store = await openStore({ corpus: copy.corpus, watch: 'none' });
      try {
        const writer = new CheckpointWriter(store, async () => null, silentLogger);
        let firstIds: string[] = [];
        const first = await cpuMs(async () => (firstIds = await writer.writeDue()));
        ctx.results.add({ section, name: `first checkpoints on ${sizeLabel(size)} records with none (${firstIds.length} written)`, unit: 'CPU-ms', values: [first], size });

        const random = mulberry32(size);
        const cpu: number[] = [];
        const appends: number[] = [];
        const bytes: number[] = [];
        const recordBytes: number[] = [];
        for (let r = 0; r <= ctx.reps; r++) {
          const ids: string[] = [];
          const appending = await cpuMs(async () => {
            for (let i = 0; i < EVERY; i++) ids.push((await store.append(Buffer.from(benchRecord(size + r * EVERY + i + 1, width, random)), { depositedBy: 'mcp' })).id);
          });
          let written: string[] = [];
          const checkpointing = await cpuMs(async () => (written = await writer.writeDue()));
          if (written.length !== 1) throw new Error(`expected one checkpoint over ${EVERY} records, got ${written.length}`);
          if (r === 0) continue; // the first round warms the code paths
          cpu.push(checkpointing);
          appends.push(appending);
          bytes.push((await fs.stat(path.join(copy.corpus, written[0]!))).size);
          let held = 0;
          for (const id of ids) held += (await fs.stat(path.join(copy.corpus, id))).size;
          recordBytes.push(held);
        }
        ctx.results.add({ section, name: `CPU per checkpoint (over ${EVERY.toLocaleString('en-US')} records) at ${sizeLabel(size)}`, unit: 'CPU-ms', values: cpu, reference: { name: `appending those ${EVERY.toLocaleString('en-US')} records`, values: appends }, size });
        if (size === ctx.sizes[0]!.size) {
          ctx.results.add({ section, name: `bytes a checkpoint adds per ${EVERY.toLocaleString('en-US')} records (its file, deposit header included)`, unit: 'bytes', values: bytes, reference: { name: `the ${EVERY.toLocaleString('en-US')} records' files`, values: recordBytes } });
        }
      } finally {
        await store.close();
        await copy.dispose();
      }
    }
  },
};
