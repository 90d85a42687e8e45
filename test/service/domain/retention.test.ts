// Retention on real PostgreSQL: rows of each kind, expired and live, before and after a prune;
// the replay grace of codes and refresh chains; batches; dry runs; the audit trail.
import { sql } from 'kysely';
import { beforeAll, beforeEach, describe, expect, it } from 'vitest';
import type { Db } from '../../../service/db/schema';
import { registerApplication } from '../../../service/domain/applications';
import { type PruneProgress, pruneExpiredData } from '../../../service/domain/retention';
import { randomHex, sha256Hex } from '../../../service/domain/secrets';
import { fingerprint } from '../../admin-cli/support';
import { createGroup, makeUser } from '../../support/api-fixtures';
import { createTestDatabase, resetDatabase } from '../../support/db';

let db: Db;
let userId: number;
let applicationId: number;
beforeAll(async () => {
  db = (await createTestDatabase()).db;
});
beforeEach(async () => {
  await resetDatabase(db);
  userId = (await makeUser(db, 'alice')).id;
  const { application } = await registerApplication(db, {
    name: 'App',
    redirectUris: ['https://app.example/cb'],
    scopes: ['api'],
  });
  applicationId = application.id;
});

const HOUR = 3600;
const DAY = 24 * HOUR;
/** A time `seconds` from now (negative: in the past). */
const at = (seconds: number) => new Date(Date.now() + seconds * 1000);

const ids = async (table: 'web_sessions' | 'oauth_authorization_codes' | 'oauth_access_tokens') => {
  const key = table === 'web_sessions' ? 'id_digest' : 'id';
  const { rows } = await sql<{
    k: string;
  }>`select ${sql.ref(key)}::text as k from ${sql.table(table)} order by 1`.execute(db);
  return rows.map((r) => r.k);
};

async function session(name: string, expiresIn: number): Promise<void> {
  await db
    .insertInto('web_sessions')
    .values({ id_digest: name, user_id: null, data: '{}', expires_at: at(expiresIn) })
    .execute();
}

async function code(expiresIn: number, usedAgo?: number): Promise<string> {
  const row = await db
    .insertInto('oauth_authorization_codes')
    .values({
      application_id: applicationId,
      user_id: userId,
      code_digest: sha256Hex(randomHex()),
      redirect_uri: 'https://app.example/cb',
      scopes: ['api'],
      expires_at: at(expiresIn),
      used_at: usedAgo === undefined ? null : at(-usedAgo),
    })
    .returning('id')
    .executeTakeFirstOrThrow();
  return String(row.id);
}

interface TokenRow {
  /** Seconds until the access token expires (negative: expired that long ago). */
  expiresIn: number;
  refresh?: boolean;
  refreshedAgo?: number;
  revokedAgo?: number;
  parent?: string;
  family?: string;
}

async function token(t: TokenRow): Promise<string> {
  const row = await db
    .insertInto('oauth_access_tokens')
    .values({
      application_id: applicationId,
      user_id: userId,
      token_digest: sha256Hex(randomHex()),
      refresh_token_digest: t.refresh === false ? null : sha256Hex(randomHex()),
      scopes: ['api'],
      expires_at: at(t.expiresIn),
      refreshed_at: t.refreshedAgo === undefined ? null : at(-t.refreshedAgo),
      revoked_at: t.revokedAgo === undefined ? null : at(-t.revokedAgo),
      parent_id: t.parent === undefined ? null : Number(t.parent),
      family_id: t.family === undefined ? null : Number(t.family),
    })
    .returning('id')
    .executeTakeFirstOrThrow();
  return String(row.id);
}

