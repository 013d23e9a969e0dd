/**
 * One request's way through the hub: the DNS-rebinding check (on loopback)
 * and the CORS answer first, then its route's row (routes.ts), which says
 * how it is taken in (intake.ts: the body read once, the credential checked
 * once) and which handler answers it. A handler throws a RelayError and this
 * module answers it as JSON (respond.ts).
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { HubContext } from './context.js';
import { serveEntry } from './intake.js';
import type { RebindingGuard } from './rebinding.js';
import { sendError } from './respond.js';
import { entryOf, routeOf } from './routes.js';

/** The hub's request listener. */
export function dispatcher(ctx: HubContext, rebinding: RebindingGuard): (req: IncomingMessage, res: ServerResponse) => void {
  return (req, res) => {
    void dispatch(req, res, ctx, rebinding).catch((err) => sendError(res, err, ctx.log, ctx.metrics));
  };
}

async function dispatch(req: IncomingMessage, res: ServerResponse, ctx: HubContext, rebinding: RebindingGuard): Promise<void> {
  rebinding.check(req.headers);
  const origin = req.headers.origin;
  if (origin !== undefined && rebinding.allowsOrigin(origin)) {
    res.setHeader('Access-Control-Allow-Origin', origin);
    res.setHeader('Vary', 'Origin');
  }
  const url = new URL(req.url ?? '/', 'http://hub.invalid');
  if (req.method === 'OPTIONS' && origin !== undefined) return preflight(res);
  const { route, match } = routeOf(url.pathname);
  const entry = entryOf(route, req.method ?? 'GET', url.pathname);
  await serveEntry(entry, route.channel, { req, res, url, match }, ctx);
}

function preflight(res: ServerResponse): void {
  res.writeHead(204, {
    'Access-Control-Allow-Methods': 'GET, HEAD, POST',
    'Access-Control-Allow-Headers': 'Authorization, Content-Type, Accept, Last-Event-ID, Mcp-Protocol-Version',
    'Access-Control-Max-Age': '600',
  });
  res.end();
}
