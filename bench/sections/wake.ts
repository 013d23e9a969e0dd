/**
 * Wake latency: a record appended through one stdio server wakes a
 * wait_for_relay blocked in another stdio server on the same corpus. Measured
 * from the moment the append request is sent to process A until B's answer
 * is in hand, so it includes the durable append itself (two fsyncs).
 *
 * The references, sampled in the same repetition: a bare fs.watch in another
 * process noticing a link() (the kernel's part alone), and the same watcher
 * noticing a raw durable create (write+fsync+link: what any design that
 * publishes durably must pay before anyone can be woken).
 */
import { constants as fsc } from 'node:fs';
import fs from 'node:fs/promises';
import path from 'node:path';
import type { BenchContext, Section } from '../lib/context.js';
import { cachedCorpus, copyCorpus, emptyCorpus, type Corpus } from '../lib/corpus.js';
import { forkWorker, relayServer, type StdioPeer } from '../lib/procs.js';
import { readSettings } from '../../lib/disk/settings.js';
import { idShape } from '../../lib/model/ids.js';
import { nowMs, percentiles, sleep } from '../lib/stats.js';

/** Raw fs.watch latency across processes, with and without a durable write before the link. */
async function rawWatchSamples(ctx: BenchContext, n: number, durable: boolean): Promise<number[]> {
  const dir = await fs.mkdtemp(path.join(ctx.tmp, 'watch-'));
  const tmp = path.join(dir, '.tmp');
  await fs.mkdir(tmp);
  const watcher = forkWorker('watcher', [dir]);
  await watcher.next('ready');
  const dirHandle = await fs.open(dir, fsc.O_RDONLY | fsc.O_DIRECTORY);
  const bytes = Buffer.alloc(420, 'x');
  const samples: number[] = [];
  for (let i = 0; i < n; i++) {
    const name = `f${i}`;
    const temp = path.join(tmp, name);
    let t0 = nowMs();
    const handle = await fs.open(temp, fsc.O_WRONLY | fsc.O_CREAT | fsc.O_EXCL);
    await handle.write(bytes);
    if (durable) await handle.sync();
    await handle.close();
    if (!durable) t0 = nowMs();
    const event = watcher.next<{ name: string; t: number }>('event');
    await fs.link(temp, path.join(dir, name));
    await fs.unlink(temp);
    if (durable) await dirHandle.sync();
    samples.push((await event).t - t0);
    await sleep(2);
  }
  await dirHandle.close();
  await watcher.stop();
  return samples;
}

/** Relay wake samples: B blocks in wait_for_relay, A appends, B's answer arrives. */
async function relaySamples(corpus: string, n: number, newest: string | null = null): Promise<{ wake: number[]; append: number[]; last: string | null }> {
  const [a, b] = await Promise.all([relayServer(corpus), relayServer(corpus)]);
  try {
    return await samplesOn(a, b, n, newest, idShape((await readSettings(corpus)).idWidth).format(0));
  } finally {
    await Promise.all([a.close(), b.close()]);
  }
}

/** `n` wakes through servers already running: A appends, B's wait_for_relay (after the newest id) answers. */
async function samplesOn(a: StdioPeer, b: StdioPeer, n: number, newest: string | null, zero = 'relay-0000'): Promise<{ wake: number[]; append: number[]; last: string | null }> {
  // A corpus of known size names its newest id; listing a million ids (30 MB of JSON) only to find it is not the figure.
  // An empty corpus: B waits after its zero id (a wait with no after is a named agent's inbox).
  let last = newest ?? (await b.call('list_relays').then((r) => (r.structuredContent as { present: string[] }).present.at(-1))) ?? zero;
  const wake: number[] = [];
  const append: number[] = [];
  for (let i = 0; i < n; i++) {
    let tB = 0;
    let tA = 0;
    const waited = b.call('wait_for_relay', { after: last, timeout_ms: 10_000 }).then((r) => ((tB = nowMs()), r));
    await sleep(5); // let the wait reach B and block there
    const t0 = nowMs();
    const appended = a.call('append_relay', { bytes: `@p-e/x0\nkind: ping\nfrom: a\nto: b\n\nwake ${i}\n` }).then((r) => ((tA = nowMs()), r));
    const [w, ap] = await Promise.all([waited, appended]);
    const id = (ap.structuredContent as { id: string }).id;
    const seen = (w.structuredContent as { appeared: { id: string }[] }).appeared.map((x) => x.id);
    if (!seen.includes(id)) throw new Error(`wait_for_relay in B answered ${seen.join(',') || 'nothing'} instead of ${id}`);
    last = id;
    wake.push(tB - t0);
    append.push(tA - t0);
  }
  return { wake, append, last };
}

