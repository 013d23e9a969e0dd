/**
 * Reading a request body ourselves, before anything else sees it: the
 * signature covers the raw bytes, and the cap must hold whatever the headers
 * claim. Content-Length over the cap is refused before a byte is read; a
 * chunked body (or any body) is counted as it streams and refused the moment
 * it passes the cap, so no declared length can get more than the cap into
 * memory.
 */
import type { IncomingMessage } from 'node:http';
import { RelayError } from '../errors.js';

export const DEFAULT_BODY_CAP = 65_536;

function tooLarge(cap: number): RelayError {
  return new RelayError('too_large', `The request body is larger than this hub accepts (${cap} bytes), so nothing was read or stored. Send a smaller body; a record over HTTP must fit in ${cap} bytes.`, { limit: cap });
}

export function checkEncoding(req: IncomingMessage): void {
  const encoding = req.headers['content-encoding'];
  if (encoding !== undefined && encoding.trim().toLowerCase() !== 'identity') {
    throw new RelayError('encoded_body', `This hub does not accept a Content-Encoding (${encoding}): the signature covers the exact bytes sent. Send the body uncompressed, without a Content-Encoding header.`);
  }
}

/** The raw body, at most `cap` bytes; throws too_large or encoded_body. */
export function readBody(req: IncomingMessage, cap: number): Promise<Buffer> {
  checkEncoding(req);
  const declared = req.headers['content-length'];
  if (declared !== undefined && Number(declared) > cap) return Promise.reject(tooLarge(cap));
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
        reject(tooLarge(cap));
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
