/**
 * Every refusal p-e-relay can give, in one place.
 *
 * A refusal is a value: a stable `code` that programs branch on, an HTTP
 * status used only at the HTTP edge, and a sentence for people that says what
 * was wrong and what to send instead. Tests assert on codes, never on text.
 * docs/errors.md is this table written out.
 */

export const ERROR_STATUS = {
  bad_id: 400,
  bad_record: 400,
  /** An HTTP request that is itself malformed (a body that did not arrive whole, JSON that does not parse); nothing else. */
  bad_request: 400,
  bad_agent_name: 400,
  /** A §8a filter that names nobody (`to: []`), or replies_to given twice in a query string. */
  bad_filter: 400,
  invalid_arguments: 400,
  too_many_refs: 400,
  too_many_recipients: 400,
  bad_idempotency_key: 400,
  too_large: 413,
  not_utf8: 400,
  batch_refused: 400,
  not_found: 404,
  damaged: 500,
  id_held: 409,
  id_ahead: 409,
  idempotency_conflict: 409,
  /** A named channel's record says `from:` someone else (spec §8d). */
  from_mismatch: 403,
  /** An about (kind: about) that is not one printable line of at most 200 characters (`details.why`). */
  bad_about: 400,
  /** An about (kind: about) through a channel that names no agent. */
  about_unnamed: 403,
  /** An append to a name not on the roster, where the server was started --strict-recipients (spec §8d). */
  unknown_recipient: 400,
  /** A call's `_meta["p-e-relay/session"]` is not a session id (8-64 of A-Z a-z 0-9 _ -): nothing was proved or run. */
  bad_session: 400,
  /** An agent's mark file (.state/marks/, or inbox --mark FILE) is not a small regular file holding a mark. */
  bad_mark: 500,
  ids_exhausted: 409,
  id_width_fixed: 409,
  read_only: 403,
  disk_full: 507,
  /** The store has begun to close (the server is shutting down): the call was not carried out, and a blocked wait or stream ends with it. */
  store_closed: 503,
  /** There is no corpus directory where the store was told to look: never made, or removed or moved away while the server ran. */
  no_corpus: 503,
  /** The filesystem refused this server a write into the corpus (EROFS, EACCES, EPERM): permissions or a read-only mount. */
  corpus_not_writable: 503,
  /** The corpus is on a filesystem whose directory listings are cached, where an append could take an id another host holds: refused for writing. */
  cached_listings: 503,
  /** The corpus settings file (.p-e-relay) is not a small text file, or names an id width outside the bounds. */
  bad_settings: 500,
  /** Another append under the same idempotency key has been in flight longer than a call may wait for it. */
  key_in_flight: 409,
  /** A network mount under the corpus lost its connection mid-call: transient, safe to retry under the same key. */
  store_unreachable: 503,
  /** A directory given as a corpus that is not a store (and not empty): refused before anything is read or written there. */
  not_a_store: 409,
  unsigned: 401,
  /** A stdio server started without a name was asked for what only a named agent has: its inbox (a wait without after). */
  agent_required: 403,
  /** A work claim (spec §8e) that says something a claim cannot: a target, its count, its for: life, a release's parent; or one agent's claims past their cap. */
  bad_claim: 400,
  /** A work claim colliding with another agent's live claim: retryable, since that claim lapses or is released. */
  claimed: 409,
  /** A release or done of a claim by someone other than its holder. */
  not_holder: 403,
  /** A claim of a task a done record has closed for good. */
  done: 409,
  malformed_authorization: 401,
  unknown_agent: 401,
  /** A key for `all`, the name every agent listens for: refused by `keys add` and as a signer. */
  broadcast_agent: 401,
  bad_signature: 401,
  stale_timestamp: 401,
  replayed_signature: 401,
  guard_reset: 401,
  too_many_signatures: 429,
  key_revoked: 401,
  encoded_body: 415,
  rate_limited: 429,
  too_many_waits: 429,
  too_many_streams: 429,
  too_many_connections: 429,
  forbidden_host: 403,
  forbidden_origin: 403,
  no_route: 404,
  method_not_allowed: 405,
  not_acceptable: 406,
  // `mirror` (CLI only): the status is what an operator-facing HTTP wrapper would say.
  rsync_missing: 503,
  rsync_failed: 502,
  mirror_conflict: 409,
  mirror_source_missing: 404,
  // `bridge` (a local stdio server forwarding to a hub): the status is what a gateway would say.
  hub_unreachable: 502,
  hub_timeout: 504,
  hub_error: 502,
  key_unusable: 401,
  // `keys` (CLI only).
  key_exists: 409,
  // `serve --http` cannot listen (CLI only).
  port_in_use: 409,
  address_not_local: 400,
  /** A text search while the text index holds records up to its memory budget and some it could not hold (store/index/text-index.ts). */
  text_index_full: 503,
  internal: 500,
} as const;

