import type { Section } from '../lib/context.js';
export const peerSection: Section = { name: 'peer', title: 'peer', async run() {} };
