/**
 * A local read replica on another host, for real: network namespaces for
 * hosts, the primary hub on one, a replica on another that shares no file
 * with it (its mirror is filled over the network by `p-e-relay mirror
 * --every 1000` from the hub host's rsync daemon), and a third host that
 * appends straight to the hub. Prints the figures docs/scaling.md records,
 * and exits 1 if any check fails.
 *
 *   sudo npm run test:replica-bed          (or P_E_RELAY_MULTIHOST=1 npm test)
 *
 * Its frame (deadline, checks, children, the run and tear-down) is the
 * beds' own (bed.ts).
 *
 *   hub  10.234.0.1  serve --http (the primary), rsync --daemon serving its corpus
 *   r    10.234.0.2  mirror --every 1000; agents' stdio servers: serve --forward --agent alice
 *   c    10.234.0.3  another agent appending straight to the hub (signed HTTP, as the bridge does)
 *
 * Needs root, `ip netns` and rsync; prints "SKIP: <reason>" and exits 0
 * where they are not there. The same file is the worker each host runs
 * (`… replica-bed.ts worker KIND …`). Every wait and loop is bounded.
 */
import { randomBytes } from 'node:crypto';
import { rmSync } from 'node:fs';
import fs from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { performance } from 'node:perf_hooks';
import { fileURLToPath } from 'node:url';
import { BIN, bed, fmt, namespacesAllowed, onPath, pct, printFigures, run, runBed, sleep, untilOk, type Spawned } from './bed.js';

const SELF = fileURLToPath(import.meta.url);

const APPENDS = Number(process.env.RB_APPENDS ?? 40);
const WAKES = Number(process.env.RB_WAKES ?? 20);
const OUTAGE_MS = Number(process.env.RB_OUTAGE_MS ?? 30_000);
const MIRROR_EVERY = process.env.RB_MIRROR_EVERY ?? '1000';
const DEADLINE_MS = 15 * 60_000;
const PORT = 7077;

const say = (o: object) => process.stdout.write(`${JSON.stringify(o)}\n`);
/** Appends spaced 200-700 ms apart: never in step with the mirror's schedule. */
const spacing = () => sleep(200 + Math.floor(Math.random() * 500));

// ---------------------------------------------------------------- workers --

interface ToolAnswer {
  isError?: boolean;
  structuredContent?: Record<string, unknown>;
  _meta?: Record<string, unknown>;
  content: { type: string; text?: string }[];
}

/** The SDK client over stdio to alice's replica server, as her MCP client would spawn it. */
async function replicaClient(url: string, corpus: string, keys: string) {
  const { Client } = await import('@modelcontextprotocol/client');
  const { StdioClientTransport } = await import('@modelcontextprotocol/client/stdio');
  const transport = new StdioClientTransport({
    command: process.execPath,
    args: [BIN, 'serve', '--forward', '--primary', url, '--agent', 'alice', '--corpus', corpus, '--keys', keys],
    env: { ...(process.env as Record<string, string>), P_E_RELAY_LOG: 'warn' },
    stderr: 'inherit',
  });
  const client = new Client({ name: 'replica-bed', version: '0' });
  await client.connect(transport);
  return { call: async (name: string, args: Record<string, unknown>) => (await client.callTool({ name, arguments: args }, { timeout: 120_000 })) as ToolAnswer, close: () => client.close() };
}

/** An agent appending straight to the hub: the bridge's own client and signing, no replica in between. */
async function hubClient(url: string, keys: string, agent: string) {
  const { HubClient } = await import('../../../lib/bridge/hub-client.js');
  const { hubFetch } = await import('../../../lib/bridge/hub-fetch.js');
  const { bridgeKey } = await import('../../../lib/bridge/bridge-key.js');
  const { parseHubUrl } = await import('../../../lib/bridge/hub-url.js');
  const log = { debug() {}, info() {}, warn: (m: string) => process.stderr.write(`${m}\n`), error: (m: string) => process.stderr.write(`${m}\n`) };
  const key = bridgeKey(keys, agent);
  const side = { url, agent, keyFile: key.file };
  const hub = new HubClient(parseHubUrl(url)!, hubFetch(key, side, log), side, log);
  return { append: (bytes: string) => hub.run({}, 30_000, (client) => client.callTool({ name: 'append_relay', arguments: { bytes } }, { timeout: 30_000 })) as Promise<ToolAnswer>, close: () => hub.close() };
}

