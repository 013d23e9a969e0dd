/**
 * The browser the web view's tests drive: Debian's headless Chromium, found
 * on PATH (needs.ts: without it those tests are skipped, saying how to
 * install it), through playwright-core, with a profile in the test's dir.
 */
import path from 'node:path';
import { chromium, type BrowserContext } from 'playwright-core';
import { toolPath } from './needs.js';

const CHROMIUM_FLAGS = ['--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run', '--disable-background-networking', '--disable-component-update', '--disable-sync'];

export function launchChromium(dir: string): Promise<BrowserContext> {
  return chromium.launchPersistentContext(path.join(dir, 'chromium-profile'), {
    executablePath: toolPath('chromium')!,
    headless: true,
    args: CHROMIUM_FLAGS,
    viewport: { width: 1280, height: 800 },
  });
}
