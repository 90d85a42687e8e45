// Account e-mails in a real browser (Debian's chromium via playwright-core) against the real
// server, the mail delivered over real SMTP (smtp-server) and read with mailparser: forgot password → open the mail → follow its link → set a new password → sign in; add an
// address → confirm it from the mail → make it the notification e-mail. Every page: axe-core with
// 0 violations in light and dark, no sideways scrolling at 390 px, screenshots at 390 and 1280 px
// in test-artifacts/.
import type { Browser } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { simpleParser } from 'mailparser';
import { drainOnce } from '../../service/mail/sender';
import { smtpTransport } from '../../service/mail/smtp-transport';
import { makeUser, PASSWORD, useFixture } from '../oauth/support/harness';
import {
  chromiumAvailable as available,
  inspectPage as inspect,
  launchChromium,
  press,
  listenOnLoopback,
} from '../support/chromium';
import { type SmtpSink, startSmtpSink } from '../support/smtp-sink';

const f = useFixture();
let browser: Browser;
let base: string;
let sink: SmtpSink;

beforeAll(async () => {
  if (!available) return;
  sink = await startSmtpSink();
  base = await listenOnLoopback(f);
  browser = await launchChromium();
}, 60_000);

afterAll(async () => {
  await browser?.close();
  await sink?.close();
});

/**
 * Deliver what the outbox holds through the real SMTP transport to the SMTP server started here, and
 * open the newest message to `to` as a mail reader would (mailparser): its link into this site.
 */
async function mailLink(to: string, subject: string): Promise<string> {
  const transport = smtpTransport({ url: sink.url(), maxConnections: 1, timeoutMs: 5000 });
  try {
    await drainOnce({ db: f.db, transport, from: f.config.mail.from, maxAttempts: 3, concurrency: 1 });
  } finally {
    await transport.close();
  }
  const received = sink.received.filter((m) => m.to.includes(to));
  expect(received.length).toBeGreaterThan(0);
  const mail = await simpleParser(received[received.length - 1].raw);
  expect(mail.subject).toBe(subject);
  const link = (mail.text ?? '').split('\n').find((line) => line.startsWith(base) && line !== `${base}/`);
  expect(link).toBeDefined();
  return link!;
}

describe.skipIf(!available)('account e-mails in chromium', () => {
  it('forgot password → mail → link → new password → sign in', async () => {
    await makeUser(f.db, 'erin');
    const context = await browser.newContext({ viewport: { width: 1280, height: 900 } });
    const page = await context.newPage();
    try {
      await page.goto(`${base}/users/sign_in`);
      await Promise.all([page.waitForNavigation(), page.getByRole('link', { name: 'Forgot your password?' }).click()]);
      expect(new URL(page.url()).pathname).toBe('/users/password/new');
      await inspect(page, 'password-new');
      await page.fill('#user_email', 'erin@example.com');
      await press(page, 'Reset password');
      expect(new URL(page.url()).pathname).toBe('/users/sign_in');
      expect(await page.textContent('#flash-notice')).toContain('you will receive a link to reset your password');
      await inspect(page, 'password-reset-requested');

      const resetLink = await mailLink('erin@example.com', 'Reset password instructions');
      await page.goto(resetLink);
      await inspect(page, 'password-edit');
      await page.fill('#user_password', 'short');
      await page.fill('#user_password_confirmation', 'short');
      await press(page, 'Change your password');
      expect(await page.textContent('#user_password-error')).toContain('Password must be 8 characters or more');
      await inspect(page, 'password-edit-error');
      await page.fill('#user_password', 'erins new passphrase');
      await page.fill('#user_password_confirmation', 'erins new passphrase');
      await press(page, 'Change your password');
      expect(new URL(page.url()).pathname).toBe('/users/sign_in');
      expect(await page.textContent('#flash-notice')).toBe(
        'Your password has been changed. Sign in with your new password.',
      );

      await page.fill('#user_login', 'erin');
      await page.fill('#user_password', 'erins new passphrase');
      await press(page, 'Sign in');
      expect(new URL(page.url()).pathname).toBe('/-/profile');

      // The account was told, and the used link now says so.
      expect(await mailLink('erin@example.com', 'Password reset')).toBe(`${base}/users/password/new`);
      await page.goto(resetLink);
      expect(await page.textContent('#flash-alert')).toContain('invalid, has expired or has already been used');
      await inspect(page, 'password-edit-invalid');
    } finally {
      await context.close();
    }
  });

  it('add an address → confirm it from the mail → make it the notification e-mail', async () => {
    await makeUser(f.db, 'fay');
    const context = await browser.newContext({ viewport: { width: 1280, height: 900 } });
    const page = await context.newPage();
    try {
      await page.goto(`${base}/users/sign_in`);
      await page.fill('#user_login', 'fay');
      await page.fill('#user_password', PASSWORD);
      await press(page, 'Sign in');
      await page.goto(`${base}/-/profile/emails`);
      await inspect(page, 'emails');
      await page.fill('#email_email', 'not an address');
      // The browser's own check would stop type=email; the server's rule is what is tested here.
      await page.$eval('form[action="/-/profile/emails"]', (form) => form.setAttribute('novalidate', ''));
      await press(page, 'Add e-mail address');
      expect(await page.textContent('#email_email-error')).toContain(
        'Enter an e-mail address in the correct format, like name@example.com',
      );
      await inspect(page, 'emails-error');
      await page.fill('#email_email', 'fay.at.a.rather.long.address@subdomain.example.com');
      await press(page, 'Add e-mail address');
      expect(await page.textContent('#flash-notice')).toContain('We sent a confirmation link to');
      await inspect(page, 'emails-unconfirmed');

      await page.goto(
        await mailLink('fay.at.a.rather.long.address@subdomain.example.com', 'Confirmation instructions'),
      );
      expect(new URL(page.url()).pathname).toBe('/-/profile/emails');
      expect(await page.textContent('#flash-notice')).toBe(
        'fay.at.a.rather.long.address@subdomain.example.com has been confirmed.',
      );
      await inspect(page, 'emails-confirmed');

      await page.goto(`${base}/-/profile/notifications`);
      await page.selectOption('#notification_email', 'fay.at.a.rather.long.address@subdomain.example.com');
      await press(page, 'Save changes');
      expect(await page.inputValue('#notification_email')).toBe('fay.at.a.rather.long.address@subdomain.example.com');

      // Remove: a confirm page first.
      await page.goto(`${base}/-/profile/emails`);
      await Promise.all([page.waitForNavigation(), page.getByRole('link', { name: 'Remove' }).click()]);
      await inspect(page, 'emails-remove-confirm');
    } finally {
      await context.close();
    }
  });
});
