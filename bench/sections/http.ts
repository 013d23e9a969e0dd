import type { Section } from '../lib/context.js';
export const httpSection: Section = { name: 'http', title: 'http', async run() {} };
