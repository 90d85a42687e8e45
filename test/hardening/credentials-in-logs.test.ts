// Regression (issue 11, "credentials reach the logs"): redaction works on the names the server
// decodes, not on their spelling. Every credential is sent in every position (query string, form
// body, JSON body, headers) and every encoding (plain, percent-encoded name, bracketed name,
// Basic auth) to the real app with the production logger at trace level; the captured log must
// not contain the secret, nor its base64, nor its URL-encoded form.
import { Writable } from 'node:stream';
import type { FastifyInstance } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildApp } from '../../service/app';
import { loggerOptions } from '../../service/http/logging';
import { testConfig } from '../support/app';
import { basic, FORM, form, makeApp, makeUser, PASSWORD, useFixture } from '../oauth/support/harness';

const f = useFixture();
const lines: string[] = [];
let app: FastifyInstance;

beforeAll(async () => {
  const stream = new Writable({
    write: (chunk, _enc, cb) => {
      lines.push(String(chunk));
      cb();
    },
  });
  app = await buildApp({ db: f.db, config: testConfig(), logger: { ...(loggerOptions('trace') as object), stream } });
});
afterAll(() => app?.close());

// Every credential name the contract's surfaces read, with an encoded spelling of it.
const NAMES = [
  'password',
  'user[password]',
  'user[otp_attempt]',
  'otp_attempt',
  'client_secret',
  'private_token',
  'access_token',
  'refresh_token',
  'code',
  'code_verifier',
  'authenticity_token',
  'token',
  'device_code',
  'user_code',
  'id_token_hint',
  'otp',
  'reset_password_token',
  'confirmation_token',
  'user[password_confirmation]',
];

/** Percent-encode every character of the name that is not a letter (and one letter), as an attacker would. */
const encodedNames = (name: string): string[] => [
  name,
  encodeURIComponent(name),
  name.replace(/_/g, '%5F').replace(/\[/g, '%5B').replace(/\]/g, '%5D'),
  name.replace(/o/, '%6F').replace(/_/g, '%5f'),
  name.replace(/o/, '%6f'),
];

const secretFor = (i: number) => `S3cr3t-${i}-${'x'.repeat(8)}-glpat-leak${i}`;

function leaksOf(secret: string): string[] {
  return [secret, Buffer.from(secret).toString('base64'), encodeURIComponent(secret), secret.replace(/-/g, '%2D')];
}

describe('credentials reach the logs', () => {
  it('no credential, in any position or encoding, appears in the log', async () => {
    await makeUser(f.db, 'alice');
    const c = await makeApp(f.db);
    const secrets: string[] = [PASSWORD, c.secret];
    let i = 0;
    const paths = [
      ['POST', '/oauth/token'],
      ['GET', '/oauth/token/info'],
      ['POST', '/oauth/revoke'],
      ['GET', '/oauth/authorize'],
      ['GET', '/api/v4/user'],
      ['POST', '/users/sign_in'],
    ] as const;
    for (const name of NAMES) {
      for (const encoded of encodedNames(name)) {
        for (const [method, path] of paths) {
          const secret = secretFor(i++);
          secrets.push(secret);
          // Query string.
          await app.inject({ method, url: `${path}?grant_type=password&username=alice&${encoded}=${secret}` });
          if (method === 'POST') {
            // Form body, and JSON body.
            await app.inject({ method, url: path, headers: FORM, payload: `${encoded}=${encodeURIComponent(secret)}` });
            await app.inject({ method, url: path, payload: { [decodeURIComponent(encoded)]: secret } });
          }
        }
      }
    }
    // The grant that worked in the finding: a password grant with encoded names succeeds.
    const ok = await app.inject({
      method: 'POST',
      url: `/oauth/token?grant_type=password&username=alice&passw%6Frd=${encodeURIComponent(PASSWORD)}&client_id=${c.clientId}&client%5Fsecret=${c.secret}`,
    });
    expect(ok.statusCode).toBe(200);
    const access = ok.json().access_token as string;
    secrets.push(access);
    await app.inject({ url: `/api/v4/user?private%5Ftoken=${access}` });
    await app.inject({ url: `/api/v4/user?access%5Ftoken=${access}` });
    // Headers: Basic (base64 of id:secret), Bearer, PRIVATE-TOKEN, cookies.
    for (const [method, path] of paths) {
      await app.inject({
        method,
        url: path,
        headers: {
          authorization: basic(c.clientId, c.secret),
          'private-token': access,
          cookie: `_lanyard_session=${access}`,
        },
      });
      await app.inject({ method, url: path, headers: { authorization: `Bearer ${access}` } });
    }
    await app.inject({
      method: 'POST',
      url: '/oauth/token',
      headers: { ...FORM, authorization: basic(c.clientId, c.secret) },
      payload: form({ grant_type: 'password', username: 'alice', password: PASSWORD }),
    });

    const log = lines.join('');
    // The log is not empty: the requests are there, with their masked parameters.
    expect(log).toContain('passw%6Frd=[REDACTED]');
    expect(log).toContain('client%5Fsecret=[REDACTED]');
    expect(log).toContain('user%5Bpassword%5D=[REDACTED]');
    const found = secrets.flatMap(leaksOf).filter((leak) => log.includes(leak));
    expect(found).toEqual([]);
    expect(log).not.toContain(basic(c.clientId, c.secret).slice(6));
  });
});
