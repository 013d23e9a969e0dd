/**
 * REST for curl and scripts: the same store functions the tools call, the
 * same text the tools and the CLI print (or their JSON with
 * `Accept: application/json`), the same refusal sentences as JSON errors.
 * One handler per route and method; the table that chooses them, with what
 * each must be signed with and spends, is routes.ts.
 */
import { RelayError } from '../errors.js';
import { appendText, listText, repliesText } from '../doors/render.js';
import { VERSION } from '../version.js';
import { filterFromQuery } from './filter-query.js';
import type { HubRequest } from './context.js';
import { sendJson, sendText, wantsJson } from './respond.js';

export const STATE_HEADER = 'P-E-Relay-State';

export function methodNotAllowed(path: string, allow: string): RelayError {
  return new RelayError('method_not_allowed', `${path} answers ${allow.replace(/, ([^,]*)$/, ' and $1')} only.`, { allow });
}

/** The id a path segment names, percent-decoded. */
function idOf(match: RegExpExecArray): string {
  const segment = match[1]!;
  try {
    return decodeURIComponent(segment);
  } catch {
    return segment; // not valid percent-encoding: it is simply not an id
  }
}

/** GET /relays: list_relays, after a mark, filtered. */
export async function getRelays({ req, res, url, ctx }: HubRequest): Promise<void> {
  const after = url.searchParams.get('after') ?? undefined;
  const list = await ctx.store.list(after, filterFromQuery(url.searchParams, ctx.store.shape));
  wantsJson(req.headers.accept) ? sendJson(res, 200, list) : sendText(res, 200, listText(list));
}

/** POST /relays: the body is the record; 201 with the id (200 when an Idempotency-Key repeats: the earlier record). */
export async function postRelays({ req, res, url, ctx, body, door, facts }: HubRequest): Promise<void> {
  const id = url.searchParams.get('id') ?? undefined;
  // Node joins a repeated header with ", ", so two keys read as one key that no retry will send.
  const sent = req.headers['idempotency-key'];
  const idempotencyKey = Array.isArray(sent) ? sent.join(', ') : sent;
  const result = await door.run(facts, async (grant) => {
    if (grant.agent !== null) await ctx.store.agents.seen(grant.agent, 'signed');
    const append = grant.append ?? ((bytes, options) => ctx.store.append(bytes, options)); // a replica's goes to its primary
    const result = await append(body, { id, depositedBy: grant.depositedBy, idempotencyKey, agent: grant.agent ?? undefined });
    if (!result.replayed) grant.stored();
    return result;
  });
  // A repeat created nothing: 200 with the first record's answer, as RFC 9110 would for a retried POST.
  const status = result.replayed ? 200 : 201;
  const headers = { Location: `/relays/${result.id}` };
  wantsJson(req.headers.accept) ? sendJson(res, status, result, headers) : sendText(res, status, appendText(result), headers);
}

/** GET /relays/ID: the exact stored bytes, or a refusal naming the id's state. */
export async function getRecord({ res, ctx, match }: HubRequest): Promise<void> {
  try {
    const bytes = await ctx.store.read(idOf(match));
    // Records are immutable: a held id's bytes never change.
    res.writeHead(200, { [STATE_HEADER]: 'PRESENT', 'Content-Type': 'text/plain; charset=utf-8', 'Content-Length': bytes.length, 'Cache-Control': 'public, max-age=31536000, immutable' });
    res.end(bytes);
  } catch (err) {
    if (err instanceof RelayError && typeof err.details.state === 'string') res.setHeader(STATE_HEADER, err.details.state);
    throw err;
  }
}

/** HEAD /relays/ID: the id's state in P-E-Relay-State, no body. */
export async function headRecord({ res, ctx, match }: HubRequest): Promise<void> {
  const { state } = await ctx.store.exists(idOf(match));
  res.writeHead(state === 'PRESENT' ? 200 : 404, { [STATE_HEADER]: state, 'Content-Type': 'text/plain; charset=utf-8' }).end();
}

/** GET /relays/ID/replies: list_replies. */
export async function getReplies({ req, res, ctx, match }: HubRequest): Promise<void> {
  const replies = await ctx.store.replies(idOf(match));
  wantsJson(req.headers.accept) ? sendJson(res, 200, replies) : sendText(res, 200, repliesText(replies));
}

/** GET /agents: the roster. */
export async function getAgents({ res, ctx }: HubRequest): Promise<void> {
  sendJson(res, 200, { agents: await ctx.store.roster() });
}

/** GET /claims: every live work claim (spec §8e). */
export async function getClaims({ res, ctx }: HubRequest): Promise<void> {
  sendJson(res, 200, { claims: await ctx.store.workClaims() });
}

export function getHealthz({ res, ctx }: HubRequest): void {
  sendJson(res, 200, { status: 'ok', version: VERSION, ready: ctx.ready(), records: ctx.store.size, readOnly: ctx.store.readOnly });
}

export function getMetrics({ res, ctx }: HubRequest): void {
  const text = ctx.metrics.render({ records: ctx.store.size, waits: ctx.gate.waits.active, streams: ctx.gate.streams.active, ready: ctx.ready(), idsLost: ctx.store.idsLost });
  res.writeHead(200, { 'Content-Type': 'text/plain; version=0.0.4; charset=utf-8', 'Content-Length': Buffer.byteLength(text) }).end(text);
}
