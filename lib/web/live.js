// How the page learns of new records: the signed SSE stream when a person
// has entered an agent name and key, else polling the unsigned list.

import { hubNowSeconds, listRelays } from './api.js';
import { hmacSigner } from './sha256.js';

export const POLL_MS = 3000;

/**
 * A panel redrawn at the list's pace: start() draws now and then every
 * POLL_MS; soon() redraws within a second (records landed), once however
 * many land, so the page never asks more than once per interval.
 */
export function redrawLoop(draw) {
  let timer = null;
  let soon = null;
  const tick = () => {
    clearTimeout(timer);
    void draw().finally(() => (timer = setTimeout(tick, POLL_MS)));
  };
  return {
    start: tick,
    soon() {
      if (soon) return;
      soon = setTimeout(() => {
        soon = null;
        void draw();
      }, 1000);
    },
  };
}
/** Every this many polls, list everything (not only after the mark) to catch fill-ins below it. */
const FULL_LIST_EVERY = 10;
/** The hub sends keep-alive comments on an idle stream; this long with no byte at all means it is gone. */
const STALL_MS = 75_000;
const EMPTY_BODY_SHA256 = 'e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855';
/** Refusals a fresh signature can cure (a clock step, a lost race); anything else needs a person. */
const RETRYABLE = new Set(['stale_timestamp', 'replayed_signature', 'too_many_streams', 'too_many_waits', 'rate_limited']);

/**
 * Polls GET /relays?after=<mark> every POLL_MS and hands the list to
 * onList(list, { full }). mark() says where the page has got to.
 */
export function startPolling({ mark, onList, onError }) {
  let stopped = false;
  let timer = null;
  let count = 0;
  const tick = async () => {
    const full = count++ % FULL_LIST_EVERY === FULL_LIST_EVERY - 1;
    try {
      const list = await listRelays(full ? null : mark());
      if (!stopped) onList(list, { full });
    } catch (err) {
      if (!stopped) onError(err);
    }
    if (!stopped) timer = setTimeout(tick, POLL_MS);
  };
  timer = setTimeout(tick, POLL_MS);
  return () => {
    stopped = true;
    clearTimeout(timer);
  };
}

/**
 * Follows GET /events, signed with query parameters. A signature is accepted
 * once, so EventSource's own reconnect (same URL) could never resume: this
 * reads the stream with fetch, and whenever it ends it reopens with a fresh
 * signature and ?after=<the highest id seen>.
 *
 * onState(state, detail, code): 'connecting' | 'live' | 'reconnecting' | 'refused'
 * (with the hub's sentence, and for 'refused' its error code).
 * A refusal that a fresh signature cannot cure (unknown agent, bad signature)
 * ends the stream for good; the caller falls back to polling.
 */
export async function startSignedStream({ agent, key, mark, onRecord, onState }) {
  const sign = await hmacSigner(key);
  let stopped = false;
  let controller = null;
  let retryTimer = null;
  let failures = 0;

  const retry = (why) => {
    if (stopped) return;
    const delay = Math.min(1000 * 2 ** failures, 15_000);
    failures++;
    onState('reconnecting', why);
    retryTimer = setTimeout(open, delay);
  };

  const open = async () => {
    if (stopped) return;
    onState('connecting');
    const ts = String(hubNowSeconds());
    const sig = await sign(`GET\n${ts}\n${EMPTY_BODY_SHA256}`);
    const params = new URLSearchParams({ agent, ts, sig });
    const after = mark();
    if (after) params.set('after', after);
    controller = new AbortController();
    let response;
    try {
      response = await fetch(`/events?${params}`, { headers: { Accept: 'text/event-stream' }, cache: 'no-store', signal: controller.signal });
    } catch {
      return retry('the hub could not be reached');
    }
    if (!response.ok) {
      let body = null;
      try {
        body = await response.json();
      } catch {
        // no JSON body
      }
      const sentence = body?.message ?? `the hub answered HTTP ${response.status}`;
      if (RETRYABLE.has(body?.error) && failures < 5) return retry(sentence);
      stopped = true;
      return onState('refused', sentence, body?.error ?? null);
    }
    failures = 0;
    onState('live');
    await readEvents(response.body, controller, onRecord).catch(() => {});
    retry('the stream ended');
  };

  open();
  return () => {
    stopped = true;
    clearTimeout(retryTimer);
    controller?.abort();
  };
}

/** Reads text/event-stream and calls onRecord(data) for each `event: relay`. Resolves when the stream ends. */
async function readEvents(body, controller, onRecord) {
  const reader = body.pipeThrough(new TextDecoderStream()).getReader();
  let stall = setTimeout(() => controller.abort(), STALL_MS);
  let buffer = '';
  let event = { type: 'message', data: [] };
  try {
    for (;;) {
      const { value, done } = await reader.read();
      if (done) return;
      clearTimeout(stall);
      stall = setTimeout(() => controller.abort(), STALL_MS);
      buffer += value;
      // A CR at the very end may be half of a CRLF split across chunks: keep it for the next one.
      const cut = buffer.endsWith('\r') ? buffer.length - 1 : buffer.length;
      const lines = buffer.slice(0, cut).split(/\r\n|\r|\n/);
      buffer = lines.pop() + buffer.slice(cut);
      for (const line of lines) {
        if (line === '') {
          if (event.type === 'relay' && event.data.length) dispatch(event.data.join('\n'), onRecord);
          event = { type: 'message', data: [] };
        } else if (line.startsWith(':')) {
          continue; // keep-alive comment
        } else {
          const colon = line.indexOf(':');
          const field = colon === -1 ? line : line.slice(0, colon);
          let value = colon === -1 ? '' : line.slice(colon + 1);
          if (value.startsWith(' ')) value = value.slice(1);
          if (field === 'event') event.type = value;
          else if (field === 'data') event.data.push(value);
        }
      }
    }
  } finally {
    clearTimeout(stall);
  }
}

function dispatch(data, onRecord) {
  let meta;
  try {
    meta = JSON.parse(data);
  } catch {
    return;
  }
  if (meta && typeof meta.id === 'string') onRecord(meta);
}
