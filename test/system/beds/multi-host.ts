/**
 * Several hosts on one corpus, for real: network namespaces for hosts, sshd
 * serving the corpus, sshfs mounting it on each writer host, rsync mirrors in
 * a chain, and a mount whose ssh connection is killed while writers append
 * (`MH_ONLY=drop` runs only that), and agents on two hosts racing to claim
 * the same tasks (`MH_ONLY=claims` runs only that). Prints the figures docs/scaling.md records, and exits 1 if any
 * check fails.
 *
 *   sudo npm run test:multi-host          (or P_E_RELAY_MULTIHOST=1 npm test)
 *
 * Needs root, `ip netns`, /dev/fuse, and Debian's openssh-server,
 * openssh-client, sshfs and rsync (installed here with apt-get when missing).
 * Prints "SKIP: <reason>" and exits 0 where namespaces or FUSE are not
 * allowed. Traffic stays on the namespaces' own bridge; every wait and loop
 * here is bounded.
 *
 *   srv  10.231.0.1  sshd; the corpus on its disk; the primary hub of the chain
 *   a    10.231.0.2  sshfs mount of srv; writers; mirror 1 (and an sshd for mirror 2)
 *   b    10.231.0.3  sshfs mount of srv; writers; waiters; mirror 2 (a mirror of mirror 1)
 *
 * The same file is the worker each host runs (`… multi-host.ts worker KIND …`).
 */
import { randomBytes } from 'node:crypto';
import { existsSync, rmSync } from 'node:fs';
import fs from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { performance } from 'node:perf_hooks';
import { fileURLToPath } from 'node:url';
import { BIN, bed, fmt, installPackages, namespacesAllowed, onPath, pct, printFigures, run, runBed, sleep, untilOk, type Spawned } from './bed.js';

const SELF = fileURLToPath(import.meta.url);

const WRITERS = Number(process.env.MH_WRITERS ?? 8);
const PER_WRITER = Number(process.env.MH_PER_WRITER ?? 40);
const RUNS = Number(process.env.MH_RUNS ?? 3);
const WAKES = Number(process.env.MH_WAKES ?? 20);
const MIRROR_APPENDS = Number(process.env.MH_MIRROR_APPENDS ?? 20);
/** The whole script gives up after this long. */
const DEADLINE_MS = 20 * 60_000;

// ---------------------------------------------------------------- workers --

if (process.argv[2] === 'worker') {
  await worker(process.argv[3]!, process.argv.slice(4));
  process.exit(0);
}

