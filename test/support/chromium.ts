// Debian's chromium driven by playwright-core, for the tests that use a real browser: where it is,
// how it is launched, and the check every page they show passes (axe-core, no sideways scrolling,
// screenshots in test-artifacts/).
import fs from 'node:fs';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import path from 'node:path';
import type { FastifyInstance } from 'fastify';
import type { Browser, Page } from 'playwright-core';
import { expect } from 'vitest';

export const CHROMIUM = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium';
export const chromiumAvailable = fs.existsSync(CHROMIUM);
const ARTIFACTS = path.resolve(__dirname, '..', '..', 'test-artifacts');

/** Headless, no sandbox, no GPU, no first-run or background traffic. */
export async function launchChromium(): Promise<Browser> {
  const { chromium } = await import('playwright-core');
  return chromium.launch({
    executablePath: CHROMIUM,
    headless: true,
    args: ['--headless', '--no-sandbox', '--disable-gpu', '--no-first-run', '--disable-background-networking'],
    timeout: 30_000,
  });
}

/** The fixture's app on a loopback port, its public URL set to match; that URL. */
export async function listenOnLoopback(fixture: {
  app: FastifyInstance;
  config: { publicUrl: string };
}): Promise<string> {
  await fixture.app.listen({ host: '127.0.0.1', port: 0 });
  const base = `http://127.0.0.1:${(fixture.app.server.address() as AddressInfo).port}`;
  fixture.config.publicUrl = base;
  return base;
}

/** A relying party's pages on a loopback port: every request answered 200 with a small page titled `title`. */
export async function startLandingServer(title: string): Promise<{ server: http.Server; url: string }> {
  const server = http.createServer((_req, res) => {
    res
      .writeHead(200, { 'content-type': 'text/html; charset=utf-8' })
      .end(`<!DOCTYPE html><title>${title}</title><p>ok</p>`);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return { server, url: `http://127.0.0.1:${(server.address() as AddressInfo).port}` };
}

interface AxeResult {
  violations: Array<{ id: string; impact: string; nodes: Array<{ target: string[] }> }>;
}

let axeSource: string | undefined;

/**
 * The page as it stands: axe-core in light and dark (0 violations), no sideways scroll at 390 px,
 * screenshots at 390 and 1280 px in test-artifacts/. Leaves the viewport at 1280 px, light.
 */
export async function inspectPage(page: Page, name: string): Promise<void> {
  fs.mkdirSync(ARTIFACTS, { recursive: true });
  for (const colorScheme of ['light', 'dark'] as const) {
    await page.emulateMedia({ colorScheme });
    for (const width of [390, 1280]) {
      await page.setViewportSize({ width, height: width === 390 ? 844 : 900 });
      if (width === 390) {
        const { scrollWidth, innerWidth } = (await page.evaluate(
          '({ scrollWidth: document.documentElement.scrollWidth, innerWidth: window.innerWidth })',
        )) as { scrollWidth: number; innerWidth: number };
        expect(scrollWidth, `${name}: scrolls sideways at 390 px`).toBeLessThanOrEqual(innerWidth);
      }
      await page.screenshot({ path: path.join(ARTIFACTS, `${name}-${width}-${colorScheme}.png`), fullPage: true });
    }
    // Evaluated over the DevTools protocol: the page's own CSP (no scripts at all) stays in force.
    axeSource ??= fs.readFileSync(require.resolve('axe-core/axe.min.js'), 'utf8');
    if ((await page.evaluate('typeof window.axe')) !== 'object') await page.evaluate(axeSource);
    const result = (await page.evaluate('window.axe.run(document)')) as AxeResult;
    const summary = result.violations.map(
      (v) => `${v.id} (${v.impact}): ${v.nodes.map((n) => n.target.join(' ')).join(', ')}`,
    );
    expect(summary, `${name} (${colorScheme})`).toEqual([]);
  }
  await page.emulateMedia({ colorScheme: 'light' });
}

/** Submit the form holding this button (its exact name, or a pattern) and wait for the page that follows. */
export async function press(page: Page, name: string | RegExp): Promise<void> {
  await Promise.all([
    page.waitForNavigation(),
    page.getByRole('button', { name, exact: typeof name === 'string' }).click(),
  ]);
}
