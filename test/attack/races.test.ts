// The attack suite, part 2: 50-way races over real HTTP (a listening server, 50 concurrent fetches,
// a pool of 20 connections so the transactions really overlap) on one authorization code, one
// refresh token and one notification-settings row. No response ≥ 500; the contract's outcome.
import { beforeAll, describe, expect, it } from 'vitest';
import type { Config } from '../../service/config';
import { listen, makeOAuthToken } from '../support/api-fixtures';
import { obtainCode, WebClient } from '../oauth/support/browser-like';
import { errorBody } from '../oauth/support/contract';
import { basic, form, makeApp, makeUser, PASSWORD, REDIRECT_URI, useFixture } from '../oauth/support/harness';

const N = 50;
// Outside the refresh retry leeway (contract §2 "Refresh retries"): with refreshReuseLeeway 0 every
// second presentation of a refresh token is a replay or a lost race, never a retry. (The leeway's
// own race, inside it, belongs with its implementation.)
const f = useFixture({ max: 20, config: { refreshReuseLeeway: 0 } as Partial<Config> });

let base: string;
beforeAll(async () => {
  base = await listen(f.app);
});

let users = 0;
/** A fresh user (signed in through the form) and application for one race. */
async function fixture() {
  const username = `racer${++users}`;
  const { user } = await makeUser(f.db, username);
  const c = await makeApp(f.db);
  const web = new WebClient(f.app);
  await web.signIn(username, PASSWORD);
  return { c, user, web };
}

const tally = (statuses: number[]) => {
  const counts = new Map<number, number>();
  for (const s of statuses) counts.set(s, (counts.get(s) ?? 0) + 1);
  return [...counts].map(([s, n]) => `${s}×${n}`).join(' ');
};

describe(`${N}-way races over real HTTP`, () => {
  it('one authorization code exchanged 50 times at once: exactly one token response, 49 invalid_grant', async () => {
    const { c, web } = await fixture();
    const code = await obtainCode(web, c.clientId);
    const responses = await Promise.all(
      Array.from({ length: N }, () =>
        fetch(`${base}/oauth/token`, {
          method: 'POST',
          headers: { 'content-type': 'application/x-www-form-urlencoded', authorization: basic(c.clientId, c.secret) },
          body: form({ grant_type: 'authorization_code', code, redirect_uri: REDIRECT_URI }),
        }).then(async (r) => ({ status: r.status, body: (await r.json()) as any })),
      ),
    );
    const statuses = responses.map((r) => r.status);
    console.log(`[attack] race on one code: ${N} requests; statuses ${tally(statuses)}; max ${Math.max(...statuses)}`);
    expect(statuses.filter((s) => s === 200)).toHaveLength(1);
    expect(statuses.filter((s) => s === 400)).toHaveLength(N - 1);
    for (const r of responses.filter((r) => r.status === 400)) expect(r.body).toEqual(errorBody('invalid_grant'));
    // One grant was ever issued from the code.
    const rows = await f.db
      .selectFrom('oauth_access_tokens')
      .select('id')
      .where('application_id', '=', c.application.id)
      .execute();
    expect(rows).toHaveLength(1);
  });

  it('one refresh token presented 50 times at once: exactly one rotation wins and stays valid', async () => {
    const { c, web } = await fixture();
    const post = (values: Record<string, string>) =>
      fetch(`${base}/oauth/token`, {
        method: 'POST',
        headers: { 'content-type': 'application/x-www-form-urlencoded', authorization: basic(c.clientId, c.secret) },
        body: form(values),
      }).then(async (r) => ({ status: r.status, body: (await r.json()) as any }));
    const code = await obtainCode(web, c.clientId);
    const first = await post({ grant_type: 'authorization_code', code, redirect_uri: REDIRECT_URI });
    expect(first.status).toBe(200);
    const responses = await Promise.all(
      Array.from({ length: N }, () => post({ grant_type: 'refresh_token', refresh_token: first.body.refresh_token })),
    );
    const statuses = responses.map((r) => r.status);
    console.log(
      `[attack] race on one refresh token: ${N} requests; statuses ${tally(statuses)}; max ${Math.max(...statuses)}`,
    );
    const winners = responses.filter((r) => r.status === 200);
    expect(winners).toHaveLength(1);
    for (const r of responses.filter((r) => r.status !== 200)) {
      expect(r.status).toBe(400);
      expect(r.body).toEqual(errorBody('invalid_grant'));
    }
    // The winner's pair is live: its access token answers, its refresh token rotates on.
    const info = await fetch(`${base}/oauth/token/info`, {
      headers: { authorization: `Bearer ${winners[0].body.access_token}` },
    });
    expect(info.status).toBe(200);
    const next = await post({ grant_type: 'refresh_token', refresh_token: winners[0].body.refresh_token });
    expect(next.status).toBe(200);
  });

  it('50 concurrent PUTs of one notification-settings row: all 200, one row, the last write wins whole', async () => {
    const { user } = await fixture();
    const bearer = await makeOAuthToken(f.db, user, ['api']);
    const LEVELS = ['disabled', 'participating', 'watch', 'global', 'mention', 'custom'];
    // Each request a distinct, complete state: a half-applied mix of two would show.
    const bodies = Array.from({ length: N }, (_, i) => ({
      level: LEVELS[i % LEVELS.length],
      new_note: i % 2 === 0,
      new_issue: i % 3 === 0,
      failed_pipeline: i % 5 === 0,
    }));
    const responses = await Promise.all(
      bodies.map((b) =>
        fetch(`${base}/api/v4/notification_settings`, {
          method: 'PUT',
          headers: { 'content-type': 'application/json', authorization: `Bearer ${bearer}` },
          body: JSON.stringify(b),
        }).then(async (r) => ({ status: r.status, body: (await r.json()) as any })),
      ),
    );
    const statuses = responses.map((r) => r.status);
    console.log(
      `[attack] race on one settings row: ${N} PUTs; statuses ${tally(statuses)}; max ${Math.max(...statuses)}`,
    );
    expect(statuses).toEqual(Array(N).fill(200));
    const rows = await f.db
      .selectFrom('notification_settings')
      .select(['level', 'new_note', 'new_issue', 'failed_pipeline'])
      .where('user_id', '=', user.id)
      .where('group_id', 'is', null)
      .where('project_id', 'is', null)
      .execute();
    expect(rows).toHaveLength(1);
    expect(bodies).toContainEqual(rows[0]);
    const get = await fetch(`${base}/api/v4/notification_settings`, { headers: { authorization: `Bearer ${bearer}` } });
    expect(((await get.json()) as any).level).toBe(rows[0].level);
  });
});