export const wakeSection: Section = {
  name: 'wake',
  title: 'Wake: append in process A → wait_for_relay returns in process B',
  async run(ctx) {
    const { results, reps } = ctx;
    const n = ctx.quick ? 40 : 150;
    const v: Record<string, number[]> = {};
    const put = (key: string, x: number) => (v[key] ??= []).push(x);
    const pooled: number[] = [];
    const store = await emptyCorpus(ctx.tmp, 6);
    for (let r = 0; r < reps; r++) {
      const [w50, w99] = percentiles(await rawWatchSamples(ctx, n, false), [0.5, 0.99]);
      const [d50, d99] = percentiles(await rawWatchSamples(ctx, n, true), [0.5, 0.99]);
      const relay = await relaySamples(store.corpus, n);
      const [r50, r99] = percentiles(relay.wake, [0.5, 0.99]);
      pooled.push(...relay.wake);
      put('w50', w50!); put('w99', w99!); put('d50', d50!); put('d99', d99!); put('r50', r50!); put('r99', r99!);
      put('a50', percentiles(relay.append, [0.5])[0]!);
    }
    await store.dispose();
    results.add({ section: 'Ceilings', name: 'fs.watch event across processes after link(), p50', unit: 'ms', values: v.w50! });
    results.add({ section: 'Ceilings', name: 'fs.watch event across processes after link(), p99', unit: 'ms', values: v.w99! });
    results.add({ section: 'Ceilings', name: 'raw durable create → fs.watch event in another process, p50', unit: 'ms', values: v.d50! });
    const section = 'Wake';
    results.add({ section, name: `stdio wake, p50 (${n} samples a repetition)`, unit: 'ms', values: v.r50!, reference: { name: 'raw create→watch p50', values: v.d50! }, goal: { on: 'value', op: '<=', target: 5, source: 'issue 2' } });
    results.add({ section, name: `stdio wake, p99`, unit: 'ms', values: v.r99!, reference: { name: 'raw create→watch p99', values: v.d99! }, goal: { on: 'value', op: '<=', target: 20, source: 'issue 2' } });
    results.add({ section, name: 'A\'s append_relay round trip during the wake runs, p50', unit: 'ms', values: v.a50! });
    const [p50, p99] = percentiles(pooled, [0.5, 0.99]);
    results.note(`wake over all ${pooled.length} samples pooled: p50 ${p50!.toFixed(2)} ms, p99 ${p99!.toFixed(2)} ms`);

    // How wake moves with the corpus size (fewer samples: the shape, not the
    // tail). A pair of servers per size, all started first; each repetition
    // then samples every size in turn, so load that changes during the run
    // moves all sizes alike (the figure is their ratio).
    const m = ctx.quick ? 20 : 50;
    const pairs: { size: number; copy: Corpus & { dispose(): Promise<void> }; a: StdioPeer; b: StdioPeer; newest: string | null; p50: number[] }[] = [];
    for (const { size, width } of ctx.sizes) {
      const copy = await copyCorpus(await cachedCorpus(size, width, ctx.log), ctx.tmp);
      const [a, b] = await Promise.all([relayServer(copy.corpus), relayServer(copy.corpus)]);
      const newest = 'relay-' + String(size).padStart(width, '0');
      await Promise.all([a.call('exists', { id: newest }), b.call('exists', { id: newest })]); // both scans are done
      pairs.push({ size, copy, a, b, newest, p50: [] });
    }
    for (let r = 0; r < reps; r++) {
      for (const pair of pairs) {
        const samples = await samplesOn(pair.a, pair.b, m, pair.newest);
        pair.newest = samples.last;
        pair.p50.push(percentiles(samples.wake, [0.5])[0]!);
      }
    }
    for (const pair of pairs) {
      await Promise.all([pair.a.close(), pair.b.close()]);
      await pair.copy.dispose();
      results.add({ section: 'Scaling', name: 'stdio wake, p50', unit: 'ms', values: pair.p50, size: pair.size });
    }
  },
};
