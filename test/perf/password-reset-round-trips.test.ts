// "The same answer whether or not the address exists — and roughly the same time" (issue 24):
// POST /users/password sends PostgreSQL the same statements, in the same order, for a known and
// an unknown address; the known one adds exactly the outbox row of its mail.
import type { FastifyInstance } from 'fastify';
import { beforeAll, describe, expect, it } from 'vitest';
import { buildTestApp } from '../support/app';
import { createTestDatabase } from '../support/db';
import { type CountingDb, countingDb } from '../support/statement-counter';
import { WebClient } from '../oauth/support/browser-like';
import { makeUser } from '../oauth/support/harness';

let app: FastifyInstance;
let counter: CountingDb;

beforeAll(async () => {
  const t = await createTestDatabase();
  counter = countingDb(t);
  app = await buildTestApp(counter.db);
  await makeUser(t.db, 'alice');
});

/** The statements of one reset request. */
async function statementsFor(email: string) {
  const web = new WebClient(app);
  const csrf = WebClient.csrf((await web.get('/users/password/new')).body);
  counter.reset();
  const res = await web.post('/users/password', { authenticity_token: csrf, 'user[email]': email });
  expect([res.statusCode, res.headers.location]).toEqual([303, '/users/sign_in']);
  return [...counter.statements];
}

describe('POST /users/password', () => {
  it('known and unknown addresses: the same statements but the known one’s outbox insert', async () => {
    await statementsFor('warm-up@example.com');
    const known = await statementsFor('alice@example.com');
    const unknown = await statementsFor('nobody@example.com');
    const outbox = known.filter((s) => s.startsWith('insert into "mail_outbox"'));
    expect(outbox).toHaveLength(1);
    expect(known.filter((s) => !s.startsWith('insert into "mail_outbox"'))).toEqual(unknown);
    expect(unknown.length).toBe(known.length - 1);
    expect(unknown).toHaveLength(6);
  });
});
