import { connectStdio, footprint } from './lib/procs.js';
const run = async (label: string, args: string[]) => {
  const s = await connectStdio(process.execPath, args, { P_E_RELAY_LOG: 'warn' });
  const t = performance.now();
  await s.client.listTools();
  await s.call('exists', { id: 'relay-9999' });
  const out = [];
  for (const at of [300, 3000, 10000, 20000]) {
    await new Promise((r) => setTimeout(r, at - (performance.now() - t)));
    out.push(`${at}ms:${(await footprint(s.pid)).rssMb.toFixed(1)}`);
  }
  console.log(label, out.join(' '));
  await s.close();
};
await run('default', ['bin/p-e-relay', 'serve', '--corpus', 'bench/out/corpora/w4-9999/corpus']);
await run('setFlags semi1', ['/tmp/launch-semi.mjs', 'serve', '--corpus', 'bench/out/corpora/w4-9999/corpus']);
