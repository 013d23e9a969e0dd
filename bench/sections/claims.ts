/**
 * Work claims (spec §8e), two figures against a plain append measured in the
 * same run:
 *
 * - The split: 20 named stdio agents on one corpus and 200 tasks. Each walks
 *   the tasks from its own starting point and claims the next one no one
 *   holds (a claimed or done refusal moves it on), marks it done, and
 *   appends a plain note. Goal: 200 tasks done, none granted twice, none
 *   lost; a claim's p50 at most 2x a plain append's.
 * - At size: one named stdio server on a corpus holding 1,000 and 10,000
 *   live claims (half tasks, half path globs, 100 holders), written as
 *   record files before it starts; a claim of a new task and path, then a
 *   plain append, alternated. Goal at 10,000: a claim's p50 at most 2x.
 */
import fs from 'node:fs/promises';
import path from 'node:path';
import type { CallToolResult } from '@modelcontextprotocol/client';
import { buildRecordFile, digestOf } from '../../lib/model/deposit.js';
import type { Section } from '../lib/context.js';
import { emptyCorpus } from '../lib/corpus.js';
import { relayServer, type StdioPeer } from '../lib/procs.js';
import { nowMs, percentiles } from '../lib/stats.js';

const AGENTS = 20;
const TASKS = 200;

const claimBytes = (targets: string) => `@p-e/x0\nkind: claim\nclaim: ${targets}\nfor: 1h\n\n`;
const note = (i: number) => `@p-e/x0\nkind: note\n\nplain append ${i}\n`;
const codeOf = (r: CallToolResult) => ((r._meta as Record<string, { code?: string }> | undefined)?.['p-e-relay/error']?.code);

async function timed(peer: StdioPeer, bytes: string): Promise<{ ms: number; result: CallToolResult }> {
  const t = nowMs();
  const result = (await peer.client.callTool({ name: 'append_relay', arguments: { bytes } }, { timeout: 120_000 })) as CallToolResult;
  return { ms: nowMs() - t, result };
}

export const claimsSection: Section = {
  name: 'claims',
  title: 'Work claims: the split and at size',
  async run(ctx) {
    const section = 'Work claims';
    const agents = ctx.quick ? 5 : AGENTS;
    const tasks = ctx.quick ? 50 : TASKS;
    const splitClaims: number[] = [];
    const splitPlain: number[] = [];
    const claimsPerS: number[] = [];
    const twice: number[] = [];
    const doneCounts: number[] = [];
    for (let r = 0; r < ctx.reps; r++) {
      ctx.log(`the split, repetition ${r + 1}/${ctx.reps}: ${agents} agents, ${tasks} tasks`);
      const c = await emptyCorpus(ctx.tmp, 6);
      const peers = await Promise.all(Array.from({ length: agents }, (_, i) => relayServer(c.corpus, ['--agent', `split-${i}`])));
      const claimMs: number[] = [];
      const plainMs: number[] = [];
      const granted = new Map<number, number>();
      let calls = 0;
      const started = nowMs();
      await Promise.all(peers.map(async (peer, a) => {
        for (let k = 0; k < tasks; k++) {
          const task = (a * Math.ceil(tasks / agents) + k) % tasks;
          const { ms, result } = await timed(peer, claimBytes(`task:t${task}`));
          calls++;
          claimMs.push(ms);
          if (result.isError) {
            const code = codeOf(result);
            if (code !== 'claimed' && code !== 'done') throw new Error(`split-${a} claim refused ${code}: ${JSON.stringify(result.content)}`);
            continue;
          }
          granted.set(task, (granted.get(task) ?? 0) + 1);
          const id = (result.structuredContent as { id: string }).id;
          const done = await timed(peer, `@p-e/x0\nkind: done\nparent: ${id}\n\n`);
          if (done.result.isError) throw new Error(`done refused: ${JSON.stringify(done.result.content)}`);
          plainMs.push((await timed(peer, note(task))).ms);
        }
      }));
      const seconds = (nowMs() - started) / 1000;
      await Promise.all(peers.map((p) => p.close()));
      splitClaims.push(percentiles(claimMs, [0.5])[0]!);
      splitPlain.push(percentiles(plainMs, [0.5])[0]!);
      claimsPerS.push(calls / seconds);
      twice.push([...granted.values()].filter((n) => n > 1).length);
      doneCounts.push(granted.size);
      await c.dispose();
    }
    ctx.results.add({ section, name: `the split: a claim's p50 (${agents} named stdio agents, ${tasks} tasks, grants and refusals)`, unit: 'ms', values: splitClaims,
      reference: { name: 'a plain append, same run', values: splitPlain }, goal: { on: 'ratio', op: '<=', target: 2, source: 'claims issue' } });
    ctx.results.add({ section, name: 'the split: claim calls per second, all agents', unit: 'claims/s', values: claimsPerS });
    ctx.results.add({ section, name: 'the split: tasks granted twice', unit: 'tasks', values: twice, goal: { on: 'value', op: '<=', target: 0, source: 'spec §8e' } });
    ctx.results.add({ section, name: `the split: tasks done (of ${tasks})`, unit: 'tasks', values: doneCounts, goal: { on: 'value', op: '>=', target: tasks, source: 'claims issue' } });

    for (const live of ctx.quick ? [1000] : [1000, 10_000]) {
      const claimP50: number[] = [];
      const plainP50: number[] = [];
      for (let r = 0; r < ctx.reps; r++) {
        ctx.log(`at size, ${live} live claims, repetition ${r + 1}/${ctx.reps}`);
        const c = await emptyCorpus(ctx.tmp, 6);
        await writeLiveClaims(c.corpus, live);
        const peer = await relayServer(c.corpus, ['--agent', 'newcomer']);
        const claimMs: number[] = [];
        const plainMs: number[] = [];
        const rounds = ctx.quick ? 40 : 150;
        for (let i = -10; i < rounds; i++) {
          const claim = await timed(peer, claimBytes(`task:new-${i + 10} path:other/f${i + 10}.ts`));
          if (claim.result.isError) throw new Error(`claim refused: ${JSON.stringify(claim.result.content)}`);
          const plain = await timed(peer, note(i));
          if (i >= 0) (claimMs.push(claim.ms), plainMs.push(plain.ms)); // the first ten warm up
        }
        await peer.close();
        claimP50.push(percentiles(claimMs, [0.5])[0]!);
        plainP50.push(percentiles(plainMs, [0.5])[0]!);
        await c.dispose();
      }
      ctx.results.add({ section, name: `at size: a claim's p50 with ${live.toLocaleString('en-US')} live claims`, unit: 'ms', values: claimP50,
        reference: { name: 'a plain append, same server', values: plainP50 }, ...(live === 10_000 ? { goal: { on: 'ratio' as const, op: '<=' as const, target: 2, source: 'claims issue' } } : {}) });
    }
  },
};

/** `count` live claims as record files (as a copy would bring them), 100 holders, half tasks and half path globs. */
async function writeLiveClaims(corpus: string, count: number): Promise<void> {
  const at = new Date().toISOString();
  for (let i = 1; i <= count; i++) {
    const target = i % 2 ? `task:held-${i}` : `path:pkg${i}/src/**`;
    const bytes = Buffer.from(claimBytes(target).replace('for: 1h', 'for: 24h'));
    const file = buildRecordFile({ provenance: 'as-received', depositedBy: `mcp/holder-${i % 100}`, depositedAt: at, digest: digestOf(bytes) }, bytes);
    await fs.writeFile(path.join(corpus, `relay-${String(i).padStart(6, '0')}`), file);
  }
}