export type ErrorCode = keyof typeof ERROR_STATUS;

/**
 * The codes after which the same call, sent again unchanged a little later
 * (signed afresh over HTTP), may succeed with nobody fixing anything. Every
 * other code needs the caller to send something else, or an operator to act.
 * docs/errors.md's Retry column is this set written out.
 */
export const RETRYABLE: ReadonlySet<ErrorCode> = new Set<ErrorCode>([
  'bad_request', 'claimed', 'internal', 'store_closed', 'store_unreachable', 'key_in_flight', 'rate_limited', 'too_many_waits',
  'too_many_streams', 'too_many_connections', 'too_many_signatures', 'replayed_signature', 'guard_reset', 'hub_unreachable', 'hub_timeout',
]);

export class RelayError extends Error {
  readonly code: ErrorCode;
  /** Facts a program may want beside the sentence (the held id, the next free id, …). */
  readonly details: Record<string, unknown>;

  constructor(code: ErrorCode, message: string, details: Record<string, unknown> = {}) {
    super(message);
    this.name = 'RelayError';
    this.code = code;
    this.details = details;
  }

  get status(): number {
    return ERROR_STATUS[this.code];
  }

  toJSON(): { error: ErrorCode; message: string } & Record<string, unknown> {
    return { error: this.code, message: this.message, ...this.details };
  }
}

export function isRelayError(value: unknown): value is RelayError {
  return value instanceof RelayError;
}

/**
 * The one refusal for a record file whose bytes cannot be trusted (its
 * deposit header is broken, or its bytes no longer match their digest, or it
 * is not a regular file): never served as if it were whole.
 */
export function damagedRecord(why: string, id?: string): RelayError {
  const what = id === undefined ? 'The record file' : id;
  return new RelayError(
    'damaged',
    `${what} is held but damaged (${why}), so it is not returned as if it were whole. ` +
      'Ask the operator to run `p-e-relay verify` and restore it from a mirror or from git.',
    id === undefined ? { why } : { id, state: 'PRESENT', why },
  );
}

/**
 * errno codes only a filesystem whose connection was lost gives (FUSE's
 * ENOTCONN, NFS's ESTALE, …). Socket codes such as ECONNRESET are not here:
 * the bridge's own network errors must not read as a lost corpus; where the
 * corpus is on a network mount, lib/disk/lost-mount.ts adds them and EIO.
 */
export const LOST_CONNECTION: ReadonlySet<string> = new Set(['ENOTCONN', 'ESTALE', 'ECONNABORTED', 'EHOSTDOWN', 'ENETDOWN']);

/**
 * The errno name of a filesystem error. libuv has no name for ESTALE (NFS's
 * "stale file handle", FUSE's too), so Node calls it "Unknown system error
 * -116"; it is named here by its number.
 */
export function errnoName(err: unknown): string | undefined {
  const e = err as NodeJS.ErrnoException | undefined;
  const estale = process.getBuiltinModule('node:os').constants.errno.ESTALE;
  if (typeof e?.errno === 'number' && estale !== undefined && e.errno === -estale) return 'ESTALE';
  return typeof e?.code === 'string' ? e.code : undefined;
}

/**
 * Turns anything thrown into a RelayError. Known filesystem conditions get
 * their own codes; anything else is `internal`, with a sentence that does not
 * leak paths or stack traces to a remote caller.
 */
export function asRelayError(err: unknown): RelayError {
  if (err instanceof RelayError) return err;
  const code = errnoName(err);
  if (code === 'ENOSPC' || code === 'EDQUOT') {
    return new RelayError('disk_full', 'The disk holding the corpus is full, so nothing was stored. Free some space and send the same record again.');
  }
  if (code === 'EROFS' || code === 'EACCES' || code === 'EPERM') {
    return new RelayError('corpus_not_writable', 'The corpus cannot be written by this server (the filesystem refused it), so nothing was stored. Ask the operator to check the corpus permissions.');
  }
  if (code !== undefined && LOST_CONNECTION.has(code)) {
    return new RelayError(
      'store_unreachable',
      `The corpus stopped answering: the connection to the file server under it was lost (${code}). ` +
        'This is transient: send the same call again in a moment (an append with the same idempotency_key, which is safe).',
      { errno: code },
    );
  }
  if (code === 'ENOENT') {
    return new RelayError('no_corpus', 'The corpus directory is gone, so nothing was stored. Ask the operator to restore it or run `p-e-relay init`.');
  }
  return new RelayError('internal', 'The relay hit an unexpected error and stored nothing. Try again; if it persists, the operator will find the cause in the server log.');
}
