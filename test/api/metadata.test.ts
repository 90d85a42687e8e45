// GET /api/v4/version and /api/v4/metadata: GitLab's metadata entity (the API version Lanyard
// matches) plus Lanyard's own version, for any token GitLab accepts there (read_user included).
import type { FastifyInstance } from 'fastify';
import { readFileSync } from 'node:fs';
import { beforeAll, describe, expect, it } from 'vitest';
import type { Db, User } from '../../service/db/schema';
import { makeOAuthToken, makePat, makeUser } from '../support/api-fixtures';
import { buildTestApp } from '../support/app';
import { createTestDatabase } from '../support/db';

let db: Db;
let app: FastifyInstance;
let alice: User;
// The package's own version, read the way a release manager would check it.
const packageVersion = JSON.parse(readFileSync(require.resolve('../../package.json'), 'utf8')).version;

beforeAll(async () => {
  db = (await createTestDatabase()).db;
  app = await buildTestApp(db);
  alice = await makeUser(db, 'alice');
});

describe.each(['/api/v4/version', '/api/v4/metadata'])('GET %s', (url) => {
  it('answers GitLab 17.11.0 and the Lanyard version, exact JSON', async () => {
    for (const token of [await makePat(db, alice, ['read_user']), await makeOAuthToken(db, alice, ['read_api'])]) {
      const res = await app.inject({ url, headers: { authorization: `Bearer ${token}` } });
      expect(res.statusCode).toBe(200);
      expect(res.headers['content-type']).toBe('application/json');
      expect(res.body).toBe(
        JSON.stringify({
          version: '17.11.0',
          revision: `lanyard-${packageVersion}`,
          kas: { enabled: false, externalUrl: null, externalK8sProxyUrl: null, version: null },
          enterprise: false,
          lanyard: { version: packageVersion },
        }),
      );
    }
    expect(packageVersion).toMatch(/^\d+\.\d+\.\d+/);
  });

  it('401 without a token', async () => {
    const res = await app.inject({ url });
    expect([res.statusCode, res.headers['content-type'], res.json()]).toEqual([
      401,
      'application/json',
      { message: '401 Unauthorized' },
    ]);
  });
});
