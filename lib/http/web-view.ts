/**
 * The web view's static files: `GET /` is the page, `GET /assets/NAME` its
 * scripts, style and icon. Nothing here reads the corpus: the page itself
 * fetches the hub's public REST routes and the signed SSE stream, the same
 * doors every other client uses (spec §9).
 *
 * Every answer carries a strict Content-Security-Policy. Records are written
 * by agents and are untrusted; the page renders them as text only, and the
 * policy is the second wall: no inline script or style, no other origin, no
 * framing, and Trusted Types forbid handing a string to an HTML sink at all.
 *
 * Where the files are found: at run time, from disk. Under tsx this module
 * sits in lib/http/, next to lib/web/; in the esbuild bundle it lives in dist/,
 * and lib/web/ ships beside dist/ (package.json "files" lists both). Reading them
 * at run time keeps scripts/build.mjs untouched and lets tests, the bundle and
 * an installed package serve the very files in the repository.
 */
import { createHash } from 'node:crypto';
import { existsSync } from 'node:fs';
import { readdir, readFile } from 'node:fs/promises';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { extname } from 'node:path';
import { fileURLToPath } from 'node:url';
import { RelayError } from '../errors.js';
import type { HubRequest } from './context.js';
import { sendError } from './respond.js';

/** Content types by extension. Only files of these kinds in lib/web/ are served. */
const TYPES: Record<string, string> = {
  '.html': 'text/html; charset=utf-8',
  '.css': 'text/css; charset=utf-8',
  '.js': 'text/javascript; charset=utf-8',
  '.svg': 'image/svg+xml',
};

export const WEB_CSP = [
  "default-src 'none'",
  "script-src 'self'",
  "style-src 'self'",
  "img-src 'self'",
  "connect-src 'self'",
  "base-uri 'none'",
  "form-action 'none'",
  "frame-ancestors 'none'",
  "require-trusted-types-for 'script'",
  "trusted-types 'none'",
].join('; ');

const SECURITY_HEADERS: Record<string, string> = {
  'Content-Security-Policy': WEB_CSP,
  'X-Content-Type-Options': 'nosniff',
  'X-Frame-Options': 'DENY',
  'Referrer-Policy': 'no-referrer',
  'Cross-Origin-Opener-Policy': 'same-origin',
  'Cross-Origin-Resource-Policy': 'same-origin',
};

interface Asset {
  body: Buffer;
  type: string;
  etag: string;
}

let loading: Promise<Map<string, Asset>> | undefined;

function assetDir(): string {
  for (const relative of ['../web/', '../lib/web/']) {
    const dir = fileURLToPath(new URL(relative, import.meta.url));
    if (existsSync(dir + 'index.html')) return dir;
  }
  throw new RelayError('internal', 'The web view\'s files (lib/web/) are missing beside this build; reinstall p-e-relay.');
}

/**
 * Reads every asset once; they are small and never change while the hub
 * runs. The directory's listing is the list of names served, so no request
 * path ever reaches the filesystem.
 */
function assets(): Promise<Map<string, Asset>> {
  loading ??= (async () => {
    const dir = assetDir();
    const names = (await readdir(dir)).filter((name) => Object.hasOwn(TYPES, extname(name)));
    const entries = await Promise.all(
      names.map(async (name) => {
        const body = await readFile(dir + name);
        const etag = `"${createHash('sha256').update(body).digest('base64url').slice(0, 22)}"`;
        return [name, { body, type: TYPES[extname(name)]!, etag }] as const;
      }),
    );
    return new Map(entries);
  })();
  loading.catch(() => (loading = undefined));
  return loading;
}

/** The asset a path of the web view's route (`/`, `/assets/NAME`) names; '' for none. */
function assetName(pathname: string): string {
  if (pathname === '/') return 'index.html';
  const name = pathname.slice('/assets/'.length);
  return name === 'index.html' ? '' : name;
}

/**
 * Answers `GET|HEAD /` and `/assets/*`. Refusals go out as every route's do
 * (respond.ts: counted, the cause of an internal one logged), with the
 * page's security headers.
 */
export function handleWeb({ req, res, url, ctx }: HubRequest): void {
  const { pathname } = url;
  const name = assetName(pathname);
  const refuse = (err: unknown) => sendError(res, err, ctx.log, ctx.metrics, SECURITY_HEADERS);
  if (req.method !== 'GET' && req.method !== 'HEAD') {
    req.resume(); // a body we will not read must not hold the connection
    refuse(new RelayError('method_not_allowed', `${pathname} is the web view; it answers GET and HEAD only.`, { allow: 'GET, HEAD' }));
    return;
  }
  assets().then(
    (all) => {
      const asset = all.get(name);
      if (asset) return send(req, res, asset);
      refuse(new RelayError('not_found', `There is no web asset at ${pathname}. Open / for the web view.`));
    },
    (err: unknown) => {
      if (!(err instanceof RelayError)) ctx.log.error(`the web view's files could not be read: ${(err as Error)?.stack ?? String(err)}`);
      refuse(err instanceof RelayError ? err : new RelayError('internal', 'The web view\'s files could not be read; the server log has the cause.'));
    },
  );
}

function send(req: IncomingMessage, res: ServerResponse, asset: Asset): void {
  const headers = { ...SECURITY_HEADERS, 'Content-Type': asset.type, 'Cache-Control': 'no-cache', ETag: asset.etag };
  if (req.headers['if-none-match'] === asset.etag) {
    res.writeHead(304, headers).end();
    return;
  }
  res.writeHead(200, { ...headers, 'Content-Length': asset.body.length });
  res.end(req.method === 'HEAD' ? undefined : asset.body);
}
