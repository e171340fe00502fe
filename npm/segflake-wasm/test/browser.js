// Headless Chromium through playwright-core, on the system's chromium.
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { createRequire } from 'node:module';

export const CHROMIUM = process.env.SEGFLAKE_CHROMIUM || '/usr/bin/chromium';
export const CHROMIUM_ARGS = ['--headless', '--no-sandbox', '--disable-gpu', '--disable-background-networking'];

/** Resolves playwright-core from $SEGFLAKE_PLAYWRIGHT_DIR (a node_modules parent) or here. */
async function playwright() {
  const base = process.env.SEGFLAKE_PLAYWRIGHT_DIR || process.cwd();
  const require = createRequire(path.join(base, 'noop.js'));
  const mod = await import(require.resolve('playwright-core'));
  return mod.chromium ? mod : mod.default;
}

/** Launches Chromium with a throw-away profile; returns `{ context, close }`. */
export async function launch() {
  const { chromium } = await playwright();
  const profile = fs.mkdtempSync(path.join(os.tmpdir(), 'segflake-chromium-'));
  const context = await chromium.launchPersistentContext(profile, {
    executablePath: CHROMIUM,
    headless: true,
    args: CHROMIUM_ARGS,
  });
  return {
    context,
    close: async () => {
      await context.close();
      fs.rmSync(profile, { recursive: true, force: true });
    },
  };
}
