// /-/profile/emails shows a suppressed address (bounced, complained) with "Resume e-mail": the
// person clears their own address's suppression (CSRF-checked, audited), never someone else's.
import { beforeEach, describe, expect, it } from 'vitest';
import { listSuppressions, recordSuppression } from '../../service/domain/mail/suppressions';
import { resetDatabase } from '../support/db';
import { WebClient } from '../oauth/support/browser-like';
import { makeUser, PASSWORD, useFixture } from '../oauth/support/harness';

const f = useFixture();
let web: WebClient;

beforeEach(async () => {
  await resetDatabase(f.db);
  await makeUser(f.db, 'alice');
  await makeUser(f.db, 'bob');
  web = new WebClient(f.app);
  expect((await web.signIn('alice', PASSWORD)).statusCode).toBe(302);
});

const resumeAudits = () =>
  f.db
    .selectFrom('audit_events')
    .select(['actor', 'action', 'target_type', 'target_id', 'details', 'ip_address'])
    .where('action', '=', 'mail_suppression.clear')
    .execute();

describe('suppressed addresses on the e-mails page', () => {
  it('an unsuppressed address shows no badge and no button', async () => {
    const page = await web.get('/-/profile/emails');
    expect(page.statusCode).toBe(200);
    expect(page.body).not.toContain('Not receiving e-mail');
    expect(page.body).not.toContain('Resume e-mail');
  });

  it('shows why, and "Resume e-mail" clears it: 303, flash, audited', async () => {
    await recordSuppression(f.db, { address: 'ALICE@example.com', reason: 'bounce', source: 'smtp' });
    const page = await web.get('/-/profile/emails');
    expect(page.body).toContain('<span class="badge">Not receiving e-mail</span>');
    expect(page.body).toContain('Mail to this address bounced, so we stopped sending to it.');
    expect(page.body).toContain('<form method="post" action="/-/profile/emails/resume" class="inline-form">');
    expect(page.body).toContain('<input type="hidden" name="email" value="alice@example.com">');

    const res = await web.post('/-/profile/emails/resume', {
      authenticity_token: WebClient.csrf(page.body),
      email: 'alice@example.com',
    });
    expect([res.statusCode, res.headers.location]).toEqual([303, '/-/profile/emails']);
    expect(await listSuppressions(f.db)).toEqual([]);
    const after = await web.get('/-/profile/emails');
    expect(after.body).toContain('E-mail to alice@example.com resumed. If it bounces again, it stops again.');
    expect(after.body).not.toContain('Not receiving e-mail');
    expect(await resumeAudits()).toEqual([
      {
        actor: 'user:alice',
        action: 'mail_suppression.clear',
        target_type: 'email',
        target_id: 'alice@example.com',
        details: { reason: 'bounce' },
        ip_address: '127.0.0.1',
      },
    ]);
  });

  it("someone else's address → 404, a missing CSRF token → 422; nothing changed", async () => {
    await recordSuppression(f.db, { address: 'bob@example.com', reason: 'complaint', source: 'ses' });
    await recordSuppression(f.db, { address: 'alice@example.com', reason: 'complaint', source: 'ses' });
    const page = await web.get('/-/profile/emails');
    expect(page.body).toContain('Mail to this address was reported as spam, so we stopped sending to it.');
    const other = await web.post('/-/profile/emails/resume', {
      authenticity_token: WebClient.csrf(page.body),
      email: 'bob@example.com',
    });
    expect(other.statusCode).toBe(404);
    expect(other.body).toContain(
      '<div class="flash flash-alert" role="alert" id="flash-alert">E-mail to bob@example.com is not stopped on your account, so there is nothing to resume.</div>',
    );
    expect(other.body).not.toContain('suppressed');
    const noCsrf = await web.post('/-/profile/emails/resume', { email: 'alice@example.com' });
    expect(noCsrf.statusCode).toBe(422);
    expect((await listSuppressions(f.db)).map((s) => s.address).sort()).toEqual([
      'alice@example.com',
      'bob@example.com',
    ]);
    expect(await resumeAudits()).toEqual([]);
  });
});
