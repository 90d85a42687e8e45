// Signing key rotation through the real app and the real admin command, with a short ID token
// lifetime (2 s) so a retired key can be seen to drop out: tokens signed before the rotation
// still verify through the JWKS, new ones carry the new kid, and the old key leaves the JWKS once
// every token it signed has expired. The key file is 0600 and nothing of it is in the database.
import { mkdtempSync, readFileSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { compactVerify, createLocalJWKSet, decodeProtectedHeader, type JSONWebKeySet, jwtVerify } from 'jose';
import { sql } from 'kysely';
import { describe, expect, it } from 'vitest';
import { parseSigningKeyDocument, rotateSigningKeyDocument } from '../../service/domain/signing-keys';
import { ACTOR, runIn } from '../admin-cli/support';
import { obtainCode, WebClient } from './support/browser-like';
import { basic, FORM, form, makeApp, makeUser, PASSWORD, REDIRECT_URI, useFixture } from './support/harness';

const ISSUER = 'https://lanyard.example.com';
const home = mkdtempSync(path.join(tmpdir(), 'lanyard-rotation-'));
const f = useFixture({
  config: { publicUrl: ISSUER, home, idTokenLifetimeSeconds: 2, signingKeyCacheSeconds: 0 },
});
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

describe('secrets rotate signing-key', () => {
  it('old tokens verify after a rotation, new ones carry the new kid, the retired key drops out after the lifetime', async () => {
    await makeUser(f.db, 'alice');
    const app = await makeApp(f.db, { scopes: 'openid' });
    const web = new WebClient(f.app);
    await web.signIn('alice', PASSWORD);
    const idToken = async () => {
      const code = await obtainCode(web, app.clientId, { scope: 'openid' });
      const res = await f.app.inject({
        method: 'POST',
        url: '/oauth/token',
        headers: { ...FORM, authorization: basic(app.clientId, app.secret) },
        payload: form({ grant_type: 'authorization_code', code, redirect_uri: REDIRECT_URI }),
      });
      expect(res.statusCode).toBe(200);
      return res.json().id_token as string;
    };
    const jwks = async (): Promise<JSONWebKeySet> => (await f.app.inject({ url: '/oauth/discovery/keys' })).json();
    // The signature against the published keys (the 2 s expiry is beside the point here).
    const verifies = async (token: string) =>
      compactVerify(token, createLocalJWKSet(await jwks())).then(
        () => true,
        (err) => err.code,
      );

    const before = await idToken();
    const oldKid = decodeProtectedHeader(before).kid;
    expect((await jwks()).keys.map((k) => k.kid)).toEqual([oldKid]);

    const env = { LANYARD_HOME: home, ID_TOKEN_LIFETIME: '2', SIGNING_KEY_CACHE_SECONDS: '0' };
    // Step 1 (issue 22): the new key is staged — published before it signs anything.
    const staged = await runIn(f.db, ['secrets', 'rotate', 'signing-key', '--json'], { env });
    expect(staged).toMatchObject({ code: 0, err: '' });
    expect(Object.keys(staged.json)).toEqual(['rotated', 'kid', 'step', 'activates_at']);
    expect(staged.json).toMatchObject({ rotated: true, step: 'staged' });
    const newKid = staged.json.kid;
    expect(newKid).not.toBe(oldKid);
    // The default wait: the JWKS cache age (an hour) plus the key cache (0 here).
    const wait = Date.parse(staged.json.activates_at) - Date.now();
    expect(wait).toBeGreaterThan(3590_000);
    expect(wait).toBeLessThanOrEqual(3600_000);
    expect((await jwks()).keys.map((k) => k.kid)).toEqual([oldKid, newKid]);
    const whileStaged = await idToken();
    expect(decodeProtectedHeader(whileStaged).kid).toBe(oldKid);
    expect(await verifies(whileStaged)).toBe(true);

    // Step 2: a later run activates it. Both published, the new one first; the token signed
    // before still verifies.
    const res = await runIn(f.db, ['secrets', 'rotate', 'signing-key', '--json'], { env });
    expect(res).toMatchObject({ code: 0, err: '' });
    expect(res.json).toMatchObject({ rotated: true, kid: newKid, step: 'activated' });
    expect((await jwks()).keys.map((k) => k.kid)).toEqual([newKid, oldKid]);
    expect(await verifies(before)).toBe(true);
    const after = await idToken();
    expect(decodeProtectedHeader(after).kid).toBe(newKid);
    expect(await verifies(after)).toBe(true);
    await jwtVerify(after, createLocalJWKSet(await jwks()), { issuer: ISSUER, audience: app.clientId });

    // Past the 2 s lifetime of every token the old key signed: it leaves the JWKS.
    await sleep(2100);
    expect((await jwks()).keys.map((k) => k.kid)).toEqual([newKid]);
    expect(await verifies(before)).toBe('ERR_JWKS_NO_MATCHING_KEY');

    // The audit trail names the new kid; the private key is in the 0600 file, nowhere in the database.
    const audit = await f.db
      .selectFrom('audit_events')
      .select(['actor', 'action', 'target_id'])
      .where('action', 'like', 'signing_key.%')
      .execute();
    expect(audit).toEqual([
      { actor: ACTOR, action: 'signing_key.stage', target_id: newKid },
      { actor: ACTOR, action: 'signing_key.rotate', target_id: newKid },
    ]);
    const file = path.join(home, 'signing-keys.json');
    expect(statSync(file).mode & 0o777).toBe(0o600);
    const privateParts = JSON.parse(readFileSync(file, 'utf8')).keys.flatMap(
      (k: { private_jwk: Record<string, string> }) => ['d', 'p', 'q'].map((m) => k.private_jwk[m]),
    );
    const { rows } = await sql<{ dump: string }>`
      select string_agg(t::text, ' ') as dump from (
        select row_to_json(x)::text as t from audit_events x union all
        select row_to_json(x)::text from web_sessions x union all
        select row_to_json(x)::text from oauth_authorization_codes x
      ) s`.execute(f.db);
    for (const part of privateParts) expect(rows[0].dump).not.toContain(part);
  });
});

describe('a staged key activates by itself at its time', () => {
  it('published first; signs once activates_at has passed, with no second run', async () => {
    const policy = { idTokenLifetimeSeconds: 120, cacheSeconds: 60 };
    const t0 = new Date('2026-11-26T10:00:00.000Z');
    const first = await rotateSigningKeyDocument(undefined, policy, t0, 3600);
    // No document yet: the first key signs at once, whatever the wait asked.
    expect(first.step).toBe('activated');
    const staged = await rotateSigningKeyDocument(first.document, policy, t0, 3600);
    expect(staged).toMatchObject({ step: 'staged', activatesAt: '2026-11-26T11:00:00.000Z' });
    const at = async (iso: string) => {
      const set = await parseSigningKeyDocument(staged.document, policy, new Date(iso));
      return { signs: set.kid, published: set.jwks.map((k) => k.kid) };
    };
    expect(await at('2026-11-26T10:59:59.999Z')).toEqual({
      signs: first.kid,
      published: [first.kid, staged.kid],
    });
    expect(await at('2026-11-26T11:00:00.000Z')).toEqual({ signs: staged.kid, published: [staged.kid, first.kid] });
    // The superseded key stays published for the ID token lifetime plus the cache (180 s), then leaves.
    expect((await at('2026-11-26T11:02:59.999Z')).published).toEqual([staged.kid, first.kid]);
    expect((await at('2026-11-26T11:03:00.000Z')).published).toEqual([staged.kid]);
  });
});
