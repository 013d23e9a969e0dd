/**
 * `keys add|list|revoke` manage keys/AGENT.key for the HTTP hub (a running
 * hub sees the change without a restart); `sign` prints the Authorization
 * header for a body, so curl users can sign without writing HMAC code.
 * No command here ever prints a key.
 */
import fs from 'node:fs/promises';
import path from 'node:path';
import { RelayError } from '../errors.js';
import { addKey, listKeys, readKey, revokeKey } from '../auth/keys.js';
import { silentLogger } from '../log.js';
import { Roster } from '../store/store.js';
import { corpusPaths } from '../disk/paths.js';
import { authorizationFor } from '../auth/sign.js';
import { EXIT_OK, UsageError, readAll, stringOption, writeLine, type Command, type CommandContext } from './command.js';

export const keysCommand: Command = {
  help: `Usage: p-e-relay keys add AGENT
       p-e-relay keys list
       p-e-relay keys revoke AGENT

add      creates keys/AGENT.key (mode 0600) holding a new random key and
         prints the file's path, never the key. Hand the file to the agent's
         operator over a safe channel; *.key is ignored by git. The agent is
         put on the roster (p-e-relay agents) of the corpus the keys belong
         to, when it is a store: --corpus (or P_E_RELAY_CORPUS) when given;
         without it, ./corpus only when the keys are its own (./keys), so
         \`keys add NAME --keys DIR\` touches no roster.
list     prints each agent that has a key, with its file.
revoke   deletes keys/AGENT.key. A running hub refuses the agent's next
         signature and ends its open waits and event streams.

AGENT is 1–64 letters, digits, '.', '_' or '-', starting with a letter or
digit (it names the file), and not all: every answer to an agent called all
would reach everyone, so keys add refuses it (broadcast_agent), as a hub
refuses a signature as all.`,
  allowPositionals: true,
  async run(ctx) {
    const [verb, agent, ...extra] = ctx.positionals;
    if (extra.length > 0) throw new UsageError(`keys ${verb} takes one AGENT; got ${ctx.positionals.length - 1} words.`);
    if (verb === 'list') {
      if (agent !== undefined) throw new UsageError('keys list takes no AGENT.');
      const keys = await listKeys(ctx.keys);
      if (keys.length === 0) ctx.stderr.write(`p-e-relay keys: no keys in ${ctx.keys} yet; add one with \`p-e-relay keys add AGENT\`.\n`);
      for (const k of keys) {
        const loose = (k.mode & 0o077) !== 0 ? `  (others can read it: chmod 600 ${k.path})` : '';
        writeLine(ctx.stdout, `${k.agent}\t${k.path}${loose}`);
      }
      return EXIT_OK;
    }
    if (verb !== 'add' && verb !== 'revoke') throw new UsageError(`keys takes add, list or revoke${verb === undefined ? '' : `, not "${verb}"`}.`);
    if (agent === undefined) throw new UsageError(`keys ${verb} needs the AGENT name.`);
    if (verb === 'add') {
      writeLine(ctx.stdout, await addKey(ctx.keys, agent));
      if (keyBelongsToCorpus(ctx)) await noteOnRoster(ctx.corpus, agent);
      ctx.stderr.write(`p-e-relay keys: created a key for ${agent}. Give that file to the agent's operator over a safe channel; never commit it.\n`);
    } else {
      await revokeKey(ctx.keys, agent);
      writeLine(ctx.stdout, `revoked ${agent}`);
    }
    return EXIT_OK;
  },
};

export const signCommand: Command = {
  help: `Usage: p-e-relay sign --agent AGENT [--method M] [FILE]

Prints "Authorization: PE-HMAC agent=…, ts=…, sig=…" for the body in FILE (or
on stdin; with neither, an empty body, as for GET /events). The signature is
HMAC-SHA256 with keys/AGENT.key of M, the current unix time and the sha256 of
the body; it is good for 60 s and for one request only. Send the body with
exactly the bytes that were signed (curl --data-binary @FILE).

  --agent AGENT   whose key signs (keys/AGENT.key)
  --method M      the HTTP method of the request (default POST; GET for /events)

Example:
  curl -X POST http://127.0.0.1:7077/relays --data-binary @note.txt \\
       -H "$(p-e-relay sign --agent scout-7 note.txt)"`,
  options: {
    agent: { type: 'string' },
    method: { type: 'string' },
  },
  allowPositionals: true,
  async run(ctx) {
    const agent = stringOption(ctx, 'agent');
    if (agent === undefined) throw new UsageError('sign needs --agent AGENT: the agent whose key signs.');
    const method = (stringOption(ctx, 'method') ?? 'POST').toUpperCase();
    if (!/^[A-Z]+$/.test(method)) throw new UsageError(`--method takes an HTTP method such as POST or GET, not "${method}".`);
    if (ctx.positionals.length > 1) throw new UsageError('sign takes at most one FILE.');
    const file = ctx.positionals[0];
    const key = await readKey(ctx.keys, agent);
    if (key === null) throw new RelayError('unknown_agent',
      `There is no key for agent "${agent}" in ${ctx.keys}. ` +
      `Create one with \`p-e-relay keys add ${agent}\`, or pass --keys with the directory that holds it.`);
    const stdinIsTerminal = (ctx.stdin as { isTTY?: boolean }).isTTY === true;
    const body = file !== undefined && file !== '-' ? await fs.readFile(file) : stdinIsTerminal && file === undefined ? Buffer.alloc(0) : await readAll(ctx.stdin);
    writeLine(ctx.stdout, `Authorization: ${authorizationFor(agent, key, method, body)}`);
    return EXIT_OK;
  },
};

/**
 * Whether a new key belongs on the roster of ctx.corpus: yes when that
 * corpus was named, or when it is the default and the keys are its own.
 * A key made in some other directory
 * is for some other hub; putting its name on the roster of whatever
 * ./corpus the command happened to run beside would show a stranger in
 * that corpus's /agents.
 */
function keyBelongsToCorpus(ctx: CommandContext): boolean {
  const corpusNamed = typeof ctx.values.corpus === 'string' || Boolean(ctx.env.P_E_RELAY_CORPUS);
  return corpusNamed || path.resolve(ctx.keys) === path.resolve(path.dirname(ctx.corpus), 'keys');
}

/** A name given a key is on the roster of the corpus beside it (spec §8d), when there is one; a hub notes its keys at start too. */
async function noteOnRoster(corpus: string, agent: string): Promise<void> {
  const paths = corpusPaths(corpus);
  if (!(await fs.stat(paths.state).then((s) => s.isDirectory(), () => false))) return;
  await new Roster(paths.roster, silentLogger).seen(agent, 'key');
}