const codeOf = (r: ToolAnswer) => (r._meta?.['p-e-relay/error'] as { code?: string } | undefined)?.code;
const detailsOf = (r: ToolAnswer) => (r._meta?.['p-e-relay/error'] ?? {}) as { code?: string; idempotencyKey?: string; cause?: string };

async function worker(kind: string, args: string[]): Promise<void> {
  if (kind === 'replica-appends' || kind === 'hub-appends') {
    // One agent appending one record after another, timing each answer.
    const [url, corpus, keys, count] = [args[0]!, args[1]!, args[2]!, Number(args[3])];
    const replica = kind === 'replica-appends' ? await replicaClient(url, corpus, keys) : null;
    const hub = replica ? null : await hubClient(url, keys, 'carol');
    for (let i = 0; i < count; i++) {
      await spacing();
      const bytes = `@p-e/x0\nkind: load\nfrom: ${replica ? 'alice' : 'carol'}\n\n${kind} ${i} ${randomBytes(8).toString('hex')}\n`;
      const t0 = performance.now();
      const r = replica ? await replica.call('append_relay', { bytes }) : await hub!.append(bytes);
      say({ i, body: bytes, id: r.structuredContent?.id, code: codeOf(r), ms: performance.now() - t0 });
    }
    await (replica ?? hub)!.close();
  } else if (kind === 'replica-waiter') {
    // alice's wait loop on the replica: from the newest record held, each answer's cursor passed back.
    const [url, corpus, keys, count, timeoutMs] = [args[0]!, args[1]!, args[2]!, Number(args[3]), Number(args[4])];
    const replica = await replicaClient(url, corpus, keys);
    let cursor = String((await replica.call('wait_for_relay', { after: 'relay-0000', timeout_ms: 0 })).structuredContent?.cursor);
    say({ ready: true, cursor });
    const end = Date.now() + timeoutMs;
    let seen = 0;
    while (seen < count && Date.now() < end) {
      const r = await replica.call('wait_for_relay', { after: cursor, timeout_ms: Math.min(60_000, end - Date.now()) });
      const t = Date.now();
      for (const item of (r.structuredContent?.appeared ?? []) as { id: string }[]) {
        say({ id: item.id, t });
        seen++;
      }
      cursor = String(r.structuredContent?.cursor ?? cursor);
    }
    await replica.close();
  } else if (kind === 'hub-pinger') {
    const [url, keys, count] = [args[0]!, args[1]!, Number(args[2])];
    const hub = await hubClient(url, keys, 'carol');
    for (let i = 0; i < count; i++) {
      await sleep(400 + Math.floor(Math.random() * 500));
      const r = await hub.append(`@p-e/x0\nkind: ping\nfrom: carol\nto: alice\n\nping ${i} ${randomBytes(4).toString('hex')}\n`);
      say({ id: r.structuredContent?.id, code: codeOf(r), t: Date.now() });
    }
    await hub.close();
  } else if (kind === 'outage') {
    // alice goes on working while the primary is down: an append, a listing, a read and a look (wait, timeout 0)
    // every ~500 ms for `ms`; then, told so (SIGUSR2), sends every refused append again under the key its refusal named.
    const [url, corpus, keys, ms] = [args[0]!, args[1]!, args[2]!, Number(args[3])];
    const resend = new Promise((resolve) => process.once('SIGUSR2', resolve));
    const replica = await replicaClient(url, corpus, keys);
    const refused: { body: string; key: string }[] = [];
    const end = Date.now() + ms;
    let first: string | null = null;
    let cursor = 'relay-0000';
    for (let i = 0; Date.now() < end; i++) {
      const body = `@p-e/x0\nkind: load\nfrom: alice\n\noutage ${i} ${randomBytes(8).toString('hex')}\n`;
      const a = await replica.call('append_relay', { bytes: body });
      const d = detailsOf(a);
      say({ op: 'append', i, body, id: a.structuredContent?.id, code: d.code, cause: d.cause, key: d.idempotencyKey, t: Date.now() });
      if (a.isError && d.idempotencyKey) refused.push({ body, key: d.idempotencyKey });
      first ??= (a.structuredContent?.id as string | undefined) ?? null;
      const listed = await replica.call('list_relays', {});
      say({ op: 'list', ok: !listed.isError, code: codeOf(listed), t: Date.now() });
      if (first) {
        const got = await replica.call('get_relay', { id: first });
        say({ op: 'get', ok: !got.isError, code: codeOf(got), t: Date.now() });
      }
      const looked = await replica.call('wait_for_relay', { after: cursor, timeout_ms: 0 });
      say({ op: 'wait', ok: !looked.isError, code: codeOf(looked), t: Date.now() });
      cursor = String(looked.structuredContent?.cursor ?? cursor);
      await sleep(500);
    }
    say({ op: 'loop-done' });
    await resend;
    for (const { body, key } of refused) {
      const r = await replica.call('append_relay', { bytes: body, idempotency_key: key });
      say({ op: 'resend', body, key, id: r.structuredContent?.id, replayed: r.structuredContent?.replayed === true, code: codeOf(r) });
    }
    await replica.close();
  } else throw new Error(`unknown worker ${kind}`);
}