async function worker(kind: string, args: string[]): Promise<void> {
  const { RelayStore } = await import('../../../lib/store/store.js');
  const say = (o: object) => process.stdout.write(`${JSON.stringify(o)}\n`);
  const record = (from: string, body: string) => Buffer.from(`@p-e/x0\nkind: load\nfrom: ${from}\n\n${body}\n`);
  if (kind === 'append' || kind === 'append-keyed') {
    // One writer, as a server process is: a store with its watcher, appending one record after another.
    // append-keyed sends each under its own idempotency key and retries store_unreachable, as the CLI and the bridge do.
    const [corpus, lane, count] = [args[0]!, args[1]!, Number(args[2])];
    const { retryingLostMount } = await import('../../../lib/disk/lost-mount.js');
    const log = quietLog();
    let retries = 0;
    const retryLog = { ...log, info: (m: string) => (retries++, say({ lane, retry: m })) };
    const store = await RelayStore.prepare({ corpus, log });
    await store.open();
    setInterval(() => {}, 60_000); // a server's transport holds its process up; this loop is the whole process
    for (let i = 0; i < count; i++) {
      const bytes = record(lane, `${lane} #${i} ${randomBytes(8).toString('hex')}`);
      const t0 = performance.now();
      try {
        const r =
          kind === 'append'
            ? await store.append(bytes, { depositedBy: `writer/${lane}` })
            : await retryingLostMount(() => store.append(bytes, { depositedBy: `writer/${lane}`, idempotencyKey: `${lane}-${i}` }), retryLog);
        say({ lane, i, body: bytes.toString('utf8'), id: r.id, ms: performance.now() - t0, durability: r.durability ?? null });
      } catch (err) {
        say({ lane, i, body: bytes.toString('utf8'), code: (err as { code?: string }).code ?? 'error', message: (err as Error).message, ms: performance.now() - t0 });
      }
    }
    await store.close();
    if (retries > 0) say({ lane, retries });
  } else if (kind === 'claim') {
    // A named agent, as its stdio server is: each of the tasks claimed once, in order, as append_relay sends it.
    // The writers of every host start together: each waits for GO (a file on the orchestrator's own disk).
    const [corpus, agent, tasks, go] = [args[0]!, args[1]!, Number(args[2]), args[3]!];
    const store = await RelayStore.prepare({ corpus, log: quietLog() });
    await store.open();
    setInterval(() => {}, 60_000);
    say({ ready: agent });
    const end = Date.now() + 120_000;
    while (!existsSync(go) && Date.now() < end) await sleep(5);
    for (let task = 0; task < tasks; task++) {
      const bytes = Buffer.from(`@p-e/x0\nkind: claim\nfrom: ${agent}\nclaim: task:mh-${task}\n\n${agent} takes task ${task}\n`);
      const t0 = performance.now();
      try {
        const r = await store.append(bytes, { depositedBy: 'mcp', agent });
        say({ agent, task, id: r.id, ms: performance.now() - t0 });
      } catch (err) {
        say({ agent, task, code: (err as { code?: string }).code ?? 'error', message: (err as Error).message, ms: performance.now() - t0 });
      }
    }
    await store.close();
  } else if (kind === 'waiter') {
    // A waiter as `wait --poll MS` (or a plain `wait` when MS is "default") runs it, in a loop.
    const [corpus, poll, count, timeoutMs] = [args[0]!, args[1]!, Number(args[2]), Number(args[3])];
    const store = await RelayStore.prepare({ corpus, log: quietLog(), ...(poll === 'default' ? {} : { watch: 'poll' as const, reconcileMs: Number(poll) }) });
    await store.open();
    let mark = store.heldAfter(0).at(-1)?.meta.id ?? 'relay-0000';
    say({ ready: true, mark });
    const end = Date.now() + timeoutMs;
    let seen = 0;
    while (seen < count && Date.now() < end) {
      const result = await store.wait({ after: mark, timeoutMs: Math.min(90_000, end - Date.now()) });
      const t = Date.now();
      for (const r of result.appeared) {
        say({ id: r.id, t });
        mark = r.id;
        seen++;
      }
    }
    await store.close();
  } else if (kind === 'pinger') {
    // Appends spaced 400-900 ms apart (never in step with a poll), printing when each was acknowledged.
    const [corpus, count] = [args[0]!, Number(args[1])];
    const store = await RelayStore.prepare({ corpus, log: quietLog() });
    await store.open();
    for (let i = 0; i < count; i++) {
      await sleep(400 + Math.floor(Math.random() * 500));
      const r = await store.append(record('pinger', `ping ${i} ${randomBytes(4).toString('hex')}`), { depositedBy: 'writer/pinger' });
      say({ id: r.id, t: Date.now() });
    }
    await store.close();
  } else if (kind === 'sse') {
    // A signed GET /events on a hub, printing when each event arrived.
    const { authorizationFor } = await import('../../../lib/auth/sign.js');
    const [url, keyHex, count, timeoutMs] = [args[0]!, args[1]!, Number(args[2]), Number(args[3])];
    const controller = new AbortController();
    const timer = setTimeout(() => controller.abort(), timeoutMs);
    const res = await fetch(new URL('/events', url), { headers: { Authorization: authorizationFor('watcher', Buffer.from(keyHex, 'hex'), 'GET', Buffer.alloc(0)) }, signal: controller.signal });
    if (!res.ok || !res.body) throw new Error(`GET /events answered ${res.status}: ${await res.text()}`);
    say({ ready: true });
    let seen = 0;
    let buffered = '';
    try {
      for await (const chunk of res.body as unknown as AsyncIterable<Uint8Array>) {
        buffered += Buffer.from(chunk).toString('utf8');
        let cut: number;
        while ((cut = buffered.indexOf('\n\n')) >= 0) {
          const event = buffered.slice(0, cut);
          buffered = buffered.slice(cut + 2);
          const id = /^id: (\S+)$/m.exec(event)?.[1];
          if (id) {
            say({ id, t: Date.now() });
            if (++seen >= count) controller.abort();
          }
        }
      }
    } catch {
      // aborted: enough events, or the time ran out
    }
    clearTimeout(timer);
  } else throw new Error(`unknown worker ${kind}`);
}

function quietLog() {
  const warn = (m: string) => process.stderr.write(`p-e-relay warn: ${m}\n`);
  return { debug() {}, info() {}, warn, error: warn };
}

// ------------------------------------------------------------ orchestrator --

const tag = `pemh${process.pid % 10000}`;
const NS = { srv: `${tag}-srv`, a: `${tag}-a`, b: `${tag}-b` };
const IP = { srv: '10.231.0.1', a: '10.231.0.2', b: '10.231.0.3' };
const thisBed = bed(DEADLINE_MS);
const { check, children, sh, start } = thisBed;
const mounts: string[] = [];
let work = '';

/** argv that runs `argv` in host `ns`'s network namespace, with its own hostname. */
function inHost(host: keyof typeof NS, argv: string[]): string[] {
  return ['nsenter', `--net=/run/netns/${NS[host]}`, 'unshare', '--uts', '--', 'sh', '-c', `hostname host-${host} && exec "$@"`, 'sh', ...argv];
}

function workerArgv(host: keyof typeof NS, kind: string, args: (string | number)[]): string[] {
  return inHost(host, [process.execPath, '--import', 'tsx', SELF, 'worker', kind, ...args.map(String)]);
}

function cliArgv(host: keyof typeof NS | null, args: string[]): string[] {
  const argv = [process.execPath, BIN, ...args];
  return host === null ? argv : inHost(host, argv);
}

async function why(): Promise<string | null> {
  if (process.platform !== 'linux') return 'not Linux';
  if (process.getuid?.() !== 0) return 'needs root (network namespaces, mounts)';
  if (!existsSync('/dev/fuse')) return 'no /dev/fuse: FUSE (sshfs) is not available here';
  const missing = ['sshd', 'ssh', 'sshfs', 'rsync', 'nsenter', 'unshare', 'ip', 'fusermount3'].filter((c) => !onPath(c));
  const packages = new Set<string>();
  for (const c of missing) packages.add({ sshd: 'openssh-server', ssh: 'openssh-client', sshfs: 'sshfs', rsync: 'rsync', nsenter: 'util-linux', unshare: 'util-linux', ip: 'iproute2', fusermount3: 'fuse3' }[c]!);
  if (packages.size > 0) {
    const failed = await installPackages([...packages]);
    if (failed) return failed;
  }
  return namespacesAllowed(thisBed, tag);
}

