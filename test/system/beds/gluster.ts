/**
 * The corpus on GlusterFS, with a storage host lost mid-run. Network
 * namespaces for hosts: three storage hosts (s1, s2 data bricks; s3 the
 * arbiter) each running glusterd in a mount namespace of its own, and two
 * writer hosts (a, b) each with a FUSE mount of the replica volume. 2 × 4
 * writers append (keyed, retried on store_unreachable); meanwhile s2's brick
 * process is killed, then the whole of s2 (every process in its namespace,
 * and the namespace), then s2 comes back and the volume heals. A waiter on b
 * is woken by a pinger on a throughout.
 *
 *   sudo npm run test:gluster
 *
 * Needs root, `ip netns`, /dev/fuse, and Debian's glusterfs-server and
 * glusterfs-client (installed with apt-get when missing). Prints
 * "SKIP: <reason>" and exits 0 where they are not there. Every loop is
 * bounded; everything is torn down at the end.
 */
import { existsSync, rmSync } from 'node:fs';
import fs from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { BIN, bed, fmt, installPackages, namespacesAllowed, pct, printFigures, run, runBed, sleep, untilOk, type Spawned } from './bed.js';

/** The multi-host bed's workers (append-keyed, waiter, pinger) are reused as they are. */
const WORKER = fileURLToPath(new URL('./multi-host.ts', import.meta.url));
const PER_WRITER = Number(process.env.GB_PER_WRITER ?? 150);
const DEADLINE_MS = 15 * 60_000;
const tag = `pegl${process.pid % 1000}`;
const HOSTS = ['s1', 's2', 's3', 'a', 'b'] as const;
type Host = (typeof HOSTS)[number] | 'sw';
const IP: Record<string, string> = { s1: '10.233.0.11', s2: '10.233.0.12', s3: '10.233.0.13', a: '10.233.0.21', b: '10.233.0.22' };
/** Volume options under which the store's guarantees hold (docs/scaling.md says why each). */
const VOLUME_OPTIONS: [string, string][] = [
  ['performance.stat-prefetch', 'off'],
  ['performance.readdir-ahead', 'off'],
  ['performance.nl-cache', 'off'],
  ['performance.quick-read', 'off'],
  ['performance.io-cache', 'off'],
  ['performance.open-behind', 'off'],
  ['performance.write-behind', 'off'],
  ['cluster.consistent-metadata', 'on'],
  ['network.ping-timeout', '5'],
];
const MOUNT_OPTIONS = 'entry-timeout=0,attribute-timeout=0,negative-timeout=0';
const thisBed = bed(DEADLINE_MS);
const { check, children, sh, start } = thisBed;
const figures: Record<string, string> = {};
let work = '';
const glusterd = new Map<string, number>();

const ns = (h: Host) => `${tag}-${h}`;

/** The gluster CLI inside a storage host's own mount and network namespaces. */
function gluster(host: string, args: string[], timeoutMs = 60_000): Promise<string> {
  return sh('nsenter', ['-t', String(glusterd.get(host)), '-m', '-n', 'gluster', '--mode=script', ...args], timeoutMs);
}

function worker(host: 'a' | 'b', kind: string, args: (string | number)[], timeoutMs: number): Spawned {
  return start(['nsenter', `--net=/run/netns/${ns(host)}`, 'unshare', '--uts', '--', 'sh', '-c', `hostname host-${host} && exec "$@"`, 'sh', process.execPath, '--import', 'tsx', WORKER, 'worker', kind, ...args.map(String)], timeoutMs);
}

async function why(): Promise<string | null> {
  if (process.platform !== 'linux') return 'not Linux';
  if (process.getuid?.() !== 0) return 'needs root (network namespaces, mounts, glusterd)';
  if (!existsSync('/dev/fuse')) return 'no /dev/fuse: the GlusterFS client is FUSE';
  if (!existsSync('/usr/sbin/glusterd') || !existsSync('/sbin/mount.glusterfs')) {
    const failed = await installPackages(['glusterfs-server', 'glusterfs-client']);
    if (failed) return failed;
  }
  return namespacesAllowed(thisBed, tag);
}

