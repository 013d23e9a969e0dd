/**
 * How the hub takes a request in before its route's handler runs, as the
 * route's row says (routes.ts): the body read once, against the row's cap,
 * and the credential checked once. A credential that is sent is always
 * checked (a wrong one is a 401 before anything runs); a good one is spent
 * in the one-time guard only where the request buys something, so signed
 * reads cannot fill the guard (docs/http.md, docs/security.md).
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import { asRelayError } from '../errors.js';
import type { Admission, Channel } from '../doors/door.js';
import { readBody } from './body.js';
import type { Decoded, DecodedRequest, Handler, HubContext, HubRequest } from './context.js';

export interface Intake {
  /** The door facts of the call: whether it must be signed, what it spends from the hub's budget. */
  readonly facts: Admission;
  /**
   * Whether a good signature is spent: only by what buys something (an
   * append, a wait, a stream, the end of a call). A read's or a ping's is
   * checked and not spent.
   */
  readonly spendsSignature: boolean;
  /** The body is the record (a REST append): read against the record cap, whose refusal names the record. */
  readonly bodyIsRecord?: boolean;
  /** The credential may come as agent/ts/sig query parameters instead of the header (browser EventSource). */
  readonly inQuery?: boolean;
}

/** A read: unsigned, spends nothing; a credential sent along is checked, never spent. */
export const READ_INTAKE: Intake = { facts: { signed: false, spends: null }, spendsSignature: false };

/** A call that buys what its facts spend, and spends its signature with it. */
export function spending(facts: Admission, more: Pick<Intake, 'bodyIsRecord' | 'inQuery'> = {}): Intake {
  return { facts, spendsSignature: true, ...more };
}

/** One method of a route: how its request is taken in, and its handler. */
export type Entry = TakenAsIs | TakenDecoded;

interface TakenAsIs {
  readonly intake: Intake;
  readonly handle: Handler;
}

/** A route whose intake depends on what the body says (POST /mcp): the body is decoded first. */
interface TakenDecoded {
  readonly decode: (body: Uint8Array) => unknown;
  readonly intakeOf: (decoded: Decoded) => Intake;
  readonly handle: Handler<DecodedRequest>;
}

/** Where a request came in, and the captures of the path that chose its route. */
export interface Arrival {
  readonly req: IncomingMessage;
  readonly res: ServerResponse;
  readonly url: URL;
  readonly match: RegExpExecArray;
}

const EMPTY = Buffer.alloc(0);

/** Takes the request in as `entry` says (its body read, its credential checked, its door opened) and hands it to the entry's handler. */
export async function serveEntry(entry: Entry, channel: Channel, arrival: Arrival, ctx: HubContext): Promise<void> {
  if ('decode' in entry) {
    const body = await readBody(arrival.req, ctx.bodyCap);
    const decoded = decode(entry.decode, body);
    const request = await admit(entry.intakeOf(decoded), channel, arrival, ctx, body);
    return entry.handle({ ...request, decoded });
  }
  const body = await bodyOf(arrival.req, entry.intake, ctx);
  return entry.handle(await admit(entry.intake, channel, arrival, ctx, body));
}

/** The one credential check: the request's door, opened with what its intake says a signature buys. */
async function admit(intake: Intake, channel: Channel, arrival: Arrival, ctx: HubContext, body: Buffer): Promise<HubRequest> {
  const { req, res, url } = arrival;
  // An append on a read-only mirror is refused before its credential is looked at (gate.ts).
  const appends = intake.facts.spends === 'append';
  const door = await ctx.gate.open(req, res, url, body, channel, { allowQuery: intake.inQuery ?? false, spend: intake.spendsSignature, appends });
  return { ...arrival, ctx, body, door, facts: intake.facts };
}

/**
 * The body, read once: always for a call that spends (the signature covers
 * it; an append's is its record); for a read only when a credential came to
 * be checked against it.
 */
function bodyOf(req: IncomingMessage, intake: Intake, ctx: HubContext): Promise<Buffer> {
  if (intake.bodyIsRecord) return readBody(req, ctx.recordCap, 'record');
  if (intake.spendsSignature || req.headers.authorization !== undefined) return readBody(req, ctx.bodyCap);
  return Promise.resolve(EMPTY);
}

function decode(decoder: (body: Uint8Array) => unknown, body: Buffer): Decoded {
  try {
    return { message: decoder(body) };
  } catch (err) {
    return { refusal: asRelayError(err) };
  }
}
