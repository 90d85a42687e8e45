// Regression: a NUL byte in input reached PostgreSQL ("invalid byte sequence for encoding UTF8")
// and answered 500 on the sign-in form and /oauth/authorize. Now a 400 in each surface's format:
// a page for what a browser sends (issue 28: browsers never get JSON), JSON for the machines.
import { beforeAll, describe, expect, it } from 'vitest';
import type { FastifyInstance } from 'fastify';
import { buildTestApp } from '../../support/app';
import { createTestDatabase } from '../../support/db';
import { makePat, makeUser } from '../../support/api-fixtures';

const INVALID_REQUEST = {
  error: 'invalid_request',
  error_description:
    'The request is missing a required parameter, includes an unsupported parameter value, or is otherwise malformed.',
};

describe('NUL bytes in input', () => {
  let app: FastifyInstance;
  let token: string;
  beforeAll(async () => {
    const { db } = await createTestDatabase();
    app = await buildTestApp(db);
    token = await makePat(db, await makeUser(db, 'alice'), ['api']);
  });

  it('the sign-in form answers 400, not 500', async () => {
    const res = await app.inject({
      method: 'POST',
      url: '/users/sign_in',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      payload: 'user%5Blogin%5D=%00&user%5Bpassword%5D=x',
    });
    expect(res.statusCode).toBe(400);
    expect(res.headers['content-type']).toBe('text/html; charset=utf-8');
    expect(res.body).toContain('Lanyard could not read this request: user[login] is invalid.');
  });

  it('/oauth/authorize answers the 400 page, the token endpoint invalid_request', async () => {
    const authorize = await app.inject({
      method: 'GET',
      url: '/oauth/authorize?client_id=%00&redirect_uri=x&response_type=code',
    });
    expect(authorize.statusCode).toBe(400);
    expect(authorize.headers['content-type']).toBe('text/html; charset=utf-8');
    expect(authorize.body).toContain('Lanyard could not read this request: client_id is invalid.');
    const token = await app.inject({
      method: 'POST',
      url: '/oauth/token',
      payload: { grant_type: 'password', username: 'a\u0000', password: 'x' },
    });
    expect(token.statusCode).toBe(400);
    expect(token.json()).toEqual(INVALID_REQUEST);
    expect(token.headers['cache-control']).toBe('no-store');
  });

  it('/api/v4 query and body parameters answer {"error":"<param> is invalid"}', async () => {
    const res = await app.inject({
      method: 'PUT',
      url: '/api/v4/notification_settings',
      headers: { 'private-token': token },
      payload: { notification_email: 'a\u0000@example.com' },
    });
    expect(res.statusCode).toBe(400);
    expect(res.json()).toEqual({ error: 'notification_email is invalid' });
  });

  it('nested JSON values and keys are checked too', async () => {
    const res = await app.inject({
      method: 'POST',
      url: '/users/sign_in',
      payload: { user: { login: ['ok', 'b\u0000'] } },
    });
    expect(res.statusCode).toBe(400);
    expect(res.body).toContain('Lanyard could not read this request: user[login] is invalid.');
  });
});
