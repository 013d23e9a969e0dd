// The verified frontier (GET /checkpoints): how far the hub's checkpoint
// records prove this corpus complete, checked by the hub from its index
// (docs/mirroring.md). Redrawn with the roster's pace: every poll interval,
// and soon after records land (one may be a checkpoint).

import { checkpointFrontier } from './api.js';
import { byId } from './dom.js';
import { redrawLoop } from './live.js';

const loop = redrawLoop(drawFrontier);
export const startFrontier = loop.start;
/** Redraws within a second, once however many records land. */
export const frontierSoon = loop.soon;

async function drawFrontier() {
  const line = byId('frontier');
  let f;
  try {
    f = await checkpointFrontier();
  } catch {
    return; // a hub without the route, or a blip: the line keeps what it said
  }
  line.hidden = false;
  line.dataset.state = f.problem ? 'problem' : f.behind ? 'behind' : f.verified ? 'verified' : 'none';
  const parts = [];
  parts.push(f.verified ? `Verified complete up to ${f.verified} (checkpoint ${f.verifiedBy})` : 'No verified checkpoint yet');
  if (f.behind) parts.push(`behind: checkpoint ${f.behind.checkpoint} lists ${f.behind.count} ` +
    `record${f.behind.count === 1 ? '' : 's'} not here yet ` +
    `(${f.behind.ids.join(' ')}${f.behind.count > f.behind.ids.length ? ' …' : ''})`);
  if (f.problem) parts.push(`checkpoint ${f.problem.checkpoint} does not hold: ${f.problem.why} (run p-e-relay verify)`);
  line.textContent = parts.join(' · ');
}