async function setUp(): Promise<{ sshOpts: string[]; keyHex: string; keys: string }> {
  work = await fs.mkdtemp(path.join(os.tmpdir(), 'pe-multihost-'));
  for (const ns of Object.values(NS)) await sh('ip', ['netns', 'add', ns]);
  for (const ns of Object.values(NS)) await sh('ip', ['-n', ns, 'link', 'set', 'lo', 'up']);
  await sh('ip', ['-n', NS.srv, 'link', 'add', 'br0', 'type', 'bridge']);
  await sh('ip', ['-n', NS.srv, 'addr', 'add', `${IP.srv}/24`, 'dev', 'br0']);
  await sh('ip', ['-n', NS.srv, 'link', 'set', 'br0', 'up']);
  for (const host of ['a', 'b'] as const) {
    const [inner, outer] = [`${tag}${host}0`, `${tag}${host}1`];
    await sh('ip', ['link', 'add', inner, 'netns', NS[host], 'type', 'veth', 'peer', 'name', outer, 'netns', NS.srv]);
    await sh('ip', ['-n', NS[host], 'addr', 'add', `${IP[host]}/24`, 'dev', inner]);
    await sh('ip', ['-n', NS[host], 'link', 'set', inner, 'up']);
    await sh('ip', ['-n', NS.srv, 'link', 'set', outer, 'master', 'br0']);
    await sh('ip', ['-n', NS.srv, 'link', 'set', outer, 'up']);
  }
  // ssh: one client key, one host key, sshd on srv (the file server) and on a (mirror 1's host).
  const id = path.join(work, 'id');
  await sh('ssh-keygen', ['-q', '-t', 'ed25519', '-N', '', '-f', id]);
  await sh('ssh-keygen', ['-q', '-t', 'ed25519', '-N', '', '-f', path.join(work, 'hostkey')]);
  await fs.copyFile(`${id}.pub`, path.join(work, 'authorized_keys'));
  await fs.mkdir('/run/sshd', { recursive: true });
  const sftp = ['/usr/lib/openssh/sftp-server', '/usr/libexec/sftp-server'].find(existsSync) ?? 'internal-sftp';
  for (const host of ['srv', 'a'] as const) {
    const config = path.join(work, `sshd-${host}.conf`);
    await fs.writeFile(config, [`ListenAddress ${IP[host]}`, 'Port 22', `HostKey ${path.join(work, 'hostkey')}`, `AuthorizedKeysFile ${path.join(work, 'authorized_keys')}`, 'PermitRootLogin prohibit-password', 'PasswordAuthentication no', 'KbdInteractiveAuthentication no', 'UsePAM no', 'StrictModes no', `PidFile ${path.join(work, `sshd-${host}.pid`)}`, `Subsystem sftp ${sftp}`, 'LogLevel ERROR', ''].join('\n'));
    start(['nsenter', `--net=/run/netns/${NS[host]}`, '/usr/sbin/sshd', '-D', '-e', '-f', config], DEADLINE_MS);
  }
  const sshOpts = ['-i', id, '-o', 'StrictHostKeyChecking=no', '-o', 'UserKnownHostsFile=/dev/null', '-o', 'BatchMode=yes', '-o', 'LogLevel=ERROR'];
  for (const host of ['srv', 'a'] as const) await untilOk(() => sh('nsenter', [`--net=/run/netns/${NS.b}`, 'ssh', ...sshOpts, `root@${IP[host]}`, 'true'], 10_000), `sshd on ${host}`, 20_000);
  // The file server's disk, and each writer host's sshfs mount of it.
  await fs.mkdir(path.join(work, 'srv'));
  for (const host of ['a', 'b'] as const) await mount(host, path.join(work, `mnt-${host}`), ['dir_cache=no'], sshOpts);
  const keys = path.join(work, 'keys');
  const { addKey, readKey } = await import('../../../lib/auth/keys.js');
  await fs.mkdir(keys);
  await addKey(keys, 'watcher');
  const keyHex = (await readKey(keys, 'watcher'))!.toString('hex');
  return { sshOpts, keyHex, keys };
}

async function mount(host: 'a' | 'b', at: string, options: string[], sshOpts: string[]): Promise<Spawned> {
  await fs.mkdir(at, { recursive: true });
  const o = [...options, `IdentityFile=${sshOpts[1]}`, 'StrictHostKeyChecking=no', 'UserKnownHostsFile=/dev/null', 'BatchMode=yes', 'LogLevel=ERROR'];
  const sshfs = start(['nsenter', `--net=/run/netns/${NS[host]}`, 'sshfs', '-f', `root@${IP.srv}:${path.join(work, 'srv')}`, at, '-o', o.join(',')], DEADLINE_MS);
  mounts.push(at);
  await untilOk(async () => {
    if ((await fs.statfs(at)).type !== 0x65735546) throw new Error('not mounted yet');
  }, `sshfs on ${host}`, 20_000);
  return sshfs;
}

/**
 * The ssh under the dropping mount: sshfs double-forks it (its parent is
 * init), so it is found by its command line, which only that mount's ssh
 * has (ServerAliveCountMax=2).
 */
async function droppingSsh(): Promise<number[]> {
  const out: number[] = [];
  for (const pid of (await fs.readdir('/proc')).filter((n) => /^\d+$/.test(n))) {
    const argv = (await fs.readFile(`/proc/${pid}/cmdline`, 'utf8').catch(() => '')).split('\0');
    if (path.basename(argv[0] ?? '') === 'ssh' && argv.some((a) => a.includes('ServerAliveCountMax=2'))) out.push(Number(pid));
  }
  return out;
}

