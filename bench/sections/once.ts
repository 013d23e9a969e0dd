/**
 * What exactly-once costs (spec §8b): MCP stdio append_relay with a fresh
 * idempotency_key per record against the same call without one, in the same
 * repetition (the claim under .state/idempotency/ and its done mark are the
 * difference), on one server and on four sharing a corpus; and a retry's
 * answer (a repeat of a stored key), which reads the record back and stores
 * nothing.
 */
import { randomUUID } from 'node:crypto';
import { checkCorpus, describeCheck } from '../lib/check.js';
import type { Section } from '../lib/context.js';
import { emptyCorpus } from '../lib/corpus.js';
import { relayServer, type StdioPeer } from '../lib/procs.js';
import { concurrentRate, rate } from '../lib/stats.js';

const note = (lane: number, seq: number) => `@p-e/x0\nkind: note\nfrom: bench-${lane}\n\nappend ${seq} from lane ${lane}, sent once whatever the retries.\n`;

export const onceSection: Section = {
  name: 'once',
  title: 'Exactly once: the cost of an idempotency key',
  async run(ctx) {
    const ms = ctx.window(1500, 300);
    const corpora = await Promise.all([0, 1, 2].map(() => emptyCorpus(ctx.tmp, 6)));
    const one: StdioPeer[] = [await relayServer(corpora[0]!.corpus)];
    const four: StdioPeer[] = await Promise.all(Array.from({ length: 4 }, () => relayServer(corpora[1]!.corpus)));
    const replayer = await relayServer(corpora[2]!.corpus);
    let seq = 0;
    const append = (peer: StdioPeer, lane: number, keyed: boolean) => peer.call('append_relay', keyed ? { bytes: note(lane, seq++), idempotency_key: randomUUID() } : { bytes: note(lane, seq++) });
    const stored = { bytes: note(0, -1), idempotency_key: 'the-same-key' };
    await replayer.call('append_relay', stored);

    const v: Record<string, number[]> = {};
    const put = (key: string, x: number) => (v[key] ??= []).push(x);
    const warm = ctx.window(300, 150);
    await rate(warm, () => append(one[0]!, 0, true));
    await concurrentRate(warm, 4, (lane) => append(four[lane]!, lane, true));
    for (let r = 0; r < ctx.reps; r++) {
      ctx.log(`repetition ${r + 1}/${ctx.reps}`);
      put('plain1', await rate(ms / 2, () => append(one[0]!, 0, false)));
      put('keyed1', await rate(ms, () => append(one[0]!, 0, true)));
      put('plain1', await rate(ms / 2, () => append(one[0]!, 0, false)));
      put('plain4', await concurrentRate(ms / 2, 4, (lane) => append(four[lane]!, lane, false)));
      put('keyed4', await concurrentRate(ms, 4, (lane) => append(four[lane]!, lane, true)));
      put('plain4', await concurrentRate(ms / 2, 4, (lane) => append(four[lane]!, lane, false)));
      put('replay', await rate(ms, async () => {
        const answer = await replayer.call('append_relay', stored);
        if (!(answer.structuredContent as { replayed?: boolean } | undefined)?.replayed) throw new Error('a repeat of a stored key was not answered replayed');
      }));
    }
    await Promise.all([...one, ...four, replayer].map((p) => p.close()));
    // Brackets: each plain figure is the mean of the halves around its keyed one.
    const pairs = (xs: number[]) => xs.reduce<number[]>((out, x, i) => (i % 2 ? (out[out.length - 1] = (out[out.length - 1]! + x) / 2, out) : [...out, x]), []);
    const check = await checkCorpus(corpora[2]!.corpus, 6);
    ctx.log(`replay corpus: ${describeCheck(check, 1)}`);

    const section = 'Exactly once';
    ctx.results.add({ section, name: 'MCP stdio append_relay with idempotency_key, 1 server', unit: 'appends/s', values: v.keyed1!, reference: { name: 'without a key', values: pairs(v.plain1!) } });
    ctx.results.add({ section, name: 'MCP stdio append_relay with idempotency_key, 4 servers, one corpus', unit: 'appends/s', values: v.keyed4!, reference: { name: 'without a key', values: pairs(v.plain4!) } });
    ctx.results.add({ section, name: 'a retry of a stored key (answered replayed, nothing stored)', unit: 'answers/s', values: v.replay!, reference: { name: 'keyed append, 1 server', values: v.keyed1! } });
    ctx.results.add({ section, name: 'records stored by the retries', unit: 'records', values: [check.held - 1], goal: { on: 'value', op: '<=', target: 0, source: 'spec §8b' } });
    for (const c of corpora) await c.dispose();
  },
};