describe('pruneExpiredData', () => {
  it('deletes expired web sessions and keeps live ones', async () => {
    await session('expired-anonymous', -1);
    await session('expired-long-ago', -30 * DAY);
    await session('live', HOUR);
    const report = await pruneExpiredData(db);
    expect(report.deleted.web_sessions).toBe(2);
    expect(await ids('web_sessions')).toEqual(['live']);
  });

  it('deletes expired unused codes at once and used ones a week after they expired (replay detection)', async () => {
    const unusedExpired = await code(-60);
    const usedRecently = await code(-HOUR, HOUR + 500);
    const usedLongAgo = await code(-8 * DAY, 8 * DAY + 500);
    const unusedLive = await code(500);
    const usedLive = await code(500, 10);
    const report = await pruneExpiredData(db);
    expect(report.deleted.oauth_authorization_codes).toBe(2);
    const kept = await ids('oauth_authorization_codes');
    expect(kept).toEqual([usedRecently, unusedLive, usedLive].sort());
    expect(kept).not.toContain(unusedExpired);
    expect(kept).not.toContain(usedLongAgo);
  });

  it('deletes token rows nobody can use or replay any more, keeping live grants and the replay grace', async () => {
    // Password grant (no refresh token): expired long ago → gone; expired recently → kept.
    const passwordOld = await token({ expiresIn: -8 * DAY, refresh: false });
    const passwordRecent = await token({ expiresIn: -HOUR, refresh: false });
    const live = await token({ expiresIn: HOUR });
    // A live chain: a0 → a1 → a2. a1 rotated 20 days ago goes; the root a0 stays with its family;
    // a2's refresh token is live (access expired: refresh tokens do not expire) and stays.
    const a0 = await token({ expiresIn: -30 * DAY, refreshedAgo: 30 * DAY });
    const a1 = await token({ expiresIn: -20 * DAY, refreshedAgo: 20 * DAY, parent: a0, family: a0 });
    const a2 = await token({ expiresIn: -19 * DAY, parent: a1, family: a0 });
    // A chain revoked 10 days ago: gone entirely, members and root.
    const b0 = await token({ expiresIn: -12 * DAY, refreshedAgo: 12 * DAY, revokedAgo: 10 * DAY });
    const b1 = await token({ expiresIn: -11 * DAY, revokedAgo: 10 * DAY, parent: b0, family: b0 });
    // A chain revoked yesterday: kept (a revoked token answers "revoked" for the grace period).
    const c0 = await token({ expiresIn: -3 * DAY, refreshedAgo: 3 * DAY, revokedAgo: DAY });
    const c1 = await token({ expiresIn: -2 * DAY, revokedAgo: DAY, parent: c0, family: c0 });
    // A client back after 9 days rotated e1 yesterday: e1 stays so that a thief's replay of it,
    // or the client's own retry, is still recognised.
    const e0 = await token({ expiresIn: -10 * DAY, refreshedAgo: 10 * DAY });
    const e1 = await token({ expiresIn: -10 * DAY + 2 * HOUR, refreshedAgo: DAY, parent: e0, family: e0 });
    const e2 = await token({ expiresIn: -DAY + 2 * HOUR, parent: e1, family: e0 });
    // A revoked, unexpired token stays.
    const revokedLive = await token({ expiresIn: HOUR, revokedAgo: 9 * DAY });

    const report = await pruneExpiredData(db);

    expect(report.deleted.oauth_access_tokens).toBe(4);
    expect(await ids('oauth_access_tokens')).toEqual(
      [passwordRecent, live, a0, a2, c0, c1, e0, e1, e2, revokedLive].sort(),
    );
    for (const gone of [passwordOld, a1, b0, b1]) expect(await ids('oauth_access_tokens')).not.toContain(gone);
    // The chain's survivors are intact: a2 still points at its family, and at its purged parent
    // (the link is kept as written; replay detection walks it within the family).
    const a2Row = await db
      .selectFrom('oauth_access_tokens')
      .select(['family_id', 'parent_id', 'revoked_at'])
      .where('id', '=', Number(a2))
      .executeTakeFirstOrThrow();
    expect(a2Row).toEqual({ family_id: Number(a0), parent_id: Number(a1), revoked_at: null });
  });

  it('deletes the root of a refresh chain only with the last member of its family', async () => {
    const r0 = await token({ expiresIn: -20 * DAY, refreshedAgo: 20 * DAY });
    const r1 = await token({ expiresIn: -19 * DAY, refreshedAgo: 19 * DAY, parent: r0, family: r0 });
    const r2 = await token({ expiresIn: -18 * DAY, refreshedAgo: HOUR, parent: r1, family: r0 });
    const r3 = await token({ expiresIn: HOUR, parent: r2, family: r0 });
    expect((await pruneExpiredData(db)).deleted.oauth_access_tokens).toBe(1);
    expect(await ids('oauth_access_tokens')).toEqual([r0, r2, r3].sort());
    // The grant ends (revoked) and the grace passes: the whole family goes.
    await db
      .updateTable('oauth_access_tokens')
      .set({ revoked_at: at(-8 * DAY), expires_at: at(-8 * DAY) })
      .execute();
    expect((await pruneExpiredData(db)).deleted.oauth_access_tokens).toBe(3);
    expect(await ids('oauth_access_tokens')).toEqual([]);
  });

  it('deletes rate-limit counters an hour after their window opened', async () => {
    await db
      .insertInto('rate_limit_counters')
      .values([
        { key: 'failures:addr:old', window_start: at(-2 * HOUR), count: 61 },
        { key: 'failures:addr:current', window_start: at(-30), count: 3 },
      ])
      .execute();
    expect((await pruneExpiredData(db)).deleted.rate_limit_counters).toBe(1);
    const keys = await db.selectFrom('rate_limit_counters').select('key').execute();
    expect(keys).toEqual([{ key: 'failures:addr:current' }]);
  });

  it('keeps audit events forever by default, and for auditRetentionDays when set', async () => {
    await db
      .insertInto('audit_events')
      .values([
        { actor: 'cli:old', action: 'user.create', created_at: at(-400 * DAY) },
        { actor: 'cli:recent', action: 'user.create', created_at: at(-10 * DAY) },
      ])
      .execute();
    expect((await pruneExpiredData(db)).deleted.audit_events).toBe(0);
    const actors = () =>
      db.selectFrom('audit_events').select('actor').where('actor', 'like', 'cli:%').orderBy('id').execute();
    expect(await actors()).toEqual([{ actor: 'cli:old' }, { actor: 'cli:recent' }]);
    expect((await pruneExpiredData(db, { auditRetentionDays: 365 })).deleted.audit_events).toBe(1);
    expect(await actors()).toEqual([{ actor: 'cli:recent' }]);
  });

  it('deletes in batches of batchSize rows, reporting each statement, until none is left', async () => {
    await sql`
      insert into web_sessions (id_digest, user_id, data, expires_at)
      select 'old-' || i, null, '{}', now() - interval '1 day' from generate_series(1, 2500) i
    `.execute(db);
    await session('live', HOUR);
    const batches: PruneProgress[] = [];
    const report = await pruneExpiredData(db, { batchSize: 1000, onBatch: (p) => batches.push(p) });
    expect(report.deleted.web_sessions).toBe(2500);
    expect(batches.filter((b) => b.table === 'web_sessions')).toEqual([
      { table: 'web_sessions', rule: 'expired', rows: 1000, tableTotal: 1000, batch: 1 },
      { table: 'web_sessions', rule: 'expired', rows: 1000, tableTotal: 2000, batch: 2 },
      { table: 'web_sessions', rule: 'expired', rows: 500, tableTotal: 2500, batch: 3 },
    ]);
    expect(await ids('web_sessions')).toEqual(['live']);
  });

  it('counts without deleting in a dry run, the same numbers a real run then deletes', async () => {
    await session('expired', -1);
    await code(-60);
    const root = await token({ expiresIn: -9 * DAY, refreshedAgo: 9 * DAY, revokedAgo: 8 * DAY });
    await token({ expiresIn: -9 * DAY, revokedAgo: 8 * DAY, parent: root, family: root });
    await db
      .insertInto('rate_limit_counters')
      .values({ key: 'failures:addr:x', window_start: at(-2 * HOUR), count: 1 })
      .execute();
    const before = await fingerprint(db);
    const dry = await pruneExpiredData(db, { dryRun: true, actor: 'cli:test' });
    const expected = {
      web_sessions: 1,
      oauth_access_tokens: 2,
      oauth_authorization_codes: 1,
      oauth_device_grants: 0,
      dpop_proofs: 0,
      rate_limit_counters: 1,
      audit_events: 0,
      backchannel_logout_deliveries: 0,
      oauth_applications: 0,
      notification_events: 0,
      mail_outbox: 0,
    };
    expect(dry).toEqual({ dryRun: true, deleted: expected, total: 5 });
    expect(await fingerprint(db)).toEqual(before);
    expect(await pruneExpiredData(db)).toEqual({ dryRun: false, deleted: expected, total: 5 });
  });

  it('records who pruned what in the audit trail, and nothing when nothing was deleted', async () => {
    await session('expired', -1);
    await pruneExpiredData(db, { actor: 'cli:ops' });
    await pruneExpiredData(db, { actor: 'cli:ops' });
    const events = await db
      .selectFrom('audit_events')
      .select(['actor', 'action', 'details'])
      .where('action', '=', 'db.prune')
      .execute();
    expect(events).toEqual([
      {
        actor: 'cli:ops',
        action: 'db.prune',
        details: {
          deleted: {
            web_sessions: 1,
            oauth_access_tokens: 0,
            oauth_authorization_codes: 0,
            oauth_device_grants: 0,
            dpop_proofs: 0,
            rate_limit_counters: 0,
            audit_events: 0,
            backchannel_logout_deliveries: 0,
            oauth_applications: 0,
            notification_events: 0,
            mail_outbox: 0,
          },
        },
      },
    ]);
  });
});

