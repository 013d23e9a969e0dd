/**
 * Reads over stdio: exists, list_relays, list_replies and get_relay calls per
 * second, serially through the SDK client to one `p-e-relay serve`, at each
 * corpus size. Reference: the same client calling a do-nothing tool on a bare
 * bundled MCP server (the floor for any stdio tool call), in the same repetition.
 */
import { idShape } from '../../lib/model/ids.js';
import { bareServerBundle } from '../lib/build.js';
import { sizeLabel, type Section } from '../lib/context.js';
import { cachedCorpus, mulberry32 } from '../lib/corpus.js';
import { connectStdio, relayServer, type StdioPeer } from '../lib/procs.js';
import { rate } from '../lib/stats.js';

export const readsSection: Section = {
  name: 'reads',
  title: 'Reads over stdio: calls per second',
  async run(ctx) {
    const { results, reps } = ctx;
    const ms = ctx.window(700, 300);
    const bare = await connectStdio(process.execPath, [await bareServerBundle()]);
    for (const { size, width } of ctx.sizes) {
      const { corpus } = await cachedCorpus(size, width, ctx.log);
      const shape = idShape(width);
      const random = mulberry32(size);
      const anyId = () => shape.format(1 + Math.floor(random() * size));
      const server: StdioPeer = await relayServer(corpus);
      await server.call('exists', { id: shape.format(size) }); // the scan is done
      const ops: [string, () => Promise<unknown>][] = [
        ['exists', () => server.call('exists', { id: anyId() })],
        ['get_relay', () => server.call('get_relay', { id: anyId() })],
        ['list_replies', () => server.call('list_replies', { id: anyId() })],
        ['list_relays after the newest 10', () => server.call('list_relays', { after: shape.format(size - 10) })],
        ['list_relays, whole corpus', () => server.call('list_relays')],
      ];
      const warm = ctx.window(300, 100);
      for (const [, op] of ops) await rate(warm, op); // warm both ends (JIT, page cache) before the first window
      await rate(warm, () => bare.call('noop', { id: anyId() }));
      const v = new Map<string, number[]>();
      const noop: number[] = [];
      for (let r = 0; r < reps; r++) {
        noop.push(await rate(ms, () => bare.call('noop', { id: anyId() })));
        for (const [name, op] of ops) {
          const list = v.get(name) ?? [];
          list.push(await rate(ms, op));
          v.set(name, list);
        }
      }
      await server.close();
      results.add({ section: 'Ceilings', name: `bare MCP tool call over stdio (beside ${sizeLabel(size)})`, unit: 'calls/s', values: noop });
      for (const [name, values] of v) {
        results.add({ section: 'Reads (stdio)', name: `${name}, ${sizeLabel(size)} records`, unit: 'calls/s', values, reference: { name: 'bare tool call', values: noop } });
        results.add({ section: 'Scaling', name: `stdio ${name}`, unit: 'calls/s', values, size });
      }
    }
    await bare.close();
  },
};
