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

/** The four widths every page must fit: a phone, a tablet, a small laptop, a desktop. */
const PAGE_WIDTHS = [390, 768, 1024, 1280] as const;

/**
 * The page at every width of `widths`: no sideways scroll (the document no wider than its
 * viewport), and light and dark screenshots at each width of `screenshots` in test-artifacts/ (and
 * at any width that fails); axe-core with 0 violations in both schemes at the first screenshot
 * width. Leaves 1280 px, light.
 */
export async function inspectWidths(
  page: Page,
  name: string,
  opts: { widths?: readonly number[]; screenshots?: readonly number[] } = {},
): Promise<void> {
  const widths = opts.widths ?? PAGE_WIDTHS;
  const screenshots = opts.screenshots ?? widths;
  fs.mkdirSync(ARTIFACTS, { recursive: true });
  for (const colorScheme of ['light', 'dark'] as const) {
    await page.emulateMedia({ colorScheme });
    // The layout does not depend on the colour scheme: dark is measured at the screenshot widths only.
    for (const width of colorScheme === 'light' ? widths : screenshots) {
      await page.setViewportSize({ width, height: width < 768 ? 844 : 900 });
      const { scrollWidth, clientWidth } = (await page.evaluate(
        '({ scrollWidth: document.documentElement.scrollWidth, clientWidth: document.documentElement.clientWidth })',
      )) as { scrollWidth: number; clientWidth: number };
      if (screenshots.includes(width) || scrollWidth > clientWidth)
        await page.screenshot({ path: path.join(ARTIFACTS, `${name}-${width}-${colorScheme}.png`), fullPage: true });
      expect(scrollWidth, `${name}: scrolls sideways at ${width} px (${colorScheme})`).toBeLessThanOrEqual(clientWidth);
    }
    await page.setViewportSize({ width: screenshots[0] ?? widths[0], height: 900 });
    axeSource ??= fs.readFileSync(require.resolve('axe-core/axe.min.js'), 'utf8');
    if ((await page.evaluate('typeof window.axe')) !== 'object') await page.evaluate(axeSource);
    const result = (await page.evaluate('window.axe.run(document)')) as AxeResult;
    const summary = result.violations.map(
      (v) => `${v.id} (${v.impact}): ${v.nodes.map((n) => n.target.join(' ')).join(', ')}`,
    );
    expect(summary, `${name} (${colorScheme})`).toEqual([]);
  }
  await page.setViewportSize({ width: 1280, height: 900 });
  await page.emulateMedia({ colorScheme: 'light' });
}