/**
 * A mount that drops mid-append: 4 writers on host a over an sshfs mount
 * with `reconnect`, 4 on host b over its own, and the ssh connection under
 * a's mount killed KILLS times, KILL_GAP_MS apart, while they append. Every
 * append is keyed and retried on store_unreachable, as the CLI and the
 * bridge do.
 */
async function droppingMountRun(sshOpts: string[], viaB: (name: string) => string, figures: Record<string, string>): Promise<void> {
  const at = path.join(work, 'mnt-a-drop');
  await mount('a', at, ['dir_cache=no', 'reconnect', 'ServerAliveInterval=2', 'ServerAliveCountMax=2'], sshOpts);
  const kills = Number(process.env.MH_KILLS ?? 5);
  const gap = Number(process.env.MH_KILL_GAP_MS ?? 1200);
  const lanes = Array.from({ length: WRITERS }, (_, k) => (k % 2 === 0 ? { host: 'a' as const, corpus: (n: string) => path.join(at, n) } : { host: 'b' as const, corpus: viaB }));
  const during = (count: { killed: number }) => async (writers: Spawned[]) => {
    // Once every writer is appending: a writer that starts while the mount is down finds no corpus, a different fault.
    const end = Date.now() + 120_000;
    while (!writers.every((w) => w.lines.some((l) => l.includes('"body"'))) && Date.now() < end) await sleep(100);
    await sleep(200);
    for (let k = 0; k < kills; k++) {
      // sshfs reconnects on the next request after a drop: wait (within the gap) for the new ssh, then kill it.
      const round = Date.now() + gap;
      let pids: number[] = [];
      while ((pids = await droppingSsh()).length === 0 && Date.now() < round) await sleep(50);
      for (const pid of pids) {
        try {
          process.kill(pid, 'SIGKILL');
          count.killed++;
        } catch {
          // gone already
        }
      }
      await sleep(Math.max(0, round - Date.now()));
    }
  };
  const what = `ssh under host a's mount killed ${kills} times in ${((kills * gap) / 1000).toFixed(1)} s, ${WRITERS} writers`;
  // Unkeyed, as an agent appends without a key: no retry is safe, so the answer is the refusal, and it must say so.
  const plainKills = { killed: 0 };
  const perWriter = Number(process.env.MH_DROP_PER_WRITER ?? 120); // enough to outlast the kills
  const plain = await writersRun(`${what}, unkeyed`, 'drop-plain', lanes, { kind: 'append', perWriter, during: during(plainKills), refusable: 'store_unreachable' });
  check(plainKills.killed >= kills, `the ssh connection under host a's mount was killed ${plainKills.killed} times (unkeyed run)`);
  figures[`${what}, unkeyed appends`] = `lost ${plain.lost}, duplicated ${plain.duplicated}, refused ${plain.refused} (all store_unreachable), ${plain.storedThoughRefused} of those stored all the same, of ${plain.appended.length}`;
  // Keyed and retried, as the CLI and the bridge do.
  const keyedKills = { killed: 0 };
  const keyed = await writersRun(`${what}, keyed and retried`, 'drop-keyed', lanes, { kind: 'append-keyed', perWriter, during: during(keyedKills) });
  check(keyedKills.killed >= kills, `the ssh connection under host a's mount was killed ${keyedKills.killed} times (keyed run)`);
  figures[`${what}, keyed appends retried on store_unreachable`] = `lost ${keyed.lost}, duplicated ${keyed.duplicated}, refused ${keyed.refused}, ${keyed.retries} retries (errno seen: ${[...new Set(keyed.errnos)].join(', ') || 'none'}), of ${keyed.appended.length}`;
}

interface Claimed {
  agent: string;
  task: number;
  id?: string;
  code?: string;
  message?: string;
  ms: number;
}

/**
 * Claims across hosts (spec §8e): MH_CLAIMERS writers on host a and as many
 * on host b, each a named agent with its own store over its host's sshfs
 * mount, claim the same MH_CLAIM_TASKS tasks in the same order, all starting
 * at once; MH_CLAIM_RUNS runs, each on a fresh corpus, then MH_CLAIM_STALE_RUNS
 * that begin at the lock a holder on a crashed host left. Then, on the file
 * server's own disk, each stored claim is judged against the claims stored
 * before it: one stored while another agent's claim of its task was live
 * is a task granted twice.
 */