describe('mail', () => {
  async function mail(name: string, status: 'pending' | 'sending' | 'sent' | 'failed', settledDaysAgo: number) {
    await db
      .insertInto('mail_outbox')
      .values({
        message_id: `<${name}@id.example.org>`,
        kind: 'test',
        to_address: 'a@example.com',
        from_address: null,
        subject: name,
        text_body: 't',
        html_body: 'h',
        status,
        updated_at: at(-settledDaysAgo * DAY),
        created_at: at(-settledDaysAgo * DAY - HOUR),
      })
      .execute();
  }
  const left = async () =>
    (await db.selectFrom('mail_outbox').select('subject').orderBy('subject').execute()).map((r) => r.subject);

  it('prunes sent and failed messages past the mail retention, never pending or in-flight ones', async () => {
    await mail('sent-31d', 'sent', 31);
    await mail('failed-31d', 'failed', 31);
    await mail('sent-29d', 'sent', 29);
    await mail('failed-1d', 'failed', 1);
    await mail('pending-90d', 'pending', 90);
    await mail('sending-90d', 'sending', 90);
    const report = await pruneExpiredData(db);
    expect(report.deleted.mail_outbox).toBe(2);
    expect(await left()).toEqual(['failed-1d', 'pending-90d', 'sending-90d', 'sent-29d']);
    expect((await pruneExpiredData(db, { mailRetentionDays: 2 })).deleted.mail_outbox).toBe(1);
    expect(await left()).toEqual(['failed-1d', 'pending-90d', 'sending-90d']);
  });
});

