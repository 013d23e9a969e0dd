/**
 * "This test needs system tool X." README's `npm test` must pass on a fresh
 * machine, so a test whose tool the machine lacks is skipped, saying the one
 * line that installs it; the run ends with a summary of every skip
 * (test/support/skip-summary.ts), and `.ci/run` installs every tool and
 * fails on any skip but the multi-host bed's.
 *
 *   test('mirror copies …', needs('rsync'), async (t) => { … })
 *
 * A tool is looked up on PATH, as the code under test will look it up.
 */
import { spawnSync } from 'node:child_process';
import { accessSync, constants, statSync } from 'node:fs';
import path from 'node:path';

interface ToolFacts {
  /** The names to look for on PATH; the first found is the tool. */
  names: string[];
  /** Beyond being on PATH, what must work (null: being there is enough). */
  works?: (file: string, env: NodeJS.ProcessEnv) => boolean;
  install: string;
}

const TOOLS = {
  rsync: { names: ['rsync'], install: 'apt-get install -y rsync' },
  git: { names: ['git'], install: 'apt-get install -y git' },
  chromium: { names: ['chromium', 'chromium-browser'], install: 'apt-get install -y chromium' },
  cc: { names: ['cc', 'gcc'], install: 'apt-get install -y gcc libc6-dev' },
  strace: {
    names: ['strace'],
    // A container without ptrace has strace on PATH but cannot trace.
    works: (file, env) => spawnSync(file, ['-o', '/dev/null', 'true'], { env, stdio: 'ignore' }).status === 0,
    install: 'apt-get install -y strace',
  },
  'python3-venv': {
    names: ['python3'],
    // Debian's python3 lacks venv's ensurepip until python3-venv is installed.
    works: (file, env) => spawnSync(file, ['-c', 'import venv, ensurepip'], { env, stdio: 'ignore' }).status === 0,
    install: 'apt-get install -y python3 python3-venv',
  },
} satisfies Record<string, ToolFacts>;

export type Tool = keyof typeof TOOLS;

/** Where the tool is on `env`'s PATH, or null when it is not there (or, being there, does not work). */
export function toolPath(tool: Tool, env: NodeJS.ProcessEnv = process.env): string | null {
  const facts: ToolFacts = TOOLS[tool];
  for (const name of facts.names) {
    for (const dir of (env.PATH ?? '').split(path.delimiter).filter(Boolean)) {
      const file = path.join(dir, name);
      if (isExecutable(file)) return facts.works === undefined || facts.works(file, env) ? file : null;
    }
  }
  return null;
}

/** The skip reason for the first missing tool, or null when all are here. */
export function missing(tools: Tool[], env: NodeJS.ProcessEnv = process.env): string | null {
  const gone = tools.find((tool) => toolPath(tool, env) === null);
  return gone === undefined ? null : `needs ${gone}, not found on PATH; install it with: ${TOOLS[gone].install}`;
}

/** Options for test() or describe(): skipped, saying how to install, when a tool is missing. */
export function needs(...tools: Tool[]): { skip: string | false } {
  return { skip: missing(tools) ?? false };
}

function isExecutable(file: string): boolean {
  try {
    accessSync(file, constants.X_OK);
    return statSync(file).isFile();
  } catch {
    return false;
  }
}
