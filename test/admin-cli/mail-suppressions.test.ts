// `lanyard-admin mail suppressions list|remove` in-process on real PostgreSQL: an 80-column table
// and exact JSON, removal audited, an address that is not suppressed refused with nothing changed.
import { beforeAll, beforeEach, describe, expect, it } from 'vitest';
import type { Db } from '../../service/db/schema';
import { recordSuppression } from '../../service/domain/mail/suppressions';
import { createTestDatabase, resetDatabase } from '../support/db';
import { ACTOR, expectUserError, runIn } from './support';

let db: Db;
beforeAll(async () => {
  ({ db } = await createTestDatabase());
});
beforeEach(async () => {
  await resetDatabase(db);
});

describe('mail suppressions', () => {
  it('list: newest first, at most 80 columns; --json carries the detail', async () => {
    expect((await runIn(db, ['mail', 'suppressions', 'list'])).out).toBe('(none)\n');
    await recordSuppression(db, {
      address: 'Gone@Example.com',
      reason: 'bounce',
      source: 'smtp',
      detail: 'smtp://127.0.0.1:2525: EENVELOPE at RCPT TO: 550 5.1.1 No such user here',
    });
    await db
      .updateTable('mail_suppressions')
      .set({ created_at: new Date('2026-11-20T10:00:00Z') })
      .execute();
    await recordSuppression(db, {
      address: 'someone.with.a.rather.long.address@a-subdomain.example.com',
      reason: 'complaint',
      source: 'ses',
      detail: 'abuse',
    });
    const run = await runIn(db, ['mail', 'suppressions', 'list']);
    expect(run.code, run.err).toBe(0);
    const lines = run.out.trimEnd().split('\n');
    const today = new Date().toISOString().slice(0, 10);
    expect(lines).toEqual([
      'ADDRESS                                           REASON     SOURCE  SINCE',
      `someone.with.a.rather.long.address@a-subdomain.…  complaint  ses     ${today}`,
      'gone@example.com                                  bounce     smtp    2026-11-20',
    ]);
    for (const line of lines) expect(line.length).toBeLessThanOrEqual(80);
    const json = await runIn(db, ['mail', 'suppressions', 'list', '--json']);
    expect(json.json).toEqual([
      {
        address: 'someone.with.a.rather.long.address@a-subdomain.example.com',
        reason: 'complaint',
        source: 'ses',
        detail: 'abuse',
        created_at: expect.stringMatching(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/),
      },
      {
        address: 'gone@example.com',
        reason: 'bounce',
        source: 'smtp',
        detail: 'smtp://127.0.0.1:2525: EENVELOPE at RCPT TO: 550 5.1.1 No such user here',
        created_at: '2026-11-20T10:00:00.000Z',
      },
    ]);
  });

  it('remove: mail goes to the address again, audited; an address not suppressed is refused', async () => {
    await recordSuppression(db, { address: 'gone@example.com', reason: 'bounce', source: 'smtp' });
    const run = await runIn(db, ['mail', 'suppressions', 'remove', 'GONE@example.com', '--json']);
    expect(run.code, run.err).toBe(0);
    expect(run.json).toEqual({ address: 'gone@example.com', removed: true });
    expect((await runIn(db, ['mail', 'suppressions', 'list', '--json'])).json).toEqual([]);
    const audit = await db
      .selectFrom('audit_events')
      .select(['actor', 'action', 'target_id', 'details'])
      .where('action', '=', 'mail_suppression.clear')
      .execute();
    expect(audit).toEqual([
      { actor: ACTOR, action: 'mail_suppression.clear', target_id: 'gone@example.com', details: { reason: 'bounce' } },
    ]);
    const row = await db.selectFrom('mail_suppressions').select(['cleared_by']).executeTakeFirstOrThrow();
    expect(row.cleared_by).toBe(ACTOR);
    await expectUserError(
      db,
      ['mail', 'suppressions', 'remove', 'gone@example.com'],
      /^lanyard-admin: gone@example\.com is not suppressed$/,
    );
  });
});
