import { sql } from 'kysely';
import { beforeAll, describe, expect, it } from 'vitest';
import type { FastifyInstance } from 'fastify';
import { ApiError } from '../../../service/http/errors';
import { InvalidClient, InvalidGrant } from '../../../service/oauth/errors';
import { invalid } from '../../../service/domain/errors';
import { createTestDatabase } from '../../support/db';
import { buildTestApp } from '../../support/app';

describe('the root error handler', () => {
  let app: FastifyInstance;
  beforeAll(async () => {
    const t = await createTestDatabase();
    app = await buildTestApp(t.db);
    // Routes that fail in each of the ways the handler must serialise.
    app.post('/oauth/test-invalid-grant', async () => {
      throw new InvalidGrant();
    });
    app.post('/oauth/test-invalid-client', async () => {
      throw new InvalidClient('Doorkeeper');
    });
    app.get('/api/v4/test-forbidden', async () => {
      throw new ApiError(403, { message: '403 Forbidden' });
    });
    app.get('/api/v4/test-domain', async () => {
      throw invalid('name must not be empty');
    });
    app.get('/api/v4/test-sql', async () => {
      await sql`select secret_column from no_such_table where password = 'hunter2'`.execute(t.db);
    });
    app.get('/api/v4/test-throw', async () => {
      throw new TypeError("Cannot read properties of undefined (reading 'token_digest')");
    });
    app.post(
      '/oauth/test-validated',
      { schema: { body: { type: 'object', required: ['x'], properties: { x: { type: 'string' } } } } },
      async () => ({}),
    );
    await app.ready();
  });

  it('serialises OAuth errors as {error, error_description} with no-store', async () => {
    const res = await app.inject({ method: 'POST', url: '/oauth/test-invalid-grant' });
    expect(res.statusCode).toBe(400);
    expect(res.headers['content-type']).toBe('application/json; charset=utf-8');
    expect(res.headers['cache-control']).toBe('no-store');
    expect(res.headers.pragma).toBe('no-cache');
    expect(res.json()).toEqual({
      error: 'invalid_grant',
      error_description:
        'The provided authorization grant is invalid, expired, revoked, does not match the redirection URI used in the authorization request, or was issued to another client.',
    });
  });

  it('sends WWW-Authenticate with invalid_client after HTTP Basic', async () => {
    const res = await app.inject({ method: 'POST', url: '/oauth/test-invalid-client' });
    expect(res.statusCode).toBe(401);
    expect(res.headers['www-authenticate']).toBe('Basic realm="Doorkeeper"');
    expect(res.json()).toEqual({
      error: 'invalid_client',
      error_description:
        'Client authentication failed due to unknown client, no client authentication included, or unsupported authentication method.',
    });
  });

  it('answers a malformed OAuth request with invalid_request', async () => {
    const res = await app.inject({ method: 'POST', url: '/oauth/test-validated', payload: {} });
    expect(res.statusCode).toBe(400);
    expect(res.json()).toEqual({
      error: 'invalid_request',
      error_description:
        'The request is missing a required parameter, includes an unsupported parameter value, or is otherwise malformed.',
    });
  });

  it('serialises GitLab API errors as their {message} body', async () => {
    const res = await app.inject({ method: 'GET', url: '/api/v4/test-forbidden' });
    expect(res.statusCode).toBe(403);
    expect(res.json()).toEqual({ message: '403 Forbidden' });
  });

  it('maps domain validation errors to 400 {message}', async () => {
    const res = await app.inject({ method: 'GET', url: '/api/v4/test-domain' });
    expect(res.statusCode).toBe(400);
    expect(res.json()).toEqual({ message: 'name must not be empty' });
  });

  it('answers unknown /api/v4 routes with {"error":"404 Not Found"}', async () => {
    for (const url of ['/api/v4/nope', '/api/v4/projects/1/nope?x=1', '/api/v4']) {
      const res = await app.inject({ method: 'GET', url });
      expect(res.statusCode).toBe(404);
      expect(res.headers['content-type']).toBe('application/json');
      expect(res.json()).toEqual({ error: '404 Not Found' });
    }
  });

  it('answers other unknown routes with the 404 page, or 404 {message} to a client asking for JSON alone', async () => {
    const page = await app.inject({ method: 'GET', url: '/nope' });
    expect(page.statusCode).toBe(404);
    expect(page.headers['content-type']).toBe('text/html; charset=utf-8');
    expect(page.body).toContain('<h1>Page not found</h1>');
    const json = await app.inject({ method: 'GET', url: '/nope', headers: { accept: 'application/json' } });
    expect(json.statusCode).toBe(404);
    expect(json.json()).toEqual({ message: '404 Not Found' });
    // A machine endpoint's unknown neighbour keeps JSON whatever the Accept.
    const oauth = await app.inject({ method: 'GET', url: '/oauth/nope', headers: { accept: 'text/html' } });
    expect([oauth.statusCode, oauth.json()]).toEqual([404, { message: '404 Not Found' }]);
  });

  it('answers malformed JSON with 400, not 500', async () => {
    const res = await app.inject({
      method: 'PUT',
      url: '/api/v4/test-forbidden',
      headers: { 'content-type': 'application/json' },
      payload: '{"level":',
    });
    expect(res.statusCode).toBe(400);
  });

  it('hides SQL errors behind an opaque 500', async () => {
    const res = await app.inject({ method: 'GET', url: '/api/v4/test-sql' });
    expect(res.statusCode).toBe(500);
    expect(res.json()).toEqual({ message: '500 Internal Server Error' });
    expect(res.body).not.toMatch(/no_such_table|select|hunter2|relation|at /i);
  });

  it('hides thrown exceptions (message and stack) behind an opaque 500', async () => {
    const res = await app.inject({ method: 'GET', url: '/api/v4/test-throw' });
    expect(res.statusCode).toBe(500);
    expect(res.body).toBe('{"message":"500 Internal Server Error"}');
  });
});