/** One host's namespace and its cable to the switch. */
async function plugIn(h: (typeof HOSTS)[number]): Promise<void> {
  await sh('ip', ['netns', 'add', ns(h)]);
  await sh('ip', ['-n', ns(h), 'link', 'set', 'lo', 'up']);
  await sh('ip', ['link', 'add', `${tag}${h}0`, 'netns', ns(h), 'type', 'veth', 'peer', 'name', `${tag}${h}1`, 'netns', ns('sw')]);
  await sh('ip', ['-n', ns(h), 'addr', 'add', `${IP[h]}/24`, 'dev', `${tag}${h}0`]);
  await sh('ip', ['-n', ns(h), 'link', 'set', `${tag}${h}0`, 'up']);
  await sh('ip', ['-n', ns('sw'), 'link', 'set', `${tag}${h}1`, 'master', 'br0']);
  await sh('ip', ['-n', ns('sw'), 'link', 'set', `${tag}${h}1`, 'up']);
}

/** glusterd on a storage host, with its state, logs and sockets in directories of its own (a private mount namespace). */
async function startGlusterd(h: string): Promise<void> {
  const d = path.join(work, h);
  for (const sub of ['lib', 'log', 'brick']) await fs.mkdir(path.join(d, sub), { recursive: true });
  const script = `mount --bind ${d}/lib /var/lib/glusterd && mount --bind ${d}/log /var/log/glusterfs && mount -t tmpfs tmpfs /run && mkdir -p /run/gluster && exec glusterd -N --log-level=WARNING`;
  const g = start(['nsenter', `--net=/run/netns/${ns(h as Host)}`, 'unshare', '--mount', '--propagation', 'private', 'sh', '-c', script], DEADLINE_MS);
  glusterd.set(h, g.child.pid!);
  await untilOk(() => gluster(h, ['peer', 'status'], 5_000), `glusterd on ${h}`, 30_000);
}

async function setUp(): Promise<void> {
  work = await fs.mkdtemp(path.join(os.tmpdir(), 'pe-gluster-'));
  await sh('ip', ['netns', 'add', ns('sw')]);
  await sh('ip', ['-n', ns('sw'), 'link', 'add', 'br0', 'type', 'bridge']);
  await sh('ip', ['-n', ns('sw'), 'link', 'set', 'br0', 'up']);
  for (const h of HOSTS) await plugIn(h);
  for (const h of ['s1', 's2', 's3']) await startGlusterd(h);
  for (const h of ['s2', 's3']) await gluster('s1', ['peer', 'probe', IP[h]!]);
  const bricks = ['s1', 's2', 's3'].map((h) => `${IP[h]}:${path.join(work, h, 'brick', 'rv')}`);
  await untilOk(() => gluster('s1', ['volume', 'create', 'rv', 'replica', '3', 'arbiter', '1', ...bricks, 'force']), 'volume create', 30_000);
  for (const [k, v] of VOLUME_OPTIONS) await gluster('s1', ['volume', 'set', 'rv', k, v]);
  await gluster('s1', ['volume', 'start', 'rv']);
  for (const h of ['a', 'b'] as const) {
    const at = path.join(work, `mnt-${h}`);
    await fs.mkdir(at);
    await sh('nsenter', [`--net=/run/netns/${ns(h)}`, 'mount', '-t', 'glusterfs', '-o', `${MOUNT_OPTIONS},log-file=${path.join(work, `client-${h}.log`)}`, `${IP.s1}:/rv`, at]);
  }
}

async function tearDown(): Promise<void> {
  for (const h of ['a', 'b']) await run('umount', ['-l', path.join(work, `mnt-${h}`)]).catch(() => {});
  for (const h of [...HOSTS, 'sw'] as Host[]) await killNamespace(h);
  for (const child of children) child.kill('SIGKILL');
  if (work) rmSync(work, { recursive: true, force: true });
}

/** Every process in a host's network namespace, then the namespace: the host is gone. */
async function killNamespace(h: Host): Promise<void> {
  const pids = (await run('ip', ['netns', 'pids', ns(h)]).then((r) => r.stdout, () => '')).split('\n').filter(Boolean);
  for (const pid of pids) {
    try {
      process.kill(Number(pid), 'SIGKILL');
    } catch {
      // gone already
    }
  }
  await run('ip', ['netns', 'del', ns(h)]).catch(() => {});
}

/** The pid of the brick process (glusterfsd) serving `h`'s brick while it is online, from the volume's status (XML: the text wraps long paths). */
async function brickPid(h: string): Promise<number | null> {
  const xml = await gluster('s1', ['volume', 'status', 'rv', '--xml']);
  for (const node of xml.split('<node>').slice(1)) {
    const field = (name: string) => new RegExp(`<${name}>([^<]*)</${name}>`).exec(node)?.[1];
    if (field('hostname') !== IP[h] || !field('path')?.includes('/brick/')) continue;
    const pid = Number(field('pid'));
    return field('status') === '1' && Number.isInteger(pid) && pid > 0 ? pid : null;
  }
  return null;
}

