// The hub's public REST reads (spec §9), as the page uses them. Every route
// here is one any client may call without a credential.

const JSON_ACCEPT = { Accept: 'application/json' };

/** A refusal from the hub: its stable code, its sentence, and the id's state when it names one. */
export class HubError extends Error {
  constructor(status, body) {
    super(body?.message ?? `The hub answered HTTP ${status}.`);
    this.status = status;
    this.code = body?.error ?? null;
    this.state = body?.state ?? null;
  }
}

/** Milliseconds the hub's clock runs ahead of this browser's, from Date headers (signatures must be within 60 s). */
let clockOffsetMs = 0;
function noteClock(response) {
  const date = Date.parse(response.headers.get('Date') ?? '');
  if (!Number.isNaN(date)) clockOffsetMs = date - Date.now();
}
export function hubNowSeconds() {
  return Math.floor((Date.now() + clockOffsetMs) / 1000);
}

async function refusal(response) {
  let body = null;
  try {
    body = await response.json();
  } catch {
    // not JSON: the status alone has to do
  }
  return new HubError(response.status, body);
}

async function get(url, init = {}) {
  const response = await fetch(url, { cache: 'no-store', ...init });
  noteClock(response);
  if (!response.ok) throw await refusal(response);
  return response;
}

/** GET /relays[?after=ID][&text=WORDS] → { after, present, knownMissing } */
export async function listRelays(after = null, { text = '' } = {}) {
  const params = new URLSearchParams();
  if (after) params.set('after', after);
  if (text) params.set('text', text);
  const query = params.toString() ? `?${params}` : '';
  return (await get(`/relays${query}`, { headers: JSON_ACCEPT })).json();
}

/** GET /relays/ID → the file's exact bytes (deposit header, ---, record). */
export async function recordBytes(id) {
  return new Uint8Array(await (await get(`/relays/${encodeURIComponent(id)}`)).arrayBuffer());
}

/** HEAD /relays/ID → PRESENT, KNOWN_MISSING or UNKNOWN. */
export async function idState(id) {
  const response = await fetch(`/relays/${encodeURIComponent(id)}`, { method: 'HEAD', cache: 'no-store' });
  return response.headers.get('P-E-Relay-State') ?? 'UNKNOWN';
}

/** GET /relays/ID/replies → { parent, replies: [{ id, kind, from, to, parent, refs }] } */
export async function listReplies(id) {
  return (await get(`/relays/${encodeURIComponent(id)}/replies`, { headers: JSON_ACCEPT })).json();
}

/** GET /checkpoints → { newest, verified, verifiedBy, behind, problem }: the verified frontier. */
export async function checkpointFrontier() {
  return (await get('/checkpoints', { headers: JSON_ACCEPT })).json();
}

/** GET /claims → [{ id, holder, targets, depositedAt, lapsesAt }]: the live work claims (spec §8e). */
export async function listClaims() {
  return (await (await get('/claims', { headers: JSON_ACCEPT })).json()).claims;
}

/** GET /agents → [{ name, lastSeen, waiting, how }]: the roster (spec §8d). */
export async function listAgents() {
  return (await (await get('/agents', { headers: JSON_ACCEPT })).json()).agents;
}
