// `lanyard-admin db prune` in-process on real PostgreSQL: one progress line per batch on stderr,
// one JSON document on stdout, --dry-run changes nothing, bad options change nothing, audited.
import { sql } from 'kysely';
import { beforeAll, beforeEach, describe, expect, it } from 'vitest';
import type { Db } from '../../service/db/schema';
import { createTestDatabase, resetDatabase } from '../support/db';
import { ACTOR, expectUserError, fingerprint, runIn } from './support';

let db: Db;
beforeAll(async () => {
  ({ db } = await createTestDatabase());
});
beforeEach(async () => {
  await resetDatabase(db);
  // 1,500 expired sessions and one live; two stale rate-limit windows.
  await sql`
    insert into web_sessions (id_digest, user_id, data, expires_at)
    select 'old-' || i, null, '{}', now() - interval '1 minute' from generate_series(1, 1500) i
  `.execute(db);
  await sql`insert into web_sessions (id_digest, user_id, data, expires_at) values ('live', null, '{}', now() + interval '1 hour')`.execute(
    db,
  );
  await sql`
    insert into rate_limit_counters (key, window_start, count)
    values ('failures:addr:a', now() - interval '2 hours', 5), ('failures:addr:b', now() - interval '3 hours', 9)
  `.execute(db);
});

const EXPECTED = {
  web_sessions: 1500,
  oauth_access_tokens: 0,
  oauth_authorization_codes: 0,
  oauth_device_grants: 0,
  dpop_proofs: 0,
  rate_limit_counters: 2,
  audit_events: 0,
  backchannel_logout_deliveries: 0,
  oauth_applications: 0,
  notification_events: 0,
  mail_outbox: 0,
};

describe('db prune', () => {
  it('deletes in batches with a progress line per batch on stderr and one JSON document on stdout', async () => {
    const run = await runIn(db, ['db', 'prune', '--batch-size', '1000', '--json']);
    expect(run.code, run.err).toBe(0);
    expect(run.json).toEqual({ dry_run: false, deleted: EXPECTED, total: 1502 });
    expect(run.err.split('\n').filter((l) => l.startsWith('web_sessions:'))).toEqual([
      'web_sessions: batch 1, 1000 deleted (expired), 1000 so far',
      'web_sessions: batch 2, 500 deleted (expired), 1500 so far',
    ]);
    expect(run.err).toContain('rate_limit_counters: batch 1, 2 deleted (window over), 2 so far\n');
    const left = await sql<{ id_digest: string }>`select id_digest from web_sessions`.execute(db);
    expect(left.rows).toEqual([{ id_digest: 'live' }]);
    expect(await sql`select 1 from rate_limit_counters`.execute(db).then((r) => r.rows)).toEqual([]);
    const audit = await db
      .selectFrom('audit_events')
      .select(['actor', 'action', 'details'])
      .where('action', '=', 'db.prune')
      .execute();
    expect(audit).toEqual([{ actor: ACTOR, action: 'db.prune', details: { deleted: EXPECTED } }]);
  });

  it('--dry-run counts and changes nothing', async () => {
    const before = await fingerprint(db);
    const run = await runIn(db, ['db', 'prune', '--dry-run']);
    expect(run.code, run.err).toBe(0);
    expect(await fingerprint(db)).toEqual(before);
    expect(run.err).toContain('web_sessions: 1500 to delete (expired)\n');
    expect(run.out).toMatch(/^TABLE +TO DELETE\nweb_sessions +1500\n/);
    expect(run.out).toContain('\n\n1502 rows would be deleted (dry run: nothing changed); audit events kept\n');
  });

  it('prints a table without --json', async () => {
    const run = await runIn(db, ['db', 'prune']);
    expect(run.code, run.err).toBe(0);
    expect(run.out).toBe(
      [
        'TABLE                          DELETED',
        'web_sessions                   1500',
        'oauth_access_tokens            0',
        'oauth_authorization_codes      0',
        'oauth_device_grants            0',
        'dpop_proofs                    0',
        'rate_limit_counters            2',
        'audit_events                   0',
        'backchannel_logout_deliveries  0',
        'oauth_applications             0',
        'notification_events            0',
        'mail_outbox                    0',
        '',
        '1502 rows deleted; audit events kept',
        '',
      ].join('\n'),
    );
  });

  it('refuses a bad --audit-retention-days or --batch-size with one line, changing nothing', async () => {
    await expectUserError(
      db,
      ['db', 'prune', '--audit-retention-days', '0'],
      /^lanyard-admin: --audit-retention-days must be a whole number from 1 to 36500 \(got "0"\)$/,
    );
    await expectUserError(
      db,
      ['db', 'prune', '--batch-size', '1e3'],
      /^lanyard-admin: --batch-size must be a whole number from 1 to 100000 \(got "1e3"\)$/,
    );
  });
});