/** Entries still to heal, summed over the bricks, or null when heal info cannot be had. */
async function pendingHeal(): Promise<number | null> {
  const info = await gluster('s1', ['volume', 'heal', 'rv', 'info'], 30_000).catch(() => null);
  if (info === null) return null;
  const counts = [...info.matchAll(/Number of entries: (\d+|-)/g)].map((m) => m[1]);
  if (counts.length < 3 || counts.includes('-')) return null;
  return counts.reduce((x, y) => x + Number(y), 0);
}

interface Appended {
  body: string;
  id?: string;
  code?: string;
  ms: number;
}

async function main(): Promise<void> {
  await setUp();
  const viaA = path.join(work, 'mnt-a', 'corpus');
  const viaB = path.join(work, 'mnt-b', 'corpus');
  await sh(process.execPath, [BIN, 'init', '--corpus', viaA, '--keys', path.join(work, 'mnt-a', 'keys')]);

  // The waiter on b (listing every 250 ms) and the pinger on a, running through everything below.
  const waiter = worker('b', 'waiter', [viaB, '250', 1000, 600_000], 660_000);
  const end = Date.now() + 60_000;
  while (!waiter.lines.some((l) => l.includes('"ready"')) && Date.now() < end) await sleep(100);
  const pinger = worker('a', 'pinger', [viaA, Number(process.env.GB_PINGS ?? 40)], 600_000);

  const writers = Array.from({ length: 8 }, (_, k) => worker(k % 2 === 0 ? 'a' : 'b', 'append-keyed', [k % 2 === 0 ? viaA : viaB, `${k % 2 === 0 ? 'a' : 'b'}${k}`, PER_WRITER], 600_000));
  const appending = () => writers.every((w) => w.lines.some((l) => l.includes('"body"')));
  for (const stop = Date.now() + 120_000; !appending() && Date.now() < stop; ) await sleep(100);
  const t0 = Date.now();
  // 1. s2's brick process dies (its host stays up: clients get a reset at once).
  const brick = await brickPid('s2');
  check(brick !== null, `s2's brick process found (${brick})`);
  if (brick) process.kill(brick, 'SIGKILL');
  await sleep(3000);
  // 2. The whole of s2: glusterd, self-heal daemon, its network: no reset, clients wait out network.ping-timeout.
  await killNamespace('s2');
  const goneAt = Date.now();
  await sleep(Number(process.env.GB_DOWN_MS ?? 10_000));
  // 3. s2 comes back: the same brick directory, the same glusterd state; glusterd starts the brick.
  await plugIn('s2');
  await startGlusterd('s2');
  const backAt = Date.now();
  await untilOk(async () => {
    if ((await brickPid('s2')) === null) throw new Error('brick not online');
  }, "s2's brick", 60_000);
  figures['s2 down (namespace gone to brick back)'] = `${((Date.now() - goneAt) / 1000).toFixed(1)} s, from ${((goneAt - t0) / 1000).toFixed(1)} s after the brick was killed`;

  const codes = await Promise.all(writers.map((w) => w.exited));
  codes.forEach((c, k) => check(c === 0, `writer ${k} exited 0 (${c})`));
  await pinger.exited;
  // Heal: until no entry is pending on any brick (bounded).
  const writersDoneAt = Date.now();
  await gluster('s1', ['volume', 'heal', 'rv']).catch(() => '');
  let healedAt: number | null = null;
  for (const stop = Date.now() + 180_000; Date.now() < stop; ) {
    if ((await pendingHeal()) === 0) {
      healedAt = Date.now();
      break;
    }
    await sleep(1000);
  }
  check(healedAt !== null, 'the volume healed (heal info: 0 entries on every brick)');
  if (healedAt) figures['time to heal (s2 back → heal info 0 on every brick; writers still appending for part of it)'] = `${((healedAt - backAt) / 1000).toFixed(1)} s, of which ${((healedAt - writersDoneAt) / 1000).toFixed(1)} s after the writers finished and \`volume heal\` was asked`;

  // From every side.
  const appended = writers.flatMap((w) => w.lines.filter((l) => l.includes('"body"')).map((l) => JSON.parse(l) as Appended));
  const retries = writers.flatMap((w) => w.lines.filter((l) => l.includes('"retry"')));
  const acked = appended.filter((a) => a.id);
  const refused = appended.filter((a) => !a.id);
  const { splitRecordFile } = await import('../../../lib/model/deposit.js');
  const sides: [string, string][] = [
    ['mount on a', viaA],
    ['mount on b', viaB],
    ['brick s1', path.join(work, 's1', 'brick', 'rv', 'corpus')],
    ['brick s2', path.join(work, 's2', 'brick', 'rv', 'corpus')],
  ];
  let fingerprint: string | null = null;
  for (const [side, dir] of sides) {
    const names = (await fs.readdir(dir)).filter((n) => /^relay-\d+$/.test(n)).sort();
    const byBody = new Map<string, string[]>();
    const prints: string[] = [];
    for (const n of names) {
      const bytes = await fs.readFile(path.join(dir, n));
      prints.push(`${n}:${bytes.toString('base64')}`);
      const body = splitRecordFile(bytes).record.toString('utf8');
      byBody.set(body, [...(byBody.get(body) ?? []), n]);
    }
    const lost = acked.filter((a) => !(byBody.get(a.body) ?? []).includes(a.id!)).length;
    const dup = [...byBody.values()].filter((ids) => ids.length > 1).length;
    const contiguous = names.join() === names.map((_, i) => `relay-${String(i + 1).padStart(4, '0')}`).join();
    check(lost === 0 && dup === 0 && contiguous, `${side}: every acknowledged append once under its id, ids contiguous (lost ${lost}, duplicated ${dup}, ${names.length} records)`);
    const print = prints.join('\n');
    if (fingerprint === null) fingerprint = print;
    else check(print === fingerprint, `${side}: byte-identical to the mount on a`);
    if (side.startsWith('brick')) {
      const v = await run(process.execPath, [BIN, 'verify', '--corpus', dir]).then((r) => ({ code: 0, out: r.stdout }), (e: { code: number; stdout: string }) => ({ code: e.code, out: e.stdout }));
      check(v.code === 0 && / 0 damaged/.test(v.out), `${side}: verify after heal (${v.out.trim()})`);
    }
  }
  const temps = await fs.readdir(path.join(viaA, '.state', 'tmp')).catch(() => ['(unreadable)']);
  check(temps.length === 0, `no temp file left (${temps.length}${temps.length ? `: ${temps.slice(0, 3).join(', ')}` : ''})`);
  check(refused.length === 0, `nothing refused (${refused.length}${refused[0] ? `: ${refused[0].code}` : ''})`);
  const lat = acked.map((a) => a.ms);
  figures[`append latency, 2 hosts × 4 writers on GlusterFS (replica 3 arbiter 1), through the fault (${acked.length} appends)`] = `p50 ${fmt(pct(lat, 50))}, p90 ${fmt(pct(lat, 90))}, max ${fmt(Math.max(...lat))}`;
  figures['lost / duplicated / refused'] = `0 / 0 / ${refused.length} by the checks above; ${retries.length} appends retried on store_unreachable (${[...new Set(retries.map((l) => /\((E[A-Z]+|Unknown[^)]*)\)/.exec(l)?.[1] ?? '?'))].join(', ') || 'none'})`;

  // The waiter on b, woken by the pinger on a, through the whole fault.
  const deadline = Date.now() + 10_000;
  const pings = pinger.lines.filter((l) => l.includes('"t"')).map((l) => JSON.parse(l) as { id: string; t: number });
  while (waiter.lines.filter((l) => l.includes('"t"')).length < pings.length && Date.now() < deadline) await sleep(100);
  const heard = new Map(waiter.lines.filter((l) => l.includes('"t"')).map((l) => JSON.parse(l) as { id: string; t: number }).map((e) => [e.id, e.t]));
  const wakes = pings.filter((p) => heard.has(p.id)).map((p) => heard.get(p.id)! - p.t);
  check(pings.length > 0 && wakes.length === pings.length, `the waiter on b was woken by every ping from a (${wakes.length} of ${pings.length})`);
  figures['cross-host wake (append on a → wait answered on b, --poll 250), through the fault'] = `p50 ${fmt(pct(wakes, 50))}, p90 ${fmt(pct(wakes, 90))}, max ${fmt(Math.max(...wakes))}, missed ${pings.length - wakes.length} of ${pings.length}`;
  waiter.child.kill('SIGTERM');
  printFigures(figures);
}

await runBed(thisBed, { skipReason: why, main, tearDown });
