// Account e-mails through the real app (issue 24): forgotten passwords (/users/password/new →
// mailed link → /users/password/edit), the addresses page (/-/profile/emails: add, confirm by the
// mailed link, resend, remove, make primary), confirmed-only notification e-mails and
// email_verified, and the security alerts. Mail is asserted through the outbox rows the change
// wrote in its own transaction: recipient, subject, and the link in both parts.
import { sql } from 'kysely';
import { beforeEach, describe, expect, it } from 'vitest';
import { issueAccessToken } from '../../service/domain/oauth-tokens';
import { sha256Hex } from '../../service/domain/secrets';
import { addUserEmail } from '../../service/domain/users';
import { createGroup } from '../support/api-fixtures';
import { resetDatabase } from '../support/db';
import { WebClient } from '../oauth/support/browser-like';
import { makeApp, makeUser, PASSWORD, useFixture } from '../oauth/support/harness';

const f = useFixture();
let web: WebClient;
let alice: Awaited<ReturnType<typeof makeUser>>['user'];
const NEW_PASSWORD = 'a brand new passphrase';
const mailSettings = () => ({ publicUrl: f.config.publicUrl, from: f.config.mail.from });

beforeEach(async () => {
  await resetDatabase(f.db, ['service_keys']);
  alice = (await makeUser(f.db, 'alice')).user;
  await makeUser(f.db, 'bob');
  web = new WebClient(f.app);
});

const notice = (body: string) => /id="flash-notice">([^<]*)</.exec(body)?.[1];
const alert = (body: string) => /id="flash-alert">([^<]*)</.exec(body)?.[1];
const fieldError = (body: string, id: string) =>
  new RegExp(`id="${id}-error"><span class="visually-hidden">Error: </span>([^<]*)<`).exec(body)?.[1];