async function claimsRun(viaMount: (host: 'a' | 'b') => (name: string) => string, figures: Record<string, string>): Promise<void> {
  const perHost = Number(process.env.MH_CLAIMERS ?? 4);
  const tasks = Number(process.env.MH_CLAIM_TASKS ?? 100);
  const runs = Number(process.env.MH_CLAIM_RUNS ?? 3);
  const staleRuns = Number(process.env.MH_CLAIM_STALE_RUNS ?? 3);
  const { splitRecordFile } = await import('../../../lib/model/deposit.js');
  const { workClaimOf } = await import('../../../lib/model/work-claims.js');
  const blank = () => ({ twice: 0, ungranted: 0, grantedAnswers: 0, refused: 0, otherRefusals: 0, stored: 0, answers: [] as Claimed[] });
  const tallies = { fresh: blank(), stale: blank() };
  for (let r = 1; r <= runs + staleRuns; r++) {
    // The later runs begin at the lock a crashed holder on a third host left: every writer finds it stale at once.
    const stale = r > runs;
    const label = `claims, two hosts × ${perHost} agents over sshfs, same ${tasks} tasks, ${stale ? `after a crashed holder, run ${r - runs}/${staleRuns}` : `run ${r}/${runs}`}`;
    const name = `claims-${r}`;
    const served = await initCorpus(name);
    const go = path.join(work, `go-${name}`);
    const procs = (['a', 'b'] as const).flatMap((host) => Array.from({ length: perHost }, (_, k) => start(workerArgv(host, 'claim', [viaMount(host)(name), `agent-${host}${k}`, tasks, go]), 300_000)));
    for (const p of procs) await p.nextLine((l) => l.includes('"ready"'), 120_000);
    if (stale) {
      const lock = path.join(served, '.state', '.work-claims.lock');
      await fs.writeFile(lock, 'host-gone 0badb007 4242\n', { mode: 0o600 });
      const past = new Date(Date.now() - 60_000);
      await fs.utimes(lock, past, past);
    }
    await fs.writeFile(go, '');
    const codes = await Promise.all(procs.map((p) => p.exited));
    codes.forEach((code, k) => check(code === 0, `${label}: writer ${k} exited 0${code === 0 ? '' : ` (${code}; ${procs[k]!.stderr().slice(-400)})`}`));
    const answers = procs.flatMap((p) => p.lines.filter((l) => l.startsWith('{') && l.includes('"task"')).map((l) => JSON.parse(l) as Claimed));
    const tally = stale ? tallies.stale : tallies.fresh;
    tally.answers.push(...answers);
    check(answers.length === procs.length * tasks, `${label}: every writer answered each of its ${tasks} claims (${answers.length})`);
    const other = answers.filter((a) => !a.id && a.code !== 'claimed');
    check(other.length === 0, `${label}: every refusal is claimed (${other.length} others${other.length ? `: ${other[0]!.code} ${other[0]!.message}` : ''})`);
    // The serving side: every claim stored, in id order, with its holder and life.
    const stored: { id: string; n: number; holder: string; task: string; from: number; until: number }[] = [];
    for (const n of (await fs.readdir(served)).filter((x) => /^relay-\d+$/.test(x)).sort()) {
      const { deposit, record } = splitRecordFile(await fs.readFile(path.join(served, n)));
      const text = record.toString('utf8');
      if (!/^kind: claim$/m.test(text)) continue;
      const claim = workClaimOf(text);
      const from = Date.parse(deposit.depositedAt);
      for (const t of claim.targets) if (t.type === 'task') stored.push({ id: n, n: Number(n.slice(6)), holder: deposit.agent ?? '?', task: t.id, from, until: from + claim.lifeMs });
    }
    const twice = stored.filter((c) => stored.some((e) => e.task === c.task && e.n < c.n && e.holder !== c.holder && e.until > c.from)).length;
    const tasksGranted = new Set(stored.map((c) => c.task));
    const granted = answers.filter((a) => a.id);
    const absent = granted.filter((a) => !stored.some((c) => c.id === a.id && c.holder === a.agent && c.task === `mh-${a.task}`)).length;
    check(twice === 0, `${label}: no claim stored while another agent's claim of its task was live (granted twice: ${twice})`);
    check(tasksGranted.size === tasks, `${label}: every task granted (${tasksGranted.size} of ${tasks})`);
    check(absent === 0 && granted.length === stored.length, `${label}: every granted answer is a claim on the server's disk, and no other is (${granted.length} granted, ${stored.length} stored, ${absent} granted but absent)`);
    const verify = await run(process.execPath, [BIN, 'verify', '--corpus', served]).then((x) => ({ code: 0, out: x.stdout }), (e: { code: number; stdout: string }) => ({ code: e.code, out: e.stdout }));
    check(verify.code === 0 && / 0 damaged, 0 stray/.test(verify.out), `${label}: verify is clean on the server (${verify.out.trim()})`);
    tally.twice += twice;
    tally.ungranted += tasks - tasksGranted.size;
    tally.grantedAnswers += granted.length;
    tally.refused += answers.length - granted.length;
    tally.otherRefusals += other.length;
    tally.stored += stored.length;
  }
  const ms = (xs: Claimed[]) => `p50 ${fmt(pct(xs.map((a) => a.ms), 50))}, p90 ${fmt(pct(xs.map((a) => a.ms), 90))}`;
  for (const [kind, tally] of Object.entries(tallies)) {
    const count = kind === 'stale' ? staleRuns : runs;
    if (count === 0) continue;
    const what = `claims, two hosts × ${perHost} agents over sshfs racing for the same ${tasks} tasks, ${count} runs${kind === 'stale' ? ' begun at a crashed holder\'s lock' : ''}`;
    figures[what] = `granted twice ${tally.twice}, never granted ${tally.ungranted}, granted ${tally.grantedAnswers} (stored ${tally.stored}), refused claimed ${tally.refused - tally.otherRefusals}, other refusals ${tally.otherRefusals}, of ${tally.answers.length}`;
    figures[`${what}: claim latency`] = `granted ${ms(tally.answers.filter((a) => a.id))}; refused ${ms(tally.answers.filter((a) => !a.id))}`;
  }
}

async function tearDown(): Promise<void> {
  for (const at of mounts) await run('fusermount3', ['-u', '-z', at]).catch(() => {});
  for (const child of children) child.kill('SIGKILL');
  for (const ns of Object.values(NS)) await run('ip', ['netns', 'del', ns]).catch(() => {});
  if (work) rmSync(work, { recursive: true, force: true });
}

interface Appended {
  lane: string;
  i: number;
  body: string;
  id?: string;
  code?: string;
  message?: string;
  ms: number;
  durability?: string | null;
}

