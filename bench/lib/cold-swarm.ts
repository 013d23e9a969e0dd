/**
 * Twenty stdio servers started at once on one corpus, as a swarm of twenty
 * agents starts them: how much CPU they used, in all, until every one had
 * answered `exists` on the newest record (which needs the index). Run once
 * on the corpus as it is (cold, when it has no index snapshot), once more
 * on what that start left (warm), then twenty bare SDK servers answering a
 * call: the floor.
 */
import { idShape } from '../../lib/model/ids.js';
import { readSettings } from '../../lib/disk/settings.js';
import { listRecordIds } from '../../lib/disk/record-names.js';
import { connectStdio, cpuSecondsOf, relayServer, type StdioPeer } from './procs.js';
import { nowMs } from './stats.js';

export const SWARM_SIZE = 20;

/** The launcher's node flags (bin/p-e-relay's shebang), for the bare server too. */
export const NODE_FLAGS = ['--max-semi-space-size=1', '--optimize-for-size'];

export interface SwarmStart {
  coldCpuS: number;
  coldMs: number;
  warmCpuS: number;
  warmMs: number;
  bareCpuS: number;
}

/** The twenty servers' CPU until all answered, and the wall time it took. */
async function startTwenty(spawnOne: () => Promise<StdioPeer>, call: (peer: StdioPeer) => Promise<unknown>): Promise<{ cpuS: number; ms: number }> {
  const t0 = nowMs();
  const peers = await Promise.all(Array.from({ length: SWARM_SIZE }, spawnOne));
  try {
    await Promise.all(peers.map(call));
    const ms = Math.round(nowMs() - t0);
    return { cpuS: await cpuSecondsOf(peers.map((p) => p.pid)), ms };
  } finally {
    await Promise.all(peers.map((p) => p.close()));
  }
}

export async function coldSwarmOnce(corpus: string, bareBundle: string): Promise<SwarmStart> {
  const shape = idShape((await readSettings(corpus)).idWidth);
  const ids = await listRecordIds(corpus, shape);
  const newest = shape.format(Math.max(...ids));
  const exists = (peer: StdioPeer) => peer.call('exists', { id: newest });
  const cold = await startTwenty(() => relayServer(corpus), exists);
  const warm = await startTwenty(() => relayServer(corpus), exists);
  const bare = await startTwenty(() => connectStdio(process.execPath, [...NODE_FLAGS, bareBundle]), (peer) => peer.call('noop', {}));
  return { coldCpuS: cold.cpuS, coldMs: cold.ms, warmCpuS: warm.cpuS, warmMs: warm.ms, bareCpuS: bare.cpuS };
}
