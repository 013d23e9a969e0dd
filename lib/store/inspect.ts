/**
 * What `verify` may read of a store's own state, beside its records: the
 * index snapshot and the issued log, each read as the store reads it. The
 * ops floor inspects a store on disk without opening one; this is the one
 * door it has into the wings (docs/architecture.md).
 */
export { readSnapshot } from './index/index-snapshot.js';
export { IssuedLog, MAX_ISSUED_READ } from './append/issued-log.js';