/** A record in a file, for `p-e-relay append FILE`. */
async function recordFile(): Promise<string> {
  const file = path.join(work, `record-${randomBytes(4).toString('hex')}`);
  await fs.writeFile(file, `@p-e/x0\nkind: note\n\nfrom the CLI\n`);
  return file;
}

async function initCorpus(name: string): Promise<string> {
  const corpus = path.join(work, 'srv', name);
  await sh(process.execPath, [BIN, 'init', '--corpus', corpus, '--keys', path.join(work, 'srv', `${name}-keys`)]);
  return corpus;
}

/** `lanes` writers at once (host and corpus path each), then the checks on the serving side. */
interface RunOptions {
  /** `append-keyed`: each append under its own key, store_unreachable retried (as the CLI and the bridge do). */
  kind?: 'append' | 'append-keyed';
  perWriter?: number;
  /** A fault to inject while the writers run; resolves when it is over. */
  during?: (writers: Spawned[]) => Promise<void>;
  /** Refusals with this code are the expected answer (a lost mount, unkeyed: no retry is safe), not a failure. */
  refusable?: string;
}

async function writersRun(label: string, name: string, lanes: { host: 'a' | 'b' | null; corpus: (name: string) => string }[], opts: RunOptions = {}): Promise<{ appended: Appended[]; lost: number; duplicated: number; refused: number; retries: number; storedThoughRefused: number; errnos: string[] }> {
  const served = await initCorpus(name);
  const [kind, perWriter] = [opts.kind ?? 'append', opts.perWriter ?? PER_WRITER];
  const procs = lanes.map((lane, k) => {
    const corpus = lane.corpus(name);
    const argv = lane.host === null ? [process.execPath, '--import', 'tsx', SELF, 'worker', kind, corpus, `w${k}`, String(perWriter)] : workerArgv(lane.host, kind, [corpus, `${lane.host}${k}`, perWriter]);
    return start(argv, 300_000);
  });
  if (opts.during) await opts.during(procs);
  const codes = await Promise.all(procs.map((p) => p.exited));
  const appended = procs.flatMap((p) => p.lines.filter((l) => l.startsWith('{') && l.includes('"body"')).map((l) => JSON.parse(l) as Appended));
  const retries = procs.flatMap((p) => p.lines.filter((l) => l.includes('"retries"')).map((l) => (JSON.parse(l) as { retries: number }).retries)).reduce((x, y) => x + y, 0);
  codes.forEach((code, k) => check(code === 0, `${label}: writer ${k} exited 0${code === 0 ? '' : ` (${code}; ${procs[k]!.stderr().slice(-400)})`}`));
  // The serving side: what is on the file server's own disk.
  const { splitRecordFile } = await import('../../../lib/model/deposit.js');
  const names = (await fs.readdir(served)).filter((n) => /^relay-\d+$/.test(n)).sort();
  const byBody = new Map<string, string[]>();
  for (const n of names) {
    const body = splitRecordFile(await fs.readFile(path.join(served, n))).record.toString('utf8');
    byBody.set(body, [...(byBody.get(body) ?? []), n]);
  }
  const acked = appended.filter((a) => a.id);
  const refused = appended.filter((a) => !a.id);
  const lost = acked.filter((a) => !(byBody.get(a.body) ?? []).includes(a.id!)).length;
  const duplicated = [...byBody.values()].filter((ids) => ids.length > 1).length;
  const expectedIds = Array.from({ length: names.length }, (_, i) => `relay-${String(i + 1).padStart(4, '0')}`);
  check(appended.length === lanes.length * perWriter, `${label}: every writer answered each of its ${perWriter} appends (${appended.length})`);
  check(lost === 0, `${label}: every acknowledged append is on the server's disk under its id (lost ${lost})`);
  check(duplicated === 0, `${label}: no body is stored twice (duplicated ${duplicated})`);
  if (opts.refusable) {
    const other = refused.filter((a) => a.code !== opts.refusable);
    check(other.length === 0, `${label}: every refusal is ${opts.refusable} (${refused.length} refused${other.length ? `; ${other[0]!.code}: ${other[0]!.message}` : ''})`);
    check(names.join() === expectedIds.join(), `${label}: ids contiguous from relay-0001 (${names.length} files for ${acked.length} acknowledged: ${names.length - acked.length} refused appends were stored all the same)`);
  } else {
    check(refused.length === 0, `${label}: nothing refused (${refused.length}${refused.length ? `: ${refused[0]!.code} ${refused[0]!.message}` : ''})`);
    check(names.length === acked.length && names.join() === expectedIds.join(), `${label}: ids contiguous from relay-0001 (${names.length} files for ${acked.length} acknowledged)`);
  }
  const temps = await fs.readdir(path.join(served, '.state', 'tmp')).catch(() => []);
  check(temps.length === 0, `${label}: no temp file left (${temps.length}${temps.length ? `: ${temps.slice(0, 3).join(', ')}` : ''})`);
  const verify = await run(process.execPath, [BIN, 'verify', '--corpus', served]).then((r) => ({ code: 0, out: r.stdout }), (e: { code: number; stdout: string }) => ({ code: e.code, out: e.stdout }));
  check(verify.code === 0 && / 0 damaged, 0 stray/.test(verify.out), `${label}: verify is clean on the server (${verify.out.trim()})`);
  return { appended, lost, duplicated, refused: refused.length, retries, storedThoughRefused: names.length - acked.length, errnos: procs.flatMap((p) => p.lines.filter((l) => l.includes('"retry"')).map((l) => /\((E[A-Z]+|Unknown[^)]*)\)/.exec(l)?.[1] ?? '?')) };
}