// ------------------------------------------------------------ orchestrator --

const DEADLINE = 15 * 60_000;
const thisBed = bed(DEADLINE);
const { check, sh, children } = thisBed;
const tag = `perb${process.pid % 1000}`;
const HOSTS = ['hub', 'r', 'c'] as const;
type Host = (typeof HOSTS)[number];
const IP: Record<Host, string> = { hub: '10.234.0.1', r: '10.234.0.2', c: '10.234.0.3' };
const URL_OF_HUB = `http://${IP.hub}:${PORT}`;
const ns = (h: Host) => `${tag}-${h}`;
const figures: Record<string, string> = {};
let work = '';

/** `argv` run in host `host`'s network namespace. */
const start = (host: Host, argv: string[], timeoutMs = DEADLINE) => thisBed.start(['nsenter', `--net=/run/netns/${ns(host)}`, ...argv], timeoutMs);

/** The JSON lines a worker printed that `match` accepts. */
function json<T>(spawned: Spawned, match: (o: T & Record<string, unknown>) => boolean): T[] {
  return spawned.lines.filter((l) => l.startsWith('{')).map((l) => JSON.parse(l) as T & Record<string, unknown>).filter(match);
}

const workerArgv = (kind: string, args: (string | number)[]) => [process.execPath, '--import', 'tsx', SELF, 'worker', kind, ...args.map(String)];

const spread = (xs: number[]) => `p50 ${fmt(pct(xs, 50))}, p90 ${fmt(pct(xs, 90))}`;

async function skipReason(): Promise<string | null> {
  if (process.platform !== 'linux') return 'not Linux';
  if (process.getuid?.() !== 0) return 'needs root (network namespaces)';
  const packages: Record<string, string> = { rsync: 'rsync', nsenter: 'util-linux', ip: 'iproute2' };
  const missing = Object.keys(packages).find((cmd) => !onPath(cmd));
  if (missing) return `needs ${missing} (apt-get install -y ${packages[missing]})`;
  return namespacesAllowed(thisBed, tag);
}

/** Three hosts joined by a bridge on the hub host. */
async function network(): Promise<void> {
  for (const h of HOSTS) await sh('ip', ['netns', 'add', ns(h)]);
  for (const h of HOSTS) await sh('ip', ['-n', ns(h), 'link', 'set', 'lo', 'up']);
  await sh('ip', ['-n', ns('hub'), 'link', 'add', 'br0', 'type', 'bridge']);
  await sh('ip', ['-n', ns('hub'), 'addr', 'add', `${IP.hub}/24`, 'dev', 'br0']);
  await sh('ip', ['-n', ns('hub'), 'link', 'set', 'br0', 'up']);
  for (const h of ['r', 'c'] as const) {
    const [inner, outer] = [`${tag}${h}0`, `${tag}${h}1`];
    await sh('ip', ['link', 'add', inner, 'netns', ns(h), 'type', 'veth', 'peer', 'name', outer, 'netns', ns('hub')]);
    await sh('ip', ['-n', ns(h), 'addr', 'add', `${IP[h]}/24`, 'dev', inner]);
    await sh('ip', ['-n', ns(h), 'link', 'set', inner, 'up']);
    await sh('ip', ['-n', ns('hub'), 'link', 'set', outer, 'master', 'br0']);
    await sh('ip', ['-n', ns('hub'), 'link', 'set', outer, 'up']);
  }
}