const decodeEntities = (s: string) =>
  s
    .replace(/&#39;/g, "'")
    .replace(/&quot;/g, '"')
    .replace(/&amp;/g, '&');

interface Mail {
  kind: string;
  to_address: string;
  subject: string;
  text_body: string;
  html_body: string;
}
const outbox = (): Promise<Mail[]> =>
  f.db
    .selectFrom('mail_outbox')
    .select(['kind', 'to_address', 'subject', 'text_body', 'html_body'])
    .orderBy('id')
    .execute();

/**
 * The one link of a message to a page of this site (the signature's link to the home page aside),
 * checked to be the same in both parts; returned as path + query.
 */
function linkIn(mail: Mail): string {
  const base = f.config.publicUrl;
  const inText = (mail.text_body.match(/https?:\/\/\S+/g) ?? []).filter((l) => l !== `${base}/`);
  const inHtml = [...mail.html_body.matchAll(/href="([^"]+)"/g)]
    .map((m) => decodeEntities(m[1]))
    .filter((l) => l !== `${base}/`);
  expect(inText).toHaveLength(1);
  expect(inHtml).toEqual(inText);
  expect(inText[0].startsWith(`${base}/`)).toBe(true);
  return inText[0].slice(base.length);
}

async function submit(page: string, action: string, values: Record<string, string | undefined>, client = web) {
  const csrf = WebClient.csrf((await client.get(page)).body);
  return client.post(action, { authenticity_token: csrf, ...values });
}

function expectSeeOther(res: { statusCode: number; headers: Record<string, unknown>; body: string }, location: string) {
  expect(res.statusCode).toBe(303);
  expect(res.headers.location).toBe(location);
  expect(res.body).toBe('');
}

const requestReset = (email: string, client = web) =>
  submit('/users/password/new', '/users/password', { 'user[email]': email }, client);

const CHECK_YOUR_MAIL =
  'If your e-mail address is confirmed on an account here, you will receive a link to reset your password in a few minutes.';

describe('forgot password', () => {
  it('the sign-in page links to it; the form asks for an e-mail address', async () => {
    const signIn = await web.get('/users/sign_in');
    expect(signIn.body).toContain('<a href="/users/password/new">Forgot your password?</a>');
    const page = await web.get('/users/password/new');
    expect(page.statusCode).toBe(200);
    expect(page.body).toContain('<form method="post" action="/users/password">');
    expect(page.body).toContain('name="user[email]"');
    expect(page.body).toContain('<a href="/users/sign_in">Back to sign in</a>');
  });

  it('a known address: 303 to sign in with the notice, one mail with a one-hour link, only its digest stored', async () => {
    const res = await requestReset('  ALICE@example.com ');
    expectSeeOther(res, '/users/sign_in');
    expect(notice((await web.get('/users/sign_in')).body)).toBe(CHECK_YOUR_MAIL);
    const mails = await outbox();
    expect(mails.map((m) => [m.kind, m.to_address, m.subject])).toEqual([
      ['password_reset', 'alice@example.com', 'Reset password instructions'],
    ]);
    expect(mails[0].text_body).toMatch(/^Hi alice,\n/);
    const link = linkIn(mails[0]);
    const token = /^\/users\/password\/edit\?reset_password_token=([0-9a-f]{64})$/.exec(link)![1];
    const row = await f.db
      .selectFrom('password_reset_tokens')
      .select(['user_id', 'token_digest', sql<number>`extract(epoch from expires_at - now())`.as('left')])
      .executeTakeFirstOrThrow();
    expect(row.user_id).toBe(alice.id);
    expect(row.token_digest).toBe(sha256Hex(token));
    expect(Number(row.left)).toBeGreaterThan(3590);
    expect(Number(row.left)).toBeLessThanOrEqual(3600);
  });

  it.each([
    ['', 'Enter an e-mail address'],
    ['   ', 'Enter an e-mail address'],
    ['alice', 'Enter an e-mail address in the correct format, like name@example.com'],
  ])('no address to send to (%j) → 422 "%s" at the field; nothing sent, nothing counted', async (email, message) => {
    const res = await requestReset(email);
    expect(res.statusCode).toBe(422);
    expect(fieldError(res.body, 'user_email')).toBe(message);
    expect(res.body).toContain(
      `<h2 id="error-summary-title">There is a problem</h2><ul><li><a href="#user_email">${message}</a></li></ul>`,
    );
    expect(res.body).toContain('aria-invalid="true" aria-describedby="user_email-error"');
    expect(await outbox()).toEqual([]);
    expect(await f.db.selectFrom('password_reset_tokens').select('user_id').execute()).toEqual([]);
    expect(await f.db.selectFrom('rate_limit_counters').select('key').execute()).toEqual([]);
  });

  it('an unknown address gets the same answer and nothing is written but the counters', async () => {
    const known = await requestReset('alice@example.com');
    const other = new WebClient(f.app);
    const unknown = await requestReset('nobody@example.com', other);
    expect([unknown.statusCode, unknown.headers.location, unknown.body]).toEqual([
      known.statusCode,
      known.headers.location,
      known.body,
    ]);
    expect(Object.keys(unknown.headers).sort()).toEqual(Object.keys(known.headers).sort());
    expect(notice((await other.get('/users/sign_in')).body)).toBe(CHECK_YOUR_MAIL);
    expect((await outbox()).map((m) => m.to_address)).toEqual(['alice@example.com']);
    expect(await f.db.selectFrom('password_reset_tokens').select('user_id').execute()).toEqual([{ user_id: alice.id }]);
  });

  it('mails a confirmed secondary address, never an unconfirmed one, nor a blocked account', async () => {
    await addUserEmail(f.db, 'alice', 'alice@work.example');
    await addUserEmail(f.db, 'alice', 'alice@home.example', 'test', { confirmed: false, mail: mailSettings() });
    await makeUser(f.db, 'carol', { blocked: true });
    await f.db.deleteFrom('mail_outbox').execute();
    for (const email of ['alice@work.example', 'alice@home.example', 'carol@example.com'])
      expectSeeOther(await requestReset(email, new WebClient(f.app)), '/users/sign_in');
    expect((await outbox()).map((m) => [m.kind, m.to_address])).toEqual([['password_reset', 'alice@work.example']]);
  });

  it('a newer request makes the older link useless', async () => {
    await requestReset('alice@example.com');
    await requestReset('alice@example.com');
    const [first, second] = (await outbox()).map(linkIn);
    expect(first).not.toBe(second);
    const old = await web.get(first);
    expect(old.statusCode).toBe(404);
    expect(alert(old.body)).toBe(
      'This password reset link is invalid, has expired or has already been used. Nothing was changed.',
    );
    expect((await web.get(second)).statusCode).toBe(200);
  });

  it('limited per account: the sixth request in an hour is 429 with Retry-After and a way back; unknown addresses alike', async () => {
    for (const email of ['alice@example.com', 'nobody@example.com']) {
      const client = new WebClient(f.app);
      for (let i = 0; i < 5; i++) expectSeeOther(await requestReset(email, client), '/users/sign_in');
      const res = await requestReset(email, client);
      expect(res.statusCode).toBe(429);
      const retryAfter = Number(res.headers['retry-after']);
      expect(retryAfter).toBeGreaterThan(3500);
      expect(retryAfter).toBeLessThanOrEqual(3600);
      expect(alert(res.body)).toBe('Too many password reset requests. Try again in 60 minutes.');
      expect(res.body).toContain('<a href="/users/sign_in">Back to sign in</a>');
      await f.db.deleteFrom('rate_limit_counters').where('key', 'like', 'reset:addr:%').execute();
    }
    expect((await outbox()).length).toBe(5);
  });

  it('limited per client address: the 21st request from one address is 429, whatever the e-mail', async () => {
    for (let i = 0; i < 20; i++) expectSeeOther(await requestReset(`someone${i}@example.com`), '/users/sign_in');
    const res = await requestReset('alice@example.com');
    expect(res.statusCode).toBe(429);
    expect(Number(res.headers['retry-after'])).toBeGreaterThan(3500);
    expect(await outbox()).toEqual([]);
  });

  it('without a CSRF token: 422, nothing sent', async () => {
    await web.get('/users/password/new');
    const res = await web.post('/users/password', { 'user[email]': 'alice@example.com' });
    expect(res.statusCode).toBe(422);
    expect(await outbox()).toEqual([]);
  });

  it('sets the new password: every session ends, the old password stops working, an alert goes out, the link is spent', async () => {
    const signedIn = new WebClient(f.app);
    expect((await signedIn.signIn('alice', PASSWORD)).statusCode).toBe(302);
    await f.db.updateTable('users').set({ failed_attempts: 9 }).where('id', '=', alice.id).execute();
    await requestReset('alice@example.com');
    const link = linkIn((await outbox())[0]);
    const form = await web.get(link);
    expect(form.statusCode).toBe(200);
    expect(form.body).toContain('<form method="post" action="/users/password/edit">');
    const token = new URL(link, 'http://x').searchParams.get('reset_password_token')!;
    expect(form.body).toContain(`<input type="hidden" name="reset_password_token" value="${token}">`);

    const res = await web.post('/users/password/edit', {
      authenticity_token: WebClient.csrf(form.body),
      reset_password_token: token,
      'user[password]': NEW_PASSWORD,
      'user[password_confirmation]': NEW_PASSWORD,
    });
    expectSeeOther(res, '/users/sign_in');
    expect(notice((await web.get('/users/sign_in')).body)).toBe(
      'Your password has been changed. Sign in with your new password.',
    );
    // The other browser was signed out.
    const after = await signedIn.get('/-/profile/emails');
    expect([after.statusCode, after.headers.location]).toEqual([302, '/users/sign_in']);
    expect(await f.db.selectFrom('web_sessions').select('id_digest').where('user_id', '=', alice.id).execute()).toEqual(
      [],
    );
    expect(await f.db.selectFrom('password_reset_tokens').select('user_id').execute()).toEqual([]);
    expect(
      await f.db.selectFrom('users').select(['failed_attempts', 'locked_until']).where('id', '=', alice.id).execute(),
    ).toEqual([{ failed_attempts: 0, locked_until: null }]);
    expect((await new WebClient(f.app).signIn('alice', PASSWORD)).statusCode).toBe(401);
    expect((await new WebClient(f.app).signIn('alice', NEW_PASSWORD)).statusCode).toBe(302);
    const mails = await outbox();
    expect(mails.map((m) => [m.kind, m.to_address, m.subject])).toEqual([
      ['password_reset', 'alice@example.com', 'Reset password instructions'],
      ['security_alert.password_reset', 'alice@example.com', 'Password reset'],
    ]);
    expect(
      await f.db.selectFrom('audit_events').select('action').where('action', '=', 'user.reset_password').execute(),
    ).toHaveLength(1);

    // Used once: the same link is now a clear page, and posting it again changes nothing.
    expect((await web.get(link)).statusCode).toBe(404);
    const again = await web.post('/users/password/edit', {
      authenticity_token: WebClient.csrf((await web.get('/users/password/new')).body),
      reset_password_token: token,
      'user[password]': 'yet another password',
      'user[password_confirmation]': 'yet another password',
    });
    expect(again.statusCode).toBe(404);
    expect((await new WebClient(f.app).signIn('alice', NEW_PASSWORD)).statusCode).toBe(302);
  });

  it('one link used twice at once: exactly one succeeds', async () => {
    await requestReset('alice@example.com');
    const link = linkIn((await outbox())[0]);
    const token = new URL(link, 'http://x').searchParams.get('reset_password_token')!;
    const clients = [new WebClient(f.app), new WebClient(f.app)];
    const csrfs = await Promise.all(clients.map(async (c) => WebClient.csrf((await c.get(link)).body)));
    const results = await Promise.all(
      clients.map((c, i) =>
        c.post('/users/password/edit', {
          authenticity_token: csrfs[i],
          reset_password_token: token,
          'user[password]': `${NEW_PASSWORD} ${i}`,
          'user[password_confirmation]': `${NEW_PASSWORD} ${i}`,
        }),
      ),
    );
    expect(results.map((r) => r.statusCode).sort()).toEqual([303, 404]);
    const winner = results.findIndex((r) => r.statusCode === 303);
    expect((await new WebClient(f.app).signIn('alice', `${NEW_PASSWORD} ${winner}`)).statusCode).toBe(302);
    expect((await outbox()).filter((m) => m.kind === 'security_alert.password_reset')).toHaveLength(1);
  });

  it.each([
    ['short', 'short', 'user_password', 'Password must be 8 characters or more'],
    ['', '', 'user_password', 'Enter a new password'],
    [
      'long enough password',
      'another password',
      'user_password_confirmation',
      'Enter the same password in both new password fields',
    ],
  ])(
    'a bad new password (%s / %s) → 422 with the field error; the link still works',
    async (pw, confirmation, field, message) => {
      await requestReset('alice@example.com');
      const link = linkIn((await outbox())[0]);
      const form = await web.get(link);
      const token = new URL(link, 'http://x').searchParams.get('reset_password_token')!;
      const res = await web.post('/users/password/edit', {
        authenticity_token: WebClient.csrf(form.body),
        reset_password_token: token,
        'user[password]': pw,
        'user[password_confirmation]': confirmation,
      });
      expect(res.statusCode).toBe(422);
      expect(fieldError(res.body, field)).toBe(message);
      expect(res.body).toContain(
        `<h2 id="error-summary-title">There is a problem</h2><ul><li><a href="#${field}">${message}</a></li></ul>`,
      );
      expect((await new WebClient(f.app).signIn('alice', PASSWORD)).statusCode).toBe(302);
      expect((await web.get(link)).statusCode).toBe(200);
    },
  );

  it.each([
    ['tampered', (t: string) => `${t.slice(0, -1)}${t.endsWith('0') ? '1' : '0'}`],
    ['malformed', () => 'not-a-token'],
    ['empty', () => ''],
  ])('a %s token → 404 page, nothing changed', async (_name, mangle) => {
    await requestReset('alice@example.com');
    const token = new URL(linkIn((await outbox())[0]), 'http://x').searchParams.get('reset_password_token')!;
    const page = await web.get(`/users/password/edit?reset_password_token=${encodeURIComponent(mangle(token))}`);
    expect(page.statusCode).toBe(404);
    expect(page.body).toContain('<a href="/users/password/new">Ask for a new link</a>');
    const res = await web.post('/users/password/edit', {
      authenticity_token: WebClient.csrf((await web.get('/users/password/new')).body),
      reset_password_token: mangle(token),
      'user[password]': NEW_PASSWORD,
      'user[password_confirmation]': NEW_PASSWORD,
    });
    expect(res.statusCode).toBe(404);
    expect((await new WebClient(f.app).signIn('alice', PASSWORD)).statusCode).toBe(302);
    expect(await f.db.selectFrom('password_reset_tokens').select('user_id').execute()).toHaveLength(1);
  });

  it('an expired link (over an hour old) → 404 page, nothing changed', async () => {
    await requestReset('alice@example.com');
    const link = linkIn((await outbox())[0]);
    await f.db
      .updateTable('password_reset_tokens')
      .set({ expires_at: sql<Date>`now() - interval '1 second'` })
      .execute();
    expect((await web.get(link)).statusCode).toBe(404);
    const res = await web.post('/users/password/edit', {
      authenticity_token: WebClient.csrf((await web.get('/users/password/new')).body),
      reset_password_token: new URL(link, 'http://x').searchParams.get('reset_password_token')!,
      'user[password]': NEW_PASSWORD,
      'user[password_confirmation]': NEW_PASSWORD,
    });
    expect(res.statusCode).toBe(404);
    expect((await new WebClient(f.app).signIn('alice', PASSWORD)).statusCode).toBe(302);
  });

  it('a password change on the password page makes an outstanding reset link useless', async () => {
    await requestReset('alice@example.com');
    const link = linkIn((await outbox())[0]);
    await web.signIn('alice', PASSWORD);
    const res = await submit('/-/user_settings/password/edit', '/-/user_settings/password', {
      'user[password]': PASSWORD,
      'user[new_password]': NEW_PASSWORD,
      'user[password_confirmation]': NEW_PASSWORD,
    });
    expect(res.statusCode).toBe(303);
    expect((await new WebClient(f.app).get(link)).statusCode).toBe(404);
  });
});

describe('e-mail addresses page', () => {
  const EMAILS = '/-/profile/emails';
  const add = (email: string) => submit(EMAILS, EMAILS, { 'email[email]': email });
  const rows = () =>
    f.db
      .selectFrom('user_emails')
      .select(['id', 'user_id', 'email', 'confirmed_at', 'confirmation_digest'])
      .orderBy('id')
      .execute();

  beforeEach(async () => {
    expect((await web.signIn('alice', PASSWORD)).statusCode).toBe(302);
  });

  it('lists the primary address as confirmed, and is in the account navigation', async () => {
    const page = await web.get(EMAILS);
    expect(page.statusCode).toBe(200);
    expect(page.body).toContain('<a href="/-/profile/emails" aria-current="page">Emails</a>');
    expect(page.body).toContain(
      '<tr id="email-primary"><td data-label="Address" class="address">alice@example.com</td><td data-label="Status"><span class="badge">Primary</span><span class="badge">Confirmed</span></td>',
    );
  });

  it('signed out → sign in first', async () => {
    const res = await new WebClient(f.app).get(EMAILS);
    expect([res.statusCode, res.headers.location]).toEqual([302, '/users/sign_in']);
  });

  it('adds an unconfirmed address: the link goes to it, the alert to the primary address', async () => {
    expectSeeOther(await add(' Alice.Work@example.com '), EMAILS);
    const page = await web.get(EMAILS);
    expect(notice(page.body)).toBe(
      'We sent a confirmation link to Alice.Work@example.com. Follow it to confirm the address.',
    );
    const [row] = await rows();
    expect(row).toMatchObject({ user_id: alice.id, email: 'Alice.Work@example.com', confirmed_at: null });
    expect(page.body).toContain(`<tr id="email-${row.id}">`);
    expect(page.body).toContain('<span class="badge">Unconfirmed</span>');
    const mails = await outbox();
    expect(mails.map((m) => [m.kind, m.to_address, m.subject])).toEqual([
      ['email_confirmation', 'Alice.Work@example.com', 'Confirmation instructions'],
      ['security_alert.email_added', 'alice@example.com', 'New email address added'],
    ]);
    const token = /^\/-\/profile\/emails\/confirmation\?confirmation_token=([0-9a-f]{64})$/.exec(linkIn(mails[0]))![1];
    expect(row.confirmation_digest).toBe(sha256Hex(token));
    expect(mails[1].text_body).toContain('The e-mail address Alice.Work@example.com was added to your account.');
    expect(mails[1].text_body).not.toContain('confirmation_token');
  });

  it.each([
    ['not-an-address', 'Enter an e-mail address in the correct format, like name@example.com'],
    ['two@example.com, three@example.com', 'Enter an e-mail address in the correct format, like name@example.com'],
    ['Name <x@example.com>', 'Enter an e-mail address in the correct format, like name@example.com'],
    [`${'a'.repeat(243)}@example.com`, 'E-mail address must be 254 characters or fewer'],
    ['', 'Enter an e-mail address'],
    ['bob@example.com', 'That e-mail address is already used by an account. Enter a different e-mail address'],
    ['ALICE@example.com', 'That e-mail address is already used by an account. Enter a different e-mail address'],
  ])('bad address %j → 422 "%s", nothing changed', async (email, message) => {
    const res = await add(email);
    expect(res.statusCode).toBe(422);
    expect(fieldError(res.body, 'email_email')).toBe(message);
    expect(res.body).toContain(
      `<h2 id="error-summary-title">There is a problem</h2><ul><li><a href="#email_email">${message}</a></li></ul>`,
    );
    expect(res.body).toContain('aria-invalid="true" aria-describedby="email_email-hint email_email-error"');
    expect(await rows()).toEqual([]);
    expect(await outbox()).toEqual([]);
  });

  it('another account’s secondary address is taken too', async () => {
    await addUserEmail(f.db, 'bob', 'bob@work.example');
    const res = await add('BOB@work.example');
    expect(res.statusCode).toBe(422);
    expect(fieldError(res.body, 'email_email')).toBe(
      'That e-mail address is already used by an account. Enter a different e-mail address',
    );
  });

  it('confirms by the mailed link (signed in: back to the page), once; the address can then be primary', async () => {
    await add('alice@work.example');
    const link = linkIn((await outbox())[0]);
    const res = await web.get(link);
    expectSeeOther(res, EMAILS);
    const page = await web.get(EMAILS);
    expect(notice(page.body)).toBe('alice@work.example has been confirmed.');
    const [row] = await rows();
    expect(row.confirmed_at).toBeInstanceOf(Date);
    expect(row.confirmation_digest).toBeNull();
    expect(page.body).toContain(`action="/-/profile/emails/${row.id}/primary"`);

    const again = await new WebClient(f.app).get(link);
    expect(again.statusCode).toBe(404);
    expect(alert(again.body)).toBe(
      'This confirmation link is invalid or has expired, or its address was removed or already confirmed.',
    );
  });

  it('confirms signed out too (a page saying so, with a way to sign in)', async () => {
    await add('alice@work.example');
    const res = await new WebClient(f.app).get(linkIn((await outbox())[0]));
    expect(res.statusCode).toBe(200);
    expect(notice(res.body)).toBe('alice@work.example has been confirmed.');
    expect(res.body).toContain('<a href="/users/sign_in">Sign in</a>');
  });

  it('a tampered, expired, or removed address’s link → 404 page, nothing confirmed', async () => {
    await add('alice@work.example');
    const link = linkIn((await outbox())[0]);
    const tampered = link.replace(/.$/, (c) => (c === '0' ? '1' : '0'));
    expect((await web.get(tampered)).statusCode).toBe(404);
    expect((await web.get(`${EMAILS}/confirmation`)).statusCode).toBe(404);
    await f.db
      .updateTable('user_emails')
      .set({ confirmation_sent_at: sql<Date>`now() - interval '25 hours'` })
      .execute();
    expect((await web.get(link)).statusCode).toBe(404);
    expect((await rows())[0].confirmed_at).toBeNull();

    await f.db.updateTable('user_emails').set({ confirmation_sent_at: new Date() }).execute();
    const [row] = await rows();
    const confirm = await web.get(`${EMAILS}/${row.id}/delete`);
    expect(confirm.statusCode).toBe(200);
    expect(await rows()).toHaveLength(1);
    expectSeeOther(
      await web.post(`${EMAILS}/${row.id}/delete`, { authenticity_token: WebClient.csrf(confirm.body) }),
      EMAILS,
    );
    expect(notice((await web.get(EMAILS)).body)).toBe('Removed alice@work.example.');
    expect(await rows()).toEqual([]);
    expect((await web.get(link)).statusCode).toBe(404);
  });

  it('resend: a new link, the old one stops working', async () => {
    await add('alice@work.example');
    const [row] = await rows();
    const res = await submit(EMAILS, `${EMAILS}/${row.id}/resend_confirmation_instructions`, {});
    expectSeeOther(res, EMAILS);
    expect(notice((await web.get(EMAILS)).body)).toBe('We sent a new confirmation link to alice@work.example.');
    const confirmations = (await outbox()).filter((m) => m.kind === 'email_confirmation');
    expect(confirmations.map((m) => m.to_address)).toEqual(['alice@work.example', 'alice@work.example']);
    const [first, second] = confirmations.map(linkIn);
    expect((await web.get(first)).statusCode).toBe(404);
    expectSeeOther(await web.get(second), EMAILS);
    // Confirmed now: resending is refused.
    const refused = await submit(EMAILS, `${EMAILS}/${row.id}/resend_confirmation_instructions`, {});
    expect(refused.statusCode).toBe(409);
    expect(alert(refused.body)).toBe('alice@work.example is already confirmed.');
  });

  it('at most 10 confirmation mails an hour per account (429 + Retry-After), nothing changed past it', async () => {
    await add('alice@work.example');
    const [row] = await rows();
    for (let i = 0; i < 9; i++)
      expectSeeOther(await submit(EMAILS, `${EMAILS}/${row.id}/resend_confirmation_instructions`, {}), EMAILS);
    const digest = (await rows())[0].confirmation_digest;
    for (const res of [
      await submit(EMAILS, `${EMAILS}/${row.id}/resend_confirmation_instructions`, {}),
      await add('alice@home.example'),
    ]) {
      expect(res.statusCode).toBe(429);
      expect(Number(res.headers['retry-after'])).toBeGreaterThan(3500);
      expect(alert(res.body)).toBe('Too many confirmation e-mails. Try again in 60 minutes.');
    }
    expect((await rows()).map((r) => [r.email, r.confirmation_digest])).toEqual([['alice@work.example', digest]]);
    expect((await outbox()).filter((m) => m.kind === 'email_confirmation')).toHaveLength(10);
  });

  it('make primary: refused while unconfirmed; once confirmed the two trade places and sign-in uses the new one', async () => {
    await add('alice@work.example');
    const [row] = await rows();
    const refused = await submit(EMAILS, `${EMAILS}/${row.id}/primary`, {});
    expect(refused.statusCode).toBe(409);
    expect(alert(refused.body)).toBe('alice@work.example must be confirmed before it can be your primary address.');
    expect(
      (await f.db.selectFrom('users').select('email').where('id', '=', alice.id).executeTakeFirstOrThrow()).email,
    ).toBe('alice@example.com');

    await web.get(linkIn((await outbox())[0]));
    expectSeeOther(await submit(EMAILS, `${EMAILS}/${row.id}/primary`, {}), EMAILS);
    expect(notice((await web.get(EMAILS)).body)).toBe('alice@work.example is now your primary address.');
    const user = await f.db
      .selectFrom('users')
      .select(['email', 'confirmed_at'])
      .where('id', '=', alice.id)
      .executeTakeFirstOrThrow();
    expect(user.email).toBe('alice@work.example');
    expect(user.confirmed_at).toBeInstanceOf(Date);
    expect((await rows()).map((r) => [r.email, r.confirmed_at instanceof Date])).toEqual([['alice@example.com', true]]);
    expect((await new WebClient(f.app).signIn('alice@work.example', PASSWORD)).statusCode).toBe(302);
    const changed = (await outbox()).filter((m) => m.kind === 'security_alert.primary_email_changed');
    expect(changed.map((m) => [m.to_address, m.subject])).toEqual([['alice@example.com', 'Email Changed']]);
    expect(changed[0].text_body).toContain('The primary e-mail address of your account is now alice@work.example;');
  });

  it('another user’s address id → 404 for every action, nothing changed', async () => {
    await addUserEmail(f.db, 'bob', 'bob@work.example', 'test', { confirmed: false, mail: mailSettings() });
    const [row] = await rows();
    expect((await web.get(`${EMAILS}/${row.id}/delete`)).statusCode).toBe(404);
    for (const action of ['delete', 'primary', 'resend_confirmation_instructions']) {
      const res = await submit(EMAILS, `${EMAILS}/${row.id}/${action}`, {});
      expect(res.statusCode).toBe(404);
      expect(alert(res.body)).toBe('That e-mail address was not found.');
    }
    expect(await rows()).toEqual([row]);
  });

  it('without a CSRF token: 422, nothing added', async () => {
    await web.get(EMAILS);
    const res = await web.post(EMAILS, { 'email[email]': 'alice@work.example' });
    expect(res.statusCode).toBe(422);
    expect(await rows()).toEqual([]);
  });
});

describe('only confirmed addresses receive notifications', () => {
  beforeEach(async () => {
    await web.signIn('alice', PASSWORD);
    await submit('/-/profile/emails', '/-/profile/emails', { 'email[email]': 'alice@work.example' });
  });

  const api = async (method: 'GET' | 'PUT', url: string) => {
    const { application } = await makeApp(f.db, { scopes: 'api' });
    const { accessToken } = await issueAccessToken(f.db, {
      applicationId: application.id,
      userId: alice.id,
      scopes: ['api'],
      withRefreshToken: false,
    });
    return f.app.inject({ method, url: `/api/v4${url}`, headers: { authorization: `Bearer ${accessToken}` } });
  };

  it('global and group notification e-mail: unconfirmed refused (400, nothing changed), confirmed accepted', async () => {
    await createGroup(f.db, { path: 'team', visibility: 'public' });
    for (const url of ['/notification_settings', '/groups/team/notification_settings']) {
      const res = await api('PUT', `${url}?notification_email=alice@work.example`);
      expect(res.statusCode).toBe(400);
      expect(res.json()).toEqual({ message: { notification_email: ['must be an email you have verified'] } });
    }
    expect(await f.db.selectFrom('notification_settings').select('id').execute()).toEqual([]);

    await web.get(linkIn((await outbox())[0]));
    const res = await api('PUT', '/notification_settings?notification_email=alice@work.example');
    expect(res.statusCode).toBe(200);
    expect(res.json()).toEqual({ level: 'participating', notification_email: 'alice@work.example' });
    const group = await api('PUT', '/groups/team/notification_settings?notification_email=alice@work.example');
    expect(group.statusCode).toBe(200);
  });

  it('removing the notification address falls back to the primary one', async () => {
    await web.get(linkIn((await outbox())[0]));
    expect((await api('PUT', '/notification_settings?notification_email=alice@work.example')).statusCode).toBe(200);
    const [row] = await f.db.selectFrom('user_emails').select('id').execute();
    await submit(`/-/profile/emails/${row.id}/delete`, `/-/profile/emails/${row.id}/delete`, {});
    const res = await api('GET', '/notification_settings');
    expect(res.json()).toEqual({ level: 'participating', notification_email: 'alice@example.com' });
  });

  it('an unconfirmed primary address is not one either, and email_verified says so', async () => {
    const { application } = await makeApp(f.db, { scopes: 'openid email' });
    const { accessToken } = await issueAccessToken(f.db, {
      applicationId: application.id,
      userId: alice.id,
      scopes: ['openid', 'email'],
      withRefreshToken: false,
    });
    const userinfo = () =>
      f.app.inject({ method: 'GET', url: '/oauth/userinfo', headers: { authorization: `Bearer ${accessToken}` } });
    expect((await userinfo()).json()).toEqual({
      sub: String(alice.id),
      email: 'alice@example.com',
      email_verified: true,
    });
    await f.db.updateTable('users').set({ confirmed_at: null }).where('id', '=', alice.id).execute();
    expect((await userinfo()).json()).toEqual({
      sub: String(alice.id),
      email: 'alice@example.com',
      email_verified: false,
    });
    const res = await api('PUT', '/notification_settings?notification_email=alice@example.com');
    expect(res.statusCode).toBe(400);
  });
});

describe('security alerts to the primary address', () => {
  const alerts = async () =>
    (await outbox()).filter((m) => m.kind.startsWith('security_alert.')).map((m) => [m.kind, m.to_address, m.subject]);

  it('password changed on the password page', async () => {
    await web.signIn('alice', PASSWORD);
    await submit('/-/user_settings/password/edit', '/-/user_settings/password', {
      'user[password]': PASSWORD,
      'user[new_password]': NEW_PASSWORD,
      'user[password_confirmation]': NEW_PASSWORD,
    });
    expect(await alerts()).toEqual([['security_alert.password_changed', 'alice@example.com', 'Password changed']]);
    const [mail] = await outbox();
    expect(mail.text_body).toContain('The password of your account was changed.');
    expect(mail.text_body).toContain(`${f.config.publicUrl}/users/password/new`);
  });

  it('a wrong current password sends nothing', async () => {
    await web.signIn('alice', PASSWORD);
    const res = await submit('/-/user_settings/password/edit', '/-/user_settings/password', {
      'user[password]': 'wrong password!',
      'user[new_password]': NEW_PASSWORD,
      'user[password_confirmation]': NEW_PASSWORD,
    });
    expect(res.statusCode).toBe(422);
    expect(await outbox()).toEqual([]);
  });

  it('two-factor: regenerating recovery codes and turning it off', async () => {
    const dana = await makeUser(f.db, 'dana', { twoFactor: true });
    await web.signIn('dana', PASSWORD, () => dana.otp());
    const TFA = '/-/profile/two_factor_auth';
    expect((await submit(TFA, `${TFA}/codes`, { current_password: PASSWORD })).statusCode).toBe(303);
    expect((await submit(TFA, `${TFA}/disable`, { current_password: PASSWORD })).statusCode).toBe(303);
    expect(await alerts()).toEqual([
      ['security_alert.recovery_codes_regenerated', 'dana@example.com', 'Recovery codes regenerated'],
      ['security_alert.two_factor_disabled', 'dana@example.com', 'Two-factor authentication disabled'],
    ]);
  });

  it('a personal access token created', async () => {
    await web.signIn('alice', PASSWORD);
    const PATS = '/-/user_settings/personal_access_tokens';
    const day = new Date(Date.now() + 30 * 86_400_000).toISOString().slice(0, 10);
    const res = await submit(PATS, PATS, {
      'personal_access_token[name]': 'ci <script>',
      'personal_access_token[expires_at]': day,
      'personal_access_token[scopes][]': 'read_user',
    });
    expect(res.statusCode).toBe(303);
    expect(await alerts()).toEqual([
      [
        'security_alert.personal_access_token_created',
        'alice@example.com',
        'A new personal access token has been created',
      ],
    ]);
    const [mail] = await outbox();
    expect(mail.text_body).toContain('A personal access token named "ci <script>" was created for your account.');
    expect(mail.html_body).toContain('named &quot;ci &lt;script&gt;&quot; was created');
    expect(mail.html_body).not.toContain('<script>');
  });
});
