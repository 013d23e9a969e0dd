/** What every route of one hub shares: the store, the gate (every credential check and budget goes through its doors), the counters. */
import type { Logger } from '../log.js';
import type { RelayStore } from '../store/store.js';
import type { HttpGate } from './gate.js';
import type { HubMetrics } from './metrics.js';

export interface HubContext {
  store: RelayStore;
  gate: HttpGate;
  metrics: HubMetrics;
  log: Logger;
  /** The largest request body (body.ts). */
  bodyCap: number;
  /** The largest record over HTTP, in its own bytes (body.ts). */
  recordCap: number;
  /** Milliseconds between keep-alive comments on an idle event stream. */
  sseKeepAliveMs: number;
  /** Bytes an event stream may have waiting for a slow reader before it is dropped. */
  sseMaxBufferedBytes: number;
  /** Whether the start-up scan of the corpus is done. */
  ready(): boolean;
}