async function startHub(corpus: string, keys: string): Promise<Spawned> {
  const hub = start('hub', [process.execPath, BIN, 'serve', '--http', '--host', IP.hub, '--port', String(PORT), '--corpus', corpus, '--keys', keys]);
  await untilOk(async () => {
    if (!/serving http:/.test(hub.stderr())) throw new Error(hub.child.exitCode === null ? 'not yet' : `it exited: ${hub.stderr()}`);
  }, 'the hub', 60_000);
  return hub;
}

/** The record files of a corpus: name → the bytes below the deposit header. */
async function records(corpus: string): Promise<Map<string, string>> {
  const { splitRecordFile } = await import('../../../lib/model/deposit.js');
  const out = new Map<string, string>();
  for (const n of (await fs.readdir(corpus)).filter((x) => /^relay-\d+$/.test(x)).sort()) out.set(n, splitRecordFile(await fs.readFile(path.join(corpus, n))).record.toString('utf8'));
  return out;
}

/** Until `corpus` holds every record `primary` does (the mirror catching up), at most `ms`. */
async function caughtUp(primary: string, corpus: string, ms: number): Promise<boolean> {
  const end = Date.now() + ms;
  while (Date.now() < end) {
    const [p, m] = await Promise.all([records(primary), records(corpus)]);
    if ([...p.keys()].every((k) => m.get(k) === p.get(k))) return true;
    await sleep(250);
  }
  return false;
}