describe('notification events', () => {
  /** An event posted `daysAgo`, with one recipient whose message is in `status`. */
  async function event(key: string, daysAgo: number, status: 'pending' | 'sending' | 'sent' | 'failed') {
    const group = await createGroup(db, { path: `g-${key}`, visibility: 'private' });
    const created = at(-daysAgo * DAY);
    const { id } = await db
      .insertInto('notification_events')
      .values({
        caller: 'user:1',
        group_id: group.id,
        event: 'new_release',
        target_type: 'release',
        target_ref: 1,
        target_title: key,
        target_url: 'https://tracker.example/r/1',
        idempotency_key: key,
        request_digest: sha256Hex(key),
        recipient_count: 1,
        created_at: created,
      })
      .returning('id')
      .executeTakeFirstOrThrow();
    const mail = await db
      .insertInto('mail_outbox')
      .values({
        message_id: `<${key}@id.example.org>`,
        kind: 'notification.new_release',
        to_address: 'alice@example.com',
        from_address: null,
        subject: key,
        text_body: 't',
        html_body: 'h',
        status,
        created_at: created,
        updated_at: created,
      })
      .returning('id')
      .executeTakeFirstOrThrow();
    await db
      .insertInto('notification_event_recipients')
      .values({ event_id: id, user_id: userId, reason: 'watching', mail_id: mail.id })
      .execute();
  }
  const left = async () =>
    (await db.selectFrom('notification_events').select('idempotency_key').orderBy('idempotency_key').execute()).map(
      (r) => r.idempotency_key,
    );

  it('prunes events past the mail retention with their links, never one with a message still to send', async () => {
    await event('sent-31d', 31, 'sent');
    await event('failed-31d', 31, 'failed');
    await event('sent-29d', 29, 'sent');
    await event('pending-40d', 40, 'pending');
    await event('sending-40d', 40, 'sending');
    const report = await pruneExpiredData(db);
    expect([report.deleted.notification_events, report.deleted.mail_outbox]).toEqual([2, 2]);
    expect(await left()).toEqual(['pending-40d', 'sending-40d', 'sent-29d']);
    expect(
      (await db.selectFrom('notification_event_recipients').select('reason').execute()).map((r) => r.reason),
    ).toHaveLength(3);
    expect((await pruneExpiredData(db, { mailRetentionDays: 28 })).deleted.notification_events).toBe(1);
    expect(await left()).toEqual(['pending-40d', 'sending-40d']);
  });
});
