// Retention and replay detection, end to end: a prune inside the 7-day grace keeps what a replay
// needs (a rotated refresh token's replay still revokes its descendants; a used code's replay
// still revokes its tokens); past the grace those are forgotten (refused as unknown) and the live
// grant is untouched. Rows are aged by moving their timestamps back.
import { sql } from 'kysely';
import { beforeEach, describe, expect, it } from 'vitest';
import { pruneExpiredData } from '../../service/domain/retention';
import { sha256Hex } from '../../service/domain/secrets';
import { resetDatabase } from '../support/db';
import { obtainCode, WebClient } from './support/browser-like';
import { errorBody } from './support/contract';
import { basic, FORM, form, makeApp, makeUser, PASSWORD, REDIRECT_URI, useFixture } from './support/harness';

const f = useFixture();
let c: Awaited<ReturnType<typeof makeApp>>;
let web: WebClient;

beforeEach(async () => {
  await resetDatabase(f.db);
  await makeUser(f.db, 'alice');
  c = await makeApp(f.db);
  web = new WebClient(f.app);
  await web.signIn('alice', PASSWORD);
});

const token = (values: Record<string, string>) =>
  f.app.inject({
    method: 'POST',
    url: '/oauth/token',
    headers: { ...FORM, authorization: basic(c.clientId, c.secret) },
    payload: form(values),
  });
const exchange = (code: string) => token({ grant_type: 'authorization_code', code, redirect_uri: REDIRECT_URI });
const refresh = (rt: string) => token({ grant_type: 'refresh_token', refresh_token: rt });

/** Move a token row (found by its refresh token) back in time: expired and rotated `days` ago. */
async function age(refreshToken: string, expiredDaysAgo: number, rotatedDaysAgo: number) {
  await sql`
    update oauth_access_tokens set
      expires_at = now() - make_interval(days => ${expiredDaysAgo}),
      refreshed_at = now() - make_interval(days => ${rotatedDaysAgo})
    where refresh_token_digest = ${sha256Hex(refreshToken)}
  `.execute(f.db);
}

const revoked = async (refreshToken: string) =>
  (
    await f.db
      .selectFrom('oauth_access_tokens')
      .select('revoked_at')
      .where('refresh_token_digest', '=', sha256Hex(refreshToken))
      .executeTakeFirstOrThrow()
  ).revoked_at !== null;

describe('a prune inside the grace period keeps replay detection working', () => {
  it('a refresh token rotated yesterday and replayed after a prune revokes its descendants', async () => {
    const t0 = (await exchange(await obtainCode(web, c.clientId))).json();
    const t1 = (await refresh(t0.refresh_token)).json();
    const t2 = (await refresh(t1.refresh_token)).json();
    await age(t0.refresh_token, 9, 9);
    await age(t1.refresh_token, 9, 1);
    expect((await pruneExpiredData(f.db)).deleted.oauth_access_tokens).toBe(0);

    const replay = await refresh(t1.refresh_token);
    expect(replay.statusCode).toBe(400);
    expect(replay.json()).toEqual(errorBody('invalid_grant'));
    expect(await revoked(t2.refresh_token)).toBe(true);
    expect((await refresh(t2.refresh_token)).json()).toEqual(errorBody('invalid_grant'));
  });

  it('past the grace the rotated token is forgotten: refused as unknown, the live grant keeps working', async () => {
    const t0 = (await exchange(await obtainCode(web, c.clientId))).json();
    const t1 = (await refresh(t0.refresh_token)).json();
    const t2 = (await refresh(t1.refresh_token)).json();
    await age(t0.refresh_token, 10, 10);
    await age(t1.refresh_token, 9, 8);
    expect((await pruneExpiredData(f.db)).deleted.oauth_access_tokens).toBe(1);

    expect((await refresh(t1.refresh_token)).json()).toEqual(errorBody('invalid_grant'));
    expect(await revoked(t2.refresh_token)).toBe(false);
    const next = await refresh(t2.refresh_token);
    expect(next.statusCode).toBe(200);
  });

  it("the chain's first token, kept while its chain lives, replayed past the grace revokes the live tokens below the purged ones", async () => {
    const t0 = (await exchange(await obtainCode(web, c.clientId))).json();
    const t1 = (await refresh(t0.refresh_token)).json();
    const t2 = (await refresh(t1.refresh_token)).json();
    const t3 = (await refresh(t2.refresh_token)).json();
    await age(t0.refresh_token, 12, 12);
    await age(t1.refresh_token, 11, 10);
    await age(t2.refresh_token, 10, 9);
    expect((await pruneExpiredData(f.db)).deleted.oauth_access_tokens).toBe(2);
    // t3 still names t2, which is gone: the link is kept as written.
    const { rows } = await sql<{ dangling: boolean }>`
      select t.parent_id is not null
        and not exists (select from oauth_access_tokens p where p.id = t.parent_id) as dangling
      from oauth_access_tokens t where t.refresh_token_digest = ${sha256Hex(t3.refresh_token)}`.execute(f.db);
    expect(rows).toEqual([{ dangling: true }]);

    const replay = await refresh(t0.refresh_token);
    expect(replay.statusCode).toBe(400);
    expect(replay.json()).toEqual(errorBody('invalid_grant'));
    expect(await revoked(t3.refresh_token)).toBe(true);
    expect((await refresh(t3.refresh_token)).json()).toEqual(errorBody('invalid_grant'));
  });

  it('a used code replayed after a prune inside the grace still revokes what it issued', async () => {
    const code = await obtainCode(web, c.clientId);
    const t0 = (await exchange(code)).json();
    await sql`update oauth_authorization_codes set expires_at = now() - interval '1 hour'`.execute(f.db);
    expect((await pruneExpiredData(f.db)).deleted.oauth_authorization_codes).toBe(0);

    expect((await exchange(code)).json()).toEqual(errorBody('invalid_grant'));
    expect(await revoked(t0.refresh_token)).toBe(true);
  });

  it('a used code past the grace is deleted: its replay is refused and revokes nothing', async () => {
    const code = await obtainCode(web, c.clientId);
    const t0 = (await exchange(code)).json();
    await sql`update oauth_authorization_codes set expires_at = now() - interval '8 days'`.execute(f.db);
    expect((await pruneExpiredData(f.db)).deleted.oauth_authorization_codes).toBe(1);

    expect((await exchange(code)).json()).toEqual(errorBody('invalid_grant'));
    expect(await revoked(t0.refresh_token)).toBe(false);
    expect((await refresh(t0.refresh_token)).statusCode).toBe(200);
  });
});
