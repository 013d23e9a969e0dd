/**
 * Reading a request body ourselves, before anything else sees it: the
 * signature covers the raw bytes, and the cap must hold whatever the headers
 * claim. Content-Length over the cap is refused before a byte is read; a
 * chunked body (or any body) is counted as it streams and refused the moment
 * it passes the cap, so no declared length can get more than the cap into
 * memory.
 *
 * A /mcp body is then decoded here too, strictly, before any SDK parses it
 * (so every SDK version gets the same rules): bytes that are not UTF-8 are
 * refused rather than stored as U+FFFD (the stored record would differ from
 * the signed bytes; REST refuses the same bytes), and a JSON-RPC batch is
 * refused (batches left MCP in 2025-06-18; one batch of 100 get_relay calls
 * was a 500-fold amplifier, and one signature covered up to 20 appends).
 */
import type { IncomingMessage } from 'node:http';
import { RelayError } from '../errors.js';
import { DEFAULT_RECORD_CAP } from '../doors/door.js';

export { DEFAULT_RECORD_CAP };

/**
 * Two caps, each named for what it counts. The record cap is the largest
 * record over HTTP, in its own bytes: a REST append's body is the record, and
 * /mcp counts append_relay's `bytes` as UTF-8 (append-relay.ts). The body cap
 * is the largest request body; for JSON it must hold a record of the record
 * cap however its encoding grows (a quote or backslash takes 2 bytes, a
 * control character 6 as \u00XX), plus the JSON-RPC envelope. The record
 * cap's default is a door fact (lib/doors/door.ts).
 */
const ENVELOPE_BYTES = 8_192;

/** The body cap that lets any record of `recordCap` bytes through in JSON. */
export function bodyCapFor(recordCap: number): number {
  return recordCap * 6 + ENVELOPE_BYTES;
}

export const DEFAULT_BODY_CAP = bodyCapFor(DEFAULT_RECORD_CAP);

/** What a cap counts, for its refusal: the request body, or (a REST append's body) the record itself. */
export type Counted = 'body' | 'record';

function tooLarge(cap: number, counted: Counted): RelayError {
  if (counted === 'record') {
    return new RelayError('too_large', `The record is larger than this hub takes over HTTP (${cap} bytes), ` +
      `so nothing was read or stored. Send a shorter record, or split it and link the parts with ref:.`, { limit: cap, counted });
  }
  return new RelayError('too_large', `The request body is larger than this hub's body cap (${cap} bytes), ` +
    `so nothing was read or stored. Send a smaller request (a record in it may be as long as the hub's record cap, ` +
    `whatever its JSON encoding).`, { limit: cap, counted });
}

export function checkEncoding(req: IncomingMessage): void {
  const encoding = req.headers['content-encoding'];
  if (encoding !== undefined && encoding.trim().toLowerCase() !== 'identity') {
    throw new RelayError('encoded_body', `This hub does not accept a Content-Encoding (${encoding}): the signature ` +
      `covers the exact bytes sent. Send the body uncompressed, without a Content-Encoding header.`);
  }
}

/** The raw body, at most `cap` bytes; throws too_large (naming what `counted`) or encoded_body. */
export function readBody(req: IncomingMessage, cap: number, counted: Counted = 'body'): Promise<Buffer> {
  checkEncoding(req);
  const declared = req.headers['content-length'];
  if (declared !== undefined && Number(declared) > cap) return Promise.reject(tooLarge(cap, counted));
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let total = 0;
    const cleanup = () => {
      req.off('data', onData);
      req.off('end', onEnd);
      req.off('error', onError);
      req.off('aborted', onAborted);
    };
    const onData = (chunk: Buffer) => {
      total += chunk.length;
      if (total > cap) {
        cleanup();
        // Keep reading and discarding, so the 413 reaches the client
        // instead of a reset; the response closes the connection.
        req.resume();
        reject(tooLarge(cap, counted));
        return;
      }
      chunks.push(chunk);
    };
    const onEnd = () => {
      cleanup();
      resolve(Buffer.concat(chunks, total));
    };
    const onError = () => {
      cleanup();
      reject(new RelayError('bad_request', 'The request body did not arrive whole (the connection broke mid-body), so nothing was done. Send the request again.'));
    };
    const onAborted = onError;
    req.on('data', onData);
    req.on('end', onEnd);
    req.on('error', onError);
    req.on('aborted', onAborted);
  });
}

const strictUtf8 = new TextDecoder('utf-8', { fatal: true, ignoreBOM: true });

/** JSON-RPC's own codes for what parseJsonRpcBody refuses. */
export const JSONRPC_PARSE_ERROR = -32700;
export const JSONRPC_INVALID_REQUEST = -32600;

/**
 * One JSON-RPC message from a raw /mcp body, decoded strictly. Throws a
 * RelayError whose `details.jsonRpcCode` is the JSON-RPC error code to
 * answer with: not_utf8 and bad_request (not JSON) are parse errors, a batch
 * is an invalid request.
 */
export function parseJsonRpcBody(raw: Uint8Array): unknown {
  let text: string;
  try {
    text = strictUtf8.decode(raw);
  } catch {
    throw new RelayError('not_utf8', 'Parse error: the body is not valid UTF-8, so it was not read (a record over ' +
      'MCP must be exactly the text that was signed). Send the JSON-RPC message as UTF-8.', { jsonRpcCode: JSONRPC_PARSE_ERROR });
  }
  let message: unknown;
  try {
    message = JSON.parse(text);
  } catch {
    throw new RelayError('bad_request', 'Parse error: the body is not JSON. Send one JSON-RPC message as application/json.', { jsonRpcCode: JSONRPC_PARSE_ERROR });
  }
  if (Array.isArray(message)) {
    throw new RelayError('batch_refused', `Invalid request: this body is a JSON-RPC batch of ${message.length} ` +
      `messages, and MCP has no batches (since protocol version 2025-06-18). ` +
      `Send each message in its own POST /mcp request.`, { jsonRpcCode: JSONRPC_INVALID_REQUEST });
  }
  return message;
}
