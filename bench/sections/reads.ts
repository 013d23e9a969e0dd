import type { Section } from '../lib/context.js';
export const readsSection: Section = { name: 'reads', title: 'reads', async run() {} };
