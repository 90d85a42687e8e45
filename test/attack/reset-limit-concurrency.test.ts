// The forgotten-password limits hold under concurrency (issue 22's rule applied to issue 24's
// limits): 50 reset requests for one account sent at once mail no more links than the per-account
// limit (5 an hour), and every request past it gets 429 with Retry-After.
import { sql } from 'kysely';
import type { FastifyInstance } from 'fastify';
import { beforeAll, describe, expect, it } from 'vitest';
import { WebClient } from '../oauth/support/browser-like';
import { makeUser } from '../oauth/support/harness';
import { buildTestApp } from '../support/app';
import { createTestDatabase, type TestDatabase } from '../support/db';

let t: TestDatabase;
let app: FastifyInstance;

beforeAll(async () => {
  t = await createTestDatabase();
  app = await buildTestApp(t.db);
  await makeUser(t.db, 'alice');
});

describe('50 concurrent reset requests for one account', () => {
  it('mail at most 5 links; the rest get 429 with Retry-After', async () => {
    const web = new WebClient(app);
    const csrf = WebClient.csrf((await web.get('/users/password/new')).body);
    const answers = await Promise.all(
      Array.from({ length: 50 }, () =>
        web.post('/users/password', { authenticity_token: csrf, 'user[email]': 'alice@example.com' }),
      ),
    );
    const statuses: Record<number, number> = {};
    for (const r of answers) statuses[r.statusCode] = (statuses[r.statusCode] ?? 0) + 1;
    expect(statuses).toEqual({ 303: 5, 429: 45 });
    for (const r of answers.filter((a) => a.statusCode === 429))
      expect(Number(r.headers['retry-after'])).toBeGreaterThan(0);
    const { rows } = await sql<{ n: string }>`
      select count(*) as n from mail_outbox where kind = 'password_reset' and to_address = 'alice@example.com'
    `.execute(t.db);
    expect(Number(rows[0].n)).toBe(5);
  });
});
