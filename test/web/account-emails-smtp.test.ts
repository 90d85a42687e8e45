// The account e-mails as a person receives them: the real app writes them to the outbox, the
// sender hands them to Lanyard's real SMTP transport, a real SMTP server (smtp-server) started here
// accepts them, and mailparser reads them. Checked by headers, both parts and the link — which is
// then followed to finish the job (a new password; a confirmed address).
import type { AddressInfo } from 'node:net';
import { simpleParser, type ParsedMail } from 'mailparser';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { drainOnce } from '../../service/mail/sender';
import { smtpTransport } from '../../service/mail/smtp-transport';
import { resetDatabase } from '../support/db';
import { type SmtpSink, startSmtpSink } from '../support/smtp-sink';
import { WebClient } from '../oauth/support/browser-like';
import { makeUser, PASSWORD, useFixture } from '../oauth/support/harness';

const f = useFixture();
let sink: SmtpSink;
let web: WebClient;

beforeAll(async () => {
  sink = await startSmtpSink();
  // Links are built on PUBLIC_URL: the port this app listens on.
  await f.app.listen({ host: '127.0.0.1', port: 0 });
  f.config.publicUrl = `http://127.0.0.1:${(f.app.server.address() as AddressInfo).port}`;
});
afterAll(() => sink.close());
beforeEach(async () => {
  await resetDatabase(f.db, ['service_keys']);
  sink.received.length = 0;
  await makeUser(f.db, 'alice');
  web = new WebClient(f.app);
});

/** Drain the outbox through SMTP to the sink; the messages as mailparser reads them. */
async function deliver(): Promise<Array<ParsedMail & { envelopeTo: string[] }>> {
  const transport = smtpTransport({ url: sink.url(), maxConnections: 1, timeoutMs: 5000 });
  try {
    const report = await drainOnce({
      db: f.db,
      transport,
      from: f.config.mail.from,
      maxAttempts: 3,
      concurrency: 1,
    });
    expect(report.failed).toBe(0);
  } finally {
    await transport.close();
  }
  const received = sink.received.splice(0);
  return Promise.all(received.map(async (r) => Object.assign(await simpleParser(r.raw), { envelopeTo: r.to })));
}

/** The message's one link into this site (the signature's home-page link aside), the same in both parts. */
function linkOf(mail: ParsedMail): URL {
  const home = `${f.config.publicUrl}/`;
  const inText = (mail.text?.match(/https?:\/\/\S+/g) ?? []).filter((l) => l !== home);
  const inHtml = [...String(mail.html).matchAll(/href="([^"]+)"/g)]
    .map((m) => m[1].replace(/&amp;/g, '&'))
    .filter((l) => l !== home);
  expect(inText).toHaveLength(1);
  expect(inHtml).toEqual(inText);
  return new URL(inText[0]);
}

async function submit(page: string, action: string, values: Record<string, string>) {
  const csrf = WebClient.csrf((await web.get(page)).body);
  return web.post(action, { authenticity_token: csrf, ...values });
}

describe('account e-mails over real SMTP', () => {
  it('forgot password: the mail arrives multipart, from MAIL_FROM, and its link sets the new password', async () => {
    await submit('/users/password/new', '/users/password', { 'user[email]': 'alice@example.com' });
    const [mail, ...rest] = await deliver();
    expect(rest).toEqual([]);
    expect(mail.envelopeTo).toEqual(['alice@example.com']);
    expect(mail.to).toMatchObject({ value: [{ address: 'alice@example.com' }] });
    expect(mail.from?.value[0].address).toBe(`noreply@127.0.0.1`);
    expect(mail.subject).toBe('Reset password instructions');
    expect(mail.headers.get('auto-submitted')).toBe('auto-generated');
    expect(mail.messageId).toMatch(/^<[^<>@\s]+@127\.0\.0\.1>$/);
    expect(mail.text).toMatch(/^Hi alice,\n/);
    expect(mail.html).toContain('<p style="margin:0 0 16px">Hi alice,</p>');
    const link = linkOf(mail);
    expect(link.pathname).toBe('/users/password/edit');
    const token = link.searchParams.get('reset_password_token')!;
    expect(token).toMatch(/^[0-9a-f]{64}$/);

    const form = await web.get(`${link.pathname}${link.search}`);
    expect(form.statusCode).toBe(200);
    const res = await web.post('/users/password/edit', {
      authenticity_token: WebClient.csrf(form.body),
      reset_password_token: token,
      'user[password]': 'from the mail, new',
      'user[password_confirmation]': 'from the mail, new',
    });
    expect([res.statusCode, res.headers.location]).toEqual([303, '/users/sign_in']);
    expect((await new WebClient(f.app).signIn('alice', 'from the mail, new')).statusCode).toBe(302);

    const [alert] = await deliver();
    expect([alert.envelopeTo, alert.subject]).toEqual([['alice@example.com'], 'Password reset']);
    expect(linkOf(alert).pathname).toBe('/users/password/new');
  });

  it('a new address: the link reaches the new address, the alert the primary one; the link confirms it', async () => {
    expect((await web.signIn('alice', PASSWORD)).statusCode).toBe(302);
    await submit('/-/profile/emails', '/-/profile/emails', { 'email[email]': 'alice@work.example' });
    const mails = await deliver();
    expect(mails.map((m) => [m.envelopeTo, m.subject])).toEqual([
      [['alice@work.example'], 'Confirmation instructions'],
      [['alice@example.com'], 'New email address added'],
    ]);
    expect(mails[1].text).toContain('The e-mail address alice@work.example was added to your account.');
    const link = linkOf(mails[0]);
    expect(link.pathname).toBe('/-/profile/emails/confirmation');
    const res = await new WebClient(f.app).get(`${link.pathname}${link.search}`);
    expect(res.statusCode).toBe(200);
    const row = await f.db.selectFrom('user_emails').select('confirmed_at').executeTakeFirstOrThrow();
    expect(row.confirmed_at).toBeInstanceOf(Date);
  });
});