async function main(): Promise<void> {
  const { sshOpts, keyHex, keys } = await setUp();
  const viaMount = (host: 'a' | 'b') => (name: string) => path.join(work, `mnt-${host}`, name);
  const local = (name: string) => path.join(work, 'srv', name);
  const figures: Record<string, string> = {};
  const load = () => os.loadavg()[0]!.toFixed(1);
  if (process.env.MH_ONLY === 'drop') {
    await droppingMountRun(sshOpts, viaMount('b'), figures);
    return printFigures(figures, load());
  }
  if (process.env.MH_ONLY === 'claims') {
    await claimsRun(viaMount, figures);
    return printFigures(figures, load());
  }

  // -- a writer refuses a mount that caches listings, and says why; sshfs appends say they are not power-cut safe
  {
    const cachedAt = path.join(work, 'mnt-a-cached');
    await mount('a', cachedAt, [], sshOpts);
    await initCorpus('refusal');
    const refused = await run(process.execPath, [BIN, 'append', '--corpus', path.join(cachedAt, 'refusal'), await recordFile()], { timeout: 60_000 }).then(() => null, (e: { stderr: string }) => e.stderr);
    check(refused !== null && /dir_cache=no/.test(refused), `a writer on an sshfs mount without dir_cache=no refuses, naming the option (${(refused ?? 'it stored the record').trim().split('\n').at(-1)})`);
  }

  // -- writers: the same 8 writers on one host, then split over two hosts
  const localRun = await writersRun('local disk, 8 writers on the file server', 'local', Array.from({ length: WRITERS }, () => ({ host: null, corpus: local })));
  const oneHost = await writersRun(`one host, ${WRITERS} writers over sshfs`, 'onehost', Array.from({ length: WRITERS }, () => ({ host: 'a' as const, corpus: viaMount('a') })));
  const honest = oneHost.appended.find((a) => a.id)?.durability ?? '';
  check(/sshfs cannot fsync a directory/.test(honest), `an append over sshfs says its name is not yet power-cut safe (${honest.slice(0, 60)}…)`);
  const twoHost: Appended[] = [];
  const tally = { lost: 0, duplicated: 0, refused: 0 };
  for (let r = 1; r <= RUNS; r++) {
    const res = await writersRun(`two hosts × ${WRITERS / 2} writers over sshfs, run ${r}/${RUNS}`, `twohost-${r}`, Array.from({ length: WRITERS }, (_, k) => (k % 2 === 0 ? { host: 'a' as const, corpus: viaMount('a') } : { host: 'b' as const, corpus: viaMount('b') })));
    twoHost.push(...res.appended);
    tally.lost += res.lost;
    tally.duplicated += res.duplicated;
    tally.refused += res.refused;
  }
  const lat = (xs: Appended[]) => `p50 ${fmt(pct(xs.filter((a) => a.id).map((a) => a.ms), 50))}, p90 ${fmt(pct(xs.filter((a) => a.id).map((a) => a.ms), 90))}`;
  figures['append latency, local disk, 8 writers'] = lat(localRun.appended);
  figures[`append latency, one host × ${WRITERS} writers over sshfs`] = lat(oneHost.appended);
  figures[`append latency, two hosts × ${WRITERS / 2} writers over sshfs (${RUNS} runs)`] = lat(twoHost);
  figures[`two hosts × ${WRITERS / 2} writers, ${RUNS} runs of ${WRITERS * PER_WRITER}`] = `lost ${tally.lost}, duplicated ${tally.duplicated}, refused ${tally.refused}`;

  await droppingMountRun(sshOpts, viaMount('b'), figures);
  await claimsRun(viaMount, figures);

  // -- cross-host wake: a waiter on b, appends on a
  for (const poll of ['250', 'default']) {
    const name = `wake-${poll}`;
    await initCorpus(name);
    const waiter = start(workerArgv('b', 'waiter', [viaMount('b')(name), poll, WAKES, 120_000]), 180_000);
    await waiter.nextLine((l) => l.includes('"ready"'), 60_000);
    const pinger = start(workerArgv('a', 'pinger', [viaMount('a')(name), WAKES]), 180_000);
    await pinger.exited;
    const acked = pinger.lines.filter((l) => l.startsWith('{')).map((l) => JSON.parse(l) as { id: string; t: number });
    const deadline = Date.now() + 10_000;
    while (waiter.lines.filter((l) => l.includes('"t"')).length < acked.length && Date.now() < deadline) await sleep(100);
    waiter.child.kill('SIGTERM');
    const heard = new Map(waiter.lines.filter((l) => l.includes('"t"')).map((l) => JSON.parse(l) as { id: string; t: number }).map((e) => [e.id, e.t]));
    const wakes = acked.filter((a) => heard.has(a.id)).map((a) => heard.get(a.id)! - a.t);
    const missed = acked.length - wakes.length;
    const label = poll === 'default' ? 'no --poll (a shared corpus is listed every 1000 ms)' : `--poll ${poll}`;
    figures[`cross-host wake, ${label}, dir_cache=no`] = `p50 ${fmt(pct(wakes, 50))}, p90 ${fmt(pct(wakes, 90))}, missed ${missed} of ${acked.length}`;
    check(acked.length === WAKES && missed === 0, `cross-host wake (${label}): every one of ${WAKES} appends on host a woke the waiter on host b (missed ${missed})`);
  }
  {
    // The CLI itself: `wait --poll 250` on b, woken by an append on a.
    const name = 'wake-cli';
    await initCorpus(name);
    const waiting = start(cliArgv('b', ['wait', '--poll', '250', '--after', 'relay-0000', '--timeout', '60000', '--corpus', viaMount('b')(name)]), 90_000);
    await sleep(1500);
    await run('nsenter', [`--net=/run/netns/${NS.a}`, process.execPath, BIN, 'append', '--corpus', viaMount('a')(name), await recordFile()], { timeout: 60_000 }).catch(() => {});
    const code = await waiting.exited;
    check(code === 0 && waiting.lines.some((l) => l.includes('relay-0001')), `\`p-e-relay wait --poll 250\` on host b is woken by \`append\` on host a (exit ${code})`);
  }

  // -- the mirror chain: primary on srv → mirror 1 on a → mirror 2 on b, each pulled every 1 s
  {
    const primary = await initCorpus('primary');
    const m1 = path.join(work, 'host-a-disk', 'mirror1');
    const m2 = path.join(work, 'host-b-disk', 'mirror2');
    // One ssh connection per mirror, kept open between runs (the recipe in docs/scaling.md).
    const rsh = (host: string) => ['--rsh', ['ssh', ...sshOpts, '-o', 'ControlMaster=auto', '-o', `ControlPath=${path.join(work, `cm-${host}-%C`)}`, '-o', 'ControlPersist=120'].join(' ')];
    const mirrorOnce = (host: 'a' | 'b', src: string, corpus: string) => run('nsenter', [`--net=/run/netns/${NS[host]}`, process.execPath, BIN, 'mirror', ...rsh(host), src, '--corpus', corpus], { timeout: 60_000 });
    await mirrorOnce('a', `root@${IP.srv}:${primary}`, m1);
    await mirrorOnce('b', `root@${IP.a}:${m1}`, m2);
    const hubs = [
      start(cliArgv('a', ['serve', '--http', '--read-only', '--port', '0', '--corpus', m1, '--keys', keys]), DEADLINE_MS),
      start(cliArgv('b', ['serve', '--http', '--read-only', '--port', '0', '--corpus', m2, '--keys', keys]), DEADLINE_MS),
    ];
    const urls: string[] = [];
    for (const hub of hubs) {
      const end = Date.now() + 60_000;
      let url: string | undefined;
      while (!(url = /http:\/\/[0-9.:]+/.exec(hub.stderr())?.[0]) && Date.now() < end) await sleep(100);
      if (!url) throw new Error(`a mirror hub did not start: ${hub.stderr()}`);
      urls.push(url);
    }
    const listeners = [start(workerArgv('a', 'sse', [urls[0]!, keyHex, MIRROR_APPENDS, 180_000]), 240_000), start(workerArgv('b', 'sse', [urls[1]!, keyHex, MIRROR_APPENDS, 180_000]), 240_000)];
    for (const l of listeners) await l.nextLine((line) => line.includes('"ready"'), 60_000);
    // Each mirror pulls on a 1 s schedule (start to start): `mirror --every 1000`.
    const loops = [
      start(cliArgv('a', ['mirror', '--every', '1000', ...rsh('a'), `root@${IP.srv}:${primary}`, '--corpus', m1]), 300_000),
      start(cliArgv('b', ['mirror', '--every', '1000', ...rsh('b'), `root@${IP.a}:${m1}`, '--corpus', m2]), 300_000),
    ];
    const { RelayStore } = await import('../../../lib/store/store.js');
    const writer = await RelayStore.prepare({ corpus: primary, watch: 'none' });
    const acked = new Map<string, number>();
    for (let i = 0; i < MIRROR_APPENDS; i++) {
      await sleep(300 + Math.floor(Math.random() * 700));
      const r = await writer.append(Buffer.from(`@p-e/x0\nkind: load\n\nmirror ${i}\n`), { depositedBy: 'writer/primary' });
      acked.set(r.id, Date.now());
    }
    await writer.close();
    await Promise.all(listeners.map((l) => l.exited));
    for (const loop of loops) loop.child.kill('SIGTERM');
    await Promise.all(loops.map((l) => l.exited));
    for (const hub of hubs) hub.child.kill('SIGTERM');
    for (const [k, l] of listeners.entries()) {
      const heard = new Map(l.lines.filter((x) => x.includes('"t"')).map((x) => JSON.parse(x) as { id: string; t: number }).map((e) => [e.id, e.t]));
      const lags = [...acked].filter(([id]) => heard.has(id)).map(([id, t]) => heard.get(id)! - t);
      const missed = acked.size - lags.length;
      const label = k === 0 ? 'mirror lag, primary → mirror 1 (1 s schedule), append → SSE event' : 'mirror lag, primary → mirror 1 → mirror 2 (1 s schedules), append → SSE event';
      figures[label] = `p50 ${fmt(pct(lags, 50))}, p90 ${fmt(pct(lags, 90))}, missed ${missed} of ${acked.size}`;
      check(missed === 0, `${label}: every append arrived as an event (missed ${missed})`);
    }
    const fingerprint = async (dir: string) => {
      const out: string[] = [];
      for (const n of (await fs.readdir(dir)).filter((x) => /^relay-\d+$/.test(x)).sort()) out.push(`${n}:${(await fs.readFile(path.join(dir, n))).toString('base64')}`);
      return out.join('\n');
    };
    const [fp, f1, f2] = await Promise.all([fingerprint(primary), fingerprint(m1), fingerprint(m2)]);
    check(fp === f1 && f1 === f2, 'the primary, mirror 1 and mirror 2 hold byte-identical records');
  }

  printFigures(figures, load());
}

if (process.argv[2] !== 'worker') await runBed(thisBed, { skipReason: why, main, tearDown });
