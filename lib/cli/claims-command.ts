/**
 * `p-e-relay claims`: who holds what (spec §8e), the same store function
 * GET /claims calls; `claims release ID` ends a claim as the operator, a
 * kind: release record deposited by cli/<user>. `p-e-relay guard`: the git
 * pre-commit hook that refuses a commit staging a path under another
 * agent's live path: claim, from the corpus or from a hub's GET /claims.
 */
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { workClaimsText } from '../doors/render.js';
import { RelayError } from '../errors.js';
import { checkAgentName } from '../model/agent-name.js';
import { pathUnder } from '../model/work-claims.js';
import type { LiveWorkClaim } from '../store/store.js';
import { EXIT_OK, EXIT_REFUSED, localUser, stringOption, UsageError, writeLine, type Command, type CommandContext } from './command.js';
import { withStore } from './store-commands.js';

export const claimsCommand: Command = {
  help: `Usage: p-e-relay claims [--json]
       p-e-relay claims release ID

Prints every live work claim of this corpus, oldest first, one line each:
its id, its holder, when it lapses, and its targets (task:ID, path:PATTERN).
An agent claims with a record "kind: claim" whose claim: header names the
targets (for: its life, 10s to 24h, 1h by default), and ends it with
"kind: release" or "kind: done" (done closes its tasks for good), parent:
the claim's id.

  --json   the same as JSON: {"claims": [{id, holder, targets, depositedAt,
           lapsesAt}]}, as GET /claims answers it

release ID ends the claim ID as the operator, whoever holds it (a holder
that crashed, say): it stores "kind: release, parent: ID" deposited by
cli/<you> and prints its id.`,
  options: { json: { type: 'boolean' } },
  allowPositionals: true,
  async run(ctx) {
    if (ctx.positionals[0] === 'release') return release(ctx);
    if (ctx.positionals.length > 0) throw new UsageError(`claims takes no arguments but "release ID"; got "${ctx.positionals[0]}".`);
    const claims = await withStore(ctx, (store) => store.workClaims());
    writeLine(ctx.stdout, ctx.values.json === true ? JSON.stringify({ claims }) : workClaimsText(claims));
    return EXIT_OK;
  },
};

async function release(ctx: CommandContext): Promise<number> {
  if (ctx.positionals.length !== 2) throw new UsageError('claims release takes one claim id: p-e-relay claims release relay-0042.');
  const id = ctx.positionals[1]!;
  const user = localUser(ctx.env);
  const bytes = Buffer.from(`@p-e/x0\nkind: release\nparent: ${id}\n\nReleased by the operator ${user}.\n`, 'utf8');
  const result = await withStore(ctx, (store) => {
    // Checked here, not left to the record: an id is written into its bytes, so a line break would add a header of its own.
    if (store.shape.parseRecordId(id) === null) throw new UsageError(`${JSON.stringify(id.slice(0, 60))} is not a record id of this corpus; pass the claim's id (e.g. ${store.shape.example}), as p-e-relay claims lists it.`);
    return store.append(bytes, { depositedBy: `cli/${user}` });
  });
  writeLine(ctx.stdout, result.id);
  return EXIT_OK;
}

export const guardCommand: Command = {
  help: `Usage: p-e-relay guard --agent NAME [--corpus DIR | --url HUB]

A git pre-commit hook: refuses the commit (exit 1) when it stages a path
under another agent's live path: claim, naming the path, the holder, the
pattern and when the claim lapses; exits 0 otherwise. NAME's own claims
never stop it. Run it in the working repository; the paths git stages
(added, changed or deleted; a rename at both its old and new path) are
compared with each claim's pattern.

  --agent NAME   the agent committing (its claims do not count)
  --url HUB      read the claims from a hub's GET /claims instead of a corpus

Install it once per working repository:
  printf '#!/bin/sh\\nexec p-e-relay guard --agent NAME --corpus DIR\\n' > .git/hooks/pre-commit
  chmod +x .git/hooks/pre-commit
A person bypasses it as git allows: git commit --no-verify. When it cannot
read the claims (no corpus there, the hub unreachable) it refuses the commit
too, saying why: a guard that cannot look lets nothing through unseen.`,
  options: { agent: { type: 'string' }, url: { type: 'string' } },
  async run(ctx) {
    const given = stringOption(ctx, 'agent') ?? ctx.env.P_E_RELAY_AGENT;
    if (given === undefined) throw new UsageError('guard needs --agent NAME: the agent whose commit this is (its own claims do not stop it).');
    const agent = checkAgentName(given, '--agent');
    const url = stringOption(ctx, 'url');
    const [staged, claims] = await Promise.all([stagedPaths(), url === undefined ? withStore(ctx, (store) => store.workClaims()) : claimsFromHub(url)]);
    const blocked: string[] = [];
    for (const path of staged) {
      for (const claim of claims) {
        if (claim.holder === agent) continue;
        const pattern = claim.targets.find((t) => t.startsWith('path:') && pathUnder(t.slice(5), path));
        if (pattern) blocked.push(`${path} is under ${pattern} held by ${claim.holder} (${claim.id}) until ${claim.lapsesAt}`);
      }
    }
    if (blocked.length === 0) return EXIT_OK;
    writeLine(ctx.stderr, `p-e-relay guard: this commit stages ${blocked.length === 1 ? 'a path' : 'paths'} another agent has claimed:\n  ${blocked.join('\n  ')}\n` +
      `Leave those paths out (git restore --staged PATH), wait for the claim to end, or ask its holder. git commit --no-verify skips this check.`);
    return EXIT_REFUSED;
  },
};

async function stagedPaths(): Promise<string[]> {
  try {
    // --no-renames: a rename is its deletion and its addition, so moving a file out of a claimed directory is seen at its old path too.
    const { stdout } = await promisify(execFile)('git', ['diff', '--cached', '--name-only', '-z', '--no-renames', '--diff-filter=ACDMT'], { maxBuffer: 64 * 1024 * 1024 });
    return stdout.split('\0').filter((p) => p !== '');
  } catch (err) {
    throw new RelayError('internal', `guard could not list the staged paths with git (${(err as Error).message.split('\n')[0]}); run it inside a git working repository.`);
  }
}

async function claimsFromHub(hub: string): Promise<LiveWorkClaim[]> {
  const url = new URL('/claims', hub);
  let response: Response;
  try {
    response = await fetch(url, { headers: { accept: 'application/json' }, signal: AbortSignal.timeout(10_000) });
  } catch (err) {
    throw new RelayError('hub_unreachable', `could not reach ${url.href} (${(err as Error).message}); check --url, or pass --corpus DIR on the hub's host.`);
  }
  if (!response.ok) throw new RelayError('hub_error', `${url.href} answered ${response.status}: ${(await response.text()).slice(0, 200)}`);
  return ((await response.json()) as { claims: LiveWorkClaim[] }).claims;
}