async function main(): Promise<void> {
  work = await fs.mkdtemp(path.join(os.tmpdir(), 'pe-replica-bed-'));
  await network();
  const { initStore } = await import('../../../lib/ops/init.js');
  const { addKey } = await import('../../../lib/auth/keys.js');
  const primary = path.join(work, 'hub', 'corpus');
  const hubKeys = path.join(work, 'hub', 'keys');
  await initStore({ corpus: primary, keys: hubKeys });
  for (const agent of ['alice', 'carol']) await addKey(hubKeys, agent);
  // The replica host's own disk: alice's key copied from the hub, and the mirror rsync fills.
  const replica = path.join(work, 'r', 'corpus');
  const replicaKeys = path.join(work, 'r', 'keys');
  await fs.mkdir(replicaKeys, { recursive: true, mode: 0o700 });
  await fs.copyFile(path.join(hubKeys, 'alice.key'), path.join(replicaKeys, 'alice.key'));
  const carolKeys = path.join(work, 'c', 'keys');
  await fs.mkdir(carolKeys, { recursive: true, mode: 0o700 });
  await fs.copyFile(path.join(hubKeys, 'carol.key'), path.join(carolKeys, 'carol.key'));

  // The hub host serves its corpus read-only to rsync (rsync://), and the hub over HTTP.
  const rsyncd = path.join(work, 'rsyncd.conf');
  await fs.writeFile(rsyncd, ['use chroot = no', `pid file = ${path.join(work, 'rsyncd.pid')}`, '[relay]', `  path = ${primary}`, '  read only = yes', '  uid = root', '  gid = root', ''].join('\n'));
  const daemon = start('hub', ['rsync', '--daemon', '--no-detach', `--config=${rsyncd}`, `--address=${IP.hub}`, '--port=873']);
  let hub = await startHub(primary, hubKeys);
  const source = `rsync://${IP.hub}/relay`;
  let first: { code: number; err: string } = { code: 1, err: '' };
  for (let k = 0; k < 40 && first.code !== 0 && daemon.child.exitCode === null; k++) {
    first = await run('nsenter', [`--net=/run/netns/${ns('r')}`, process.execPath, BIN, 'mirror', '--corpus', replica, source], { timeout: 60_000 }).then(() => ({ code: 0, err: '' }), (e: { stderr: string }) => ({ code: 1, err: e.stderr }));
    if (first.code !== 0) await sleep(500); // the daemon is still starting
  }
  if (first.code !== 0) throw new Error(`the replica host could not mirror ${source}: ${first.err.trim()} (rsync --daemon said: ${daemon.stderr().trim() || 'nothing'})`);
  const follower = start('r', [process.execPath, BIN, 'mirror', '--every', MIRROR_EVERY, source, '--corpus', replica]);

  // -- append latency: through the replica (forwarded, answered once mirrored) vs straight to the hub, both from host r
  const through = start('r', workerArgv('replica-appends', [URL_OF_HUB, replica, replicaKeys, APPENDS]), 600_000);
  await through.exited;
  const straight = start('r', workerArgv('hub-appends', [URL_OF_HUB, '-', carolKeys, APPENDS]), 600_000);
  await straight.exited;
  type Appended = { id?: string; code?: string; ms: number; body: string };
  const [viaReplica, direct] = [json<Appended>(through, (o) => 'ms' in o), json<Appended>(straight, (o) => 'ms' in o)];
  check(viaReplica.length === APPENDS && viaReplica.every((a) => a.id), `every one of ${APPENDS} appends through the replica was answered with an id (${viaReplica.filter((a) => a.id).length}; ${viaReplica.find((a) => !a.id)?.code ?? ''} ${through.stderr().slice(-300)})`);
  check(direct.length === APPENDS && direct.every((a) => a.id), `every one of ${APPENDS} appends straight to the hub was answered with an id (${direct.filter((a) => a.id).length})`);
  figures[`append through the replica (forwarded, answered once mirrored; mirror --every ${MIRROR_EVERY}), ${APPENDS} appends`] = spread(viaReplica.filter((a) => a.id).map((a) => a.ms));
  figures[`append straight to the hub from the same host (signed HTTP /mcp), ${APPENDS} appends`] = spread(direct.filter((a) => a.id).map((a) => a.ms));

  // -- a waiter on the replica woken by an append on another host (c → hub → rsync → the replica's waiter)
  {
    const waiter = start('r', workerArgv('replica-waiter', [URL_OF_HUB, replica, replicaKeys, WAKES, 180_000]), 240_000);
    await waiter.nextLine((l) => l.includes('"ready"'), 60_000);
    const pinger = start('c', workerArgv('hub-pinger', [URL_OF_HUB, carolKeys, WAKES]), 240_000);
    await pinger.exited;
    const acked = json<{ id?: string; t: number }>(pinger, (o) => 't' in o).filter((a) => a.id);
    const end = Date.now() + 15_000;
    while (json<{ id: string }>(waiter, (o) => 'id' in o && 't' in o).length < acked.length && Date.now() < end) await sleep(100);
    waiter.child.kill('SIGTERM');
    const heard = new Map(json<{ id: string; t: number }>(waiter, (o) => 'id' in o && 't' in o).map((e) => [e.id, e.t]));
    const wakes = acked.filter((a) => heard.has(a.id!)).map((a) => heard.get(a.id!)! - a.t);
    figures[`wake on the replica, append on host c acknowledged → wait_for_relay answered on host r (mirror --every ${MIRROR_EVERY})`] = `${spread(wakes)}, missed ${acked.length - wakes.length} of ${acked.length}`;
    check(acked.length === WAKES && wakes.length === acked.length, `every one of ${WAKES} appends on host c woke the waiter on the replica (missed ${acked.length - wakes.length})`);
  }

  // -- the primary down for OUTAGE_MS while alice goes on working on the replica
  {
    const before = await records(primary);
    const lead = 6_000;
    const tail = 12_000;
    const alice = start('r', workerArgv('outage', [URL_OF_HUB, replica, replicaKeys, lead + OUTAGE_MS + tail]), 600_000);
    await sleep(lead);
    hub.child.kill('SIGKILL');
    await hub.exited;
    const downAt = Date.now();
    await sleep(OUTAGE_MS);
    hub = await startHub(primary, hubKeys);
    const upAt = Date.now();
    await alice.nextLine((l) => l.includes('"loop-done"'), lead + OUTAGE_MS + tail + 60_000);
    await sleep(2_000); // anything queued somewhere would land now
    type Op = { op: string; ok?: boolean; code?: string; cause?: string; id?: string; key?: string; body?: string; t?: number; replayed?: boolean };
    const ops = json<Op>(alice, (o) => 'op' in o);
    const appends = ops.filter((o) => o.op === 'append');
    const down = (o: Op) => o.t! > downAt + 1_500 && o.t! < upAt; // after the retries of a call under way at the kill
    const reads = ops.filter((o) => o.op !== 'append' && o.t !== undefined && o.t > downAt && o.t < upAt);
    check(reads.length > 0 && reads.every((o) => o.ok), `with the primary down, every read and look on the replica answered (${reads.filter((o) => o.ok).length} of ${reads.length}: list_relays, get_relay, wait_for_relay)`);
    const refused = appends.filter((o) => !o.id);
    check(appends.filter(down).every((o) => !o.id), 'with the primary down, no append was answered with an id');
    check(refused.length > 0 && refused.every((o) => o.code === 'hub_unreachable' && o.key), `every refused append is hub_unreachable and names its key (${refused.length} refused; codes ${[...new Set(refused.map((o) => `${o.code}/${o.cause}`))].join(', ')})`);
    const held = await records(primary);
    const bodies = new Map([...held].map(([id, body]) => [body, id]));
    const landedAnyway = refused.filter((o) => bodies.has(o.body!));
    check(landedAnyway.every((o) => o.cause !== 'ECONNREFUSED'), `no append refused as never sent was stored (${landedAnyway.length} refused with the outcome unknown were stored: ${landedAnyway.map((o) => o.cause).join(', ') || 'none'})`);
    const acked = appends.filter((o) => o.id);
    check(acked.every((o) => held.get(o.id!) === o.body), `every acknowledged append is on the primary under its id (${acked.length})`);
    alice.child.kill('SIGUSR2');
    await alice.exited;
    const resent = json<Op>(alice, (o) => o.op === 'resend');
    const after = await records(primary);
    const afterBodies = new Map<string, string[]>();
    for (const [id, body] of after) afterBodies.set(body, [...(afterBodies.get(body) ?? []), id]);
    check(resent.length === refused.length && resent.every((o) => o.id && after.get(o.id) === o.body), `every refused append, sent again under its key once the primary was back, was stored (${resent.filter((o) => o.id).length} of ${refused.length})`);
    check(landedAnyway.every((o) => resent.find((r) => r.body === o.body)?.replayed === true), 'a refused append that had landed all the same was answered replayed: true, not stored again');
    const duplicated = [...afterBodies.values()].filter((ids) => ids.length > 1).length;
    const names = [...after.keys()];
    check(duplicated === 0, `nothing is stored twice on the primary (duplicated ${duplicated})`);
    check(names.every((n, i) => n === `relay-${String(i + 1).padStart(4, '0')}`), `ids contiguous from relay-0001 (${names.length})`);
    const lost = [...before.keys()].filter((id) => after.get(id) !== before.get(id)).length;
    check(lost === 0, `nothing held before the outage was lost (${before.size})`);
    check(await caughtUp(primary, replica, 30_000), 'the replica holds byte-identical copies of every record on the primary');
    figures[`primary down ${OUTAGE_MS / 1000} s, alice working on the replica`] = `reads answered ${reads.filter((o) => o.ok).length} of ${reads.length}; appends refused ${refused.length} (hub_unreachable), acknowledged ${acked.length}; sent again under their keys: stored ${resent.filter((o) => o.id && !o.replayed).length}, replayed ${resent.filter((o) => o.replayed).length}; lost 0 / duplicated ${duplicated} on the primary`;
  }
  follower.child.kill('SIGTERM');
  hub.child.kill('SIGTERM');
  printFigures(figures);
}

async function tearDown(): Promise<void> {
  for (const child of children) child.kill('SIGKILL');
  for (const h of HOSTS) await run('ip', ['netns', 'del', ns(h)]).catch(() => {});
  if (work) rmSync(work, { recursive: true, force: true });
}

if (process.argv[2] === 'worker') {
  await worker(process.argv[3]!, process.argv.slice(4));
  process.exit(0);
}
await runBed(thisBed, { skipReason, main, tearDown });
