// One-click unsubscribe and suppressed addresses in a real browser (Debian's chromium via
// playwright-core) against the real server: the unsubscribe page → Unsubscribe → Undo, a bad link,
// and "Resume e-mail" on the e-mails page. Every page: axe-core with 0 violations in light and dark,
// no sideways scrolling at 390 px, screenshots at 390 and 1280 px in test-artifacts/.
import type { Browser } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { recordSuppression } from '../../service/domain/mail/suppressions';
import { createGroup, createProject } from '../../service/domain/namespaces';
import { unsubscribeHeaders } from '../../service/domain/notifications/unsubscribe';
import { testKeyRing } from '../support/app';
import {
  chromiumAvailable as available,
  inspectPage as inspect,
  launchChromium,
  listenOnLoopback,
  press,
} from '../support/chromium';
import { makeUser, PASSWORD, useFixture } from '../oauth/support/harness';

const f = useFixture();
let browser: Browser;
let base: string;

beforeAll(async () => {
  if (!available) return;
  base = await listenOnLoopback(f);
  browser = await launchChromium();
}, 60_000);

afterAll(async () => {
  await browser?.close();
});

const levelOf = async (userId: number, projectId: number) =>
  (
    await f.db
      .selectFrom('notification_settings')
      .select('level')
      .where('user_id', '=', userId)
      .where('project_id', '=', projectId)
      .executeTakeFirst()
  )?.level;

describe.skipIf(!available)('one-click unsubscribe in chromium', () => {
  it('the link from the header → Unsubscribe → Undo; a tampered link', async () => {
    const { user } = await makeUser(f.db, 'gina');
    await createGroup(f.db, { path: 'space', visibility: 'public' });
    const project = await createProject(f.db, {
      path: 'space/a-project-with-a-rather-long-name-for-small-screens',
      name: 'A project with a rather long name for small screens',
      visibility: 'public',
    });
    const header = unsubscribeHeaders({ publicUrl: base }, await testKeyRing(), user.id, project.id)[
      'List-Unsubscribe'
    ];
    const link = header.slice(1, -1);
    const context = await browser.newContext({ viewport: { width: 1280, height: 900 } });
    const page = await context.newPage();
    try {
      await page.goto(link);
      expect(await page.textContent('#project-name')).toBe('A project with a rather long name for small screens');
      await inspect(page, 'unsubscribe');
      expect(await levelOf(user.id, project.id)).toBeUndefined();

      await press(page, 'Unsubscribe');
      expect(page.url()).toBe(link); // answered in place: RFC 8058 forbids a redirect
      expect(await page.textContent('#flash-notice')).toContain('You will no longer get notification e-mails');
      expect(await levelOf(user.id, project.id)).toBe('disabled');
      await inspect(page, 'unsubscribed');

      await press(page, 'Undo');
      expect(await page.textContent('#flash-notice')).toContain('is Global (your default) again.');
      expect(await levelOf(user.id, project.id)).toBe('global');
      await inspect(page, 'unsubscribe-undone');

      const [u, p, exp, mac] = link.slice(link.lastIndexOf('/') + 1).split('.');
      const tampered = `${base}/-/unsubscribe/${u}.${p}.${Number(exp) + 1}.${mac}`;
      const res = await page.goto(tampered);
      expect(res?.status()).toBe(404);
      expect(await page.textContent('#flash-alert')).toContain('This unsubscribe link is not valid.');
      await inspect(page, 'unsubscribe-invalid');
    } finally {
      await context.close();
    }
  });

  it('a suppressed address on the e-mails page → Resume e-mail', async () => {
    await makeUser(f.db, 'hal');
    await recordSuppression(f.db, { address: 'hal@example.com', reason: 'bounce', source: 'smtp' });
    const context = await browser.newContext({ viewport: { width: 1280, height: 900 } });
    const page = await context.newPage();
    try {
      await page.goto(`${base}/users/sign_in`);
      await page.fill('#user_login', 'hal');
      await page.fill('#user_password', PASSWORD);
      await press(page, 'Sign in');
      await page.goto(`${base}/-/profile/emails`);
      expect(await page.textContent('#email-primary')).toContain('Mail to this address bounced');
      await inspect(page, 'emails-suppressed');
      await press(page, 'Resume e-mail');
      expect(await page.textContent('#flash-notice')).toContain('E-mail to hal@example.com resumed.');
      expect(await page.textContent('#email-primary')).not.toContain('Not receiving e-mail');
      await inspect(page, 'emails-resumed');
    } finally {
      await context.close();
    }
  });
});
