/**
 * REST for curl and scripts: the same store functions the tools call, the
 * same text the tools and the CLI print (or their JSON with
 * `Accept: application/json`), the same refusal sentences as JSON errors.
 * The routes themselves are listed in routes.ts.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import { RelayError } from '../errors.js';
import { appendText, listText, repliesText } from '../doors/render.js';
import { appendRelay } from '../mcp/tools/append-relay.js';
import { VERSION } from '../version.js';
import { filterFromQuery } from './filter-query.js';
import { readBody } from './body.js';
import type { HubContext } from './context.js';
import { sendJson, sendText, wantsJson } from './respond.js';
import { isRestPath, ROUTES } from './routes.js';

export const STATE_HEADER = 'P-E-Relay-State';

function methodNotAllowed(path: string, allow: string): RelayError {
  return new RelayError('method_not_allowed', `${path} answers ${allow.replace(/, ([^,]*)$/, ' and $1')} only.`, { allow });
}

function decodeSegment(segment: string): string {
  try {
    return decodeURIComponent(segment);
  } catch {
    return segment; // not valid percent-encoding: it is simply not an id
  }
}

/** Answers a REST route; false when the path is none of them. */
export async function handleRest(req: IncomingMessage, res: ServerResponse, url: URL, ctx: HubContext): Promise<boolean> {
  const method = req.method ?? 'GET';
  const read = method === 'GET' || method === 'HEAD';
  const path = url.pathname;
  let m: RegExpExecArray | null;
  // Reads need no credential, but one that is sent is checked: a wrong one is
  // a 401, not ignored. A good one buys nothing here, so it is not spent.
  if (read && req.headers.authorization !== undefined && isRestPath(path)) await ctx.gate.open(req, res, url, await readBody(req, ctx.bodyCap), 'http', { spend: false });

  if (ROUTES.relays.rest.test(path)) {
    if (method === 'POST') return appendRoute(req, res, url, ctx).then(() => true);
    if (!read) throw methodNotAllowed(path, 'GET, HEAD, POST');
    const after = url.searchParams.get('after') ?? undefined;
    const list = await ctx.store.list(after, filterFromQuery(url.searchParams, ctx.store.shape));
    wantsJson(req.headers.accept) ? sendJson(res, 200, list) : sendText(res, 200, listText(list));
    return true;
  }
  if (ROUTES.agents.rest.test(path)) {
    if (!read) throw methodNotAllowed(path, 'GET, HEAD');
    sendJson(res, 200, { agents: await ctx.store.roster() });
    return true;
  }
  if ((m = ROUTES.replies.rest.exec(path))) {
    if (!read) throw methodNotAllowed(path, 'GET, HEAD');
    const replies = await ctx.store.replies(decodeSegment(m[1]!));
    wantsJson(req.headers.accept) ? sendJson(res, 200, replies) : sendText(res, 200, repliesText(replies));
    return true;
  }
  if ((m = ROUTES.record.rest.exec(path))) {
    if (!read) throw methodNotAllowed(path, 'GET, HEAD');
    const id = decodeSegment(m[1]!);
    if (method === 'HEAD') {
      const { state } = await ctx.store.exists(id);
      res.writeHead(state === 'PRESENT' ? 200 : 404, { [STATE_HEADER]: state, 'Content-Type': 'text/plain; charset=utf-8' }).end();
      return true;
    }
    await getRecord(res, id, ctx);
    return true;
  }
  if (ROUTES.healthz.rest.test(path)) {
    if (!read) throw methodNotAllowed(path, 'GET, HEAD');
    sendJson(res, 200, { status: 'ok', version: VERSION, ready: ctx.ready(), records: ctx.store.size, readOnly: ctx.store.readOnly });
    return true;
  }
  if (ROUTES.metrics.rest.test(path)) {
    if (!read) throw methodNotAllowed(path, 'GET, HEAD');
    const text = ctx.metrics.render({ records: ctx.store.size, waits: ctx.gate.waits.active, streams: ctx.gate.streams.active, ready: ctx.ready() });
    res.writeHead(200, { 'Content-Type': 'text/plain; version=0.0.4; charset=utf-8', 'Content-Length': Buffer.byteLength(text) }).end(text);
    return true;
  }
  return false;
}

async function getRecord(res: ServerResponse, id: string, ctx: HubContext): Promise<void> {
  try {
    const bytes = await ctx.store.read(id);
    // Records are immutable: a held id's bytes never change.
    res.writeHead(200, { [STATE_HEADER]: 'PRESENT', 'Content-Type': 'text/plain; charset=utf-8', 'Content-Length': bytes.length, 'Cache-Control': 'public, max-age=31536000, immutable' });
    res.end(bytes);
  } catch (err) {
    if (err instanceof RelayError && typeof err.details.state === 'string') res.setHeader(STATE_HEADER, err.details.state);
    throw err;
  }
}

async function appendRoute(req: IncomingMessage, res: ServerResponse, url: URL, ctx: HubContext): Promise<void> {
  const body = await readBody(req, ctx.recordCap, 'record'); // the body is the record
  const door = await ctx.gate.open(req, res, url, body, 'http', { appends: true });
  const id = url.searchParams.get('id') ?? undefined;
  // Node joins a repeated header with ", ", so two keys read as one key that no retry will send.
  const sent = req.headers['idempotency-key'];
  const idempotencyKey = Array.isArray(sent) ? sent.join(', ') : sent;
  // The same door facts as append_relay: signed, one append from the agent's rate.
  const result = await door.run(appendRelay.door, async (grant) => {
    if (grant.agent !== null) await ctx.store.agents.seen(grant.agent, 'signed');
    const result = await ctx.store.append(body, { id, depositedBy: grant.depositedBy, idempotencyKey, agent: grant.agent ?? undefined });
    if (!result.replayed) grant.stored();
    return result;
  });
  // A repeat created nothing: 200 with the first record's answer, as RFC 9110 would for a retried POST.
  const status = result.replayed ? 200 : 201;
  const headers = { Location: `/relays/${result.id}` };
  wantsJson(req.headers.accept) ? sendJson(res, status, result, headers) : sendText(res, status, appendText(result), headers);
}
