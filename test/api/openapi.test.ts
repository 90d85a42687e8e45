// The OpenAPI document of /api/v4: generated from the route schemas, served without a token,
// valid OpenAPI 3, and listing every /api/v4 route the app has.
import { Validator } from '@seriousme/openapi-schema-validator';
import type { FastifyInstance } from 'fastify';
import { beforeAll, describe, expect, it } from 'vitest';
import { buildTestApp } from '../support/app';
import { createTestDatabase } from '../support/db';

let app: FastifyInstance;

beforeAll(async () => {
  const { db } = await createTestDatabase();
  app = await buildTestApp(db);
});

/**
 * Every /api/v4 route of the app, from Fastify's own route table (printRoutes' tree, whose lines
 * are `<indent>├── <segment> (METHODS)`, a child's path continuing its parent's). HEAD twins excluded.
 */
function apiRoutes(): string[] {
  const out = new Set<string>();
  const stack: string[] = [];
  for (const line of app.printRoutes({ commonPrefix: false }).split('\n')) {
    const m = /^((?:[│ ] {3})*)[├└]── (.*?)(?: \(([^)]+)\))?$/.exec(line);
    if (!m) continue;
    const depth = m[1].length / 4;
    stack.length = depth;
    const path = (stack[depth - 1] ?? '') + m[2];
    stack[depth] = path;
    for (const method of m[3]?.split(', ') ?? []) {
      if (method !== 'HEAD' && path.startsWith('/api/v4/')) out.add(`${method} ${path}`);
    }
  }
  return [...out];
}

describe('GET /api/v4/openapi.json', () => {
  it('is served without authentication as JSON', async () => {
    const res = await app.inject({ url: '/api/v4/openapi.json' });
    expect(res.statusCode).toBe(200);
    expect(res.headers['content-type']).toBe('application/json');
    expect(res.json().openapi).toBe('3.0.3');
  });

  it('validates as OpenAPI 3', async () => {
    const doc = (await app.inject({ url: '/api/v4/openapi.json' })).json();
    const validator = new Validator();
    const result = await validator.validate(doc);
    expect(result.errors ?? []).toEqual([]);
    expect(result.valid).toBe(true);
    expect(validator.version).toBe('3.0');
  });

  it('lists every /api/v4 route of the app, and nothing else', async () => {
    const doc = (await app.inject({ url: '/api/v4/openapi.json' })).json();
    const documented = Object.entries(doc.paths as Record<string, Record<string, unknown>>)
      .flatMap(([path, ops]) => Object.keys(ops).map((m) => `${m.toUpperCase()} ${path}`))
      .sort();
    const actual = apiRoutes()
      .map((r) => r.replace(/:(\w+)/g, '{$1}'))
      .sort();
    expect(actual.length).toBeGreaterThanOrEqual(7);
    expect(documented).toEqual(actual);
    expect(documented).toEqual([
      'DELETE /api/v4/applications/{id}',
      'DELETE /api/v4/personal_access_tokens/self',
      'DELETE /api/v4/personal_access_tokens/{id}',
      'GET /api/v4/applications',
      'GET /api/v4/audit_events',
      'GET /api/v4/audit_events/{id}',
      'GET /api/v4/groups',
      'GET /api/v4/groups/{id}',
      'GET /api/v4/groups/{id}/notification_settings',
      'GET /api/v4/groups/{id}/notification_settings/effective',
      'GET /api/v4/metadata',
      'GET /api/v4/notification_settings',
      'GET /api/v4/openapi.json',
      'GET /api/v4/personal_access_tokens',
      'GET /api/v4/personal_access_tokens/self',
      'GET /api/v4/personal_access_tokens/{id}',
      'GET /api/v4/projects',
      'GET /api/v4/projects/{id}',
      'GET /api/v4/projects/{id}/notification_settings',
      'GET /api/v4/projects/{id}/notification_settings/effective',
      'GET /api/v4/user',
      'GET /api/v4/users',
      'GET /api/v4/users/{id}',
      'GET /api/v4/version',
      'POST /api/v4/applications',
      'POST /api/v4/applications/{id}/renew-secret',
      'POST /api/v4/groups/{id}/notification_events',
      'POST /api/v4/groups/{id}/notification_recipients',
      'POST /api/v4/personal_access_tokens/self/rotate',
      'POST /api/v4/personal_access_tokens/{id}/rotate',
      'POST /api/v4/projects/{id}/notification_events',
      'POST /api/v4/projects/{id}/notification_recipients',
      'POST /api/v4/users/{id}/block',
      'POST /api/v4/users/{id}/personal_access_tokens',
      'POST /api/v4/users/{id}/unblock',
      'PUT /api/v4/applications/{id}',
      'PUT /api/v4/groups/{id}/notification_settings',
      'PUT /api/v4/notification_settings',
      'PUT /api/v4/projects/{id}/notification_settings',
    ]);
  });

  it('documents parameters, responses and authentication from the route schemas', async () => {
    const doc = (await app.inject({ url: '/api/v4/openapi.json' })).json();
    const put = doc.paths['/api/v4/projects/{id}/notification_settings'].put;
    expect(put.parameters.find((p: { in: string; name: string }) => p.in === 'path' && p.name === 'id')).toMatchObject({
      required: true,
    });
    expect(put.parameters.map((p: { name: string }) => p.name)).toEqual(
      expect.arrayContaining(['level', 'new_note', 'success_pipeline']),
    );
    expect(Object.keys(put.requestBody.content)).toEqual(expect.arrayContaining(['application/json']));
    expect(Object.keys(put.responses).sort()).toEqual(['200', '400', '401', '403', '404']);
    // Bodies are named components ($ref), as generators need them.
    expect(put.responses['200'].content['application/json'].schema).toEqual({
      $ref: '#/components/schemas/NotificationSettings',
    });
    expect(doc.components.schemas.NotificationSettings.properties.events).toEqual({
      $ref: '#/components/schemas/NotificationEvents',
    });
    expect(doc.components.schemas.NotificationEvents.required).toHaveLength(19);
    expect(doc.paths['/api/v4/user'].get.responses['200'].content['application/json'].schema).toEqual({
      $ref: '#/components/schemas/CurrentUser',
    });
    expect(doc.components.schemas.CurrentUser.properties).toHaveProperty('two_factor_enabled');
    expect(Object.keys(doc.components.securitySchemes).sort()).toEqual([
      'access_token_query',
      'bearer',
      'dpop',
      'oauth2',
      'private_token_header',
      'private_token_query',
    ]);
    expect(doc.paths['/api/v4/openapi.json'].get.security).toEqual([]);
  });

  it("names the operators' API: operationIds and named schemas for the token, user and audit routes", async () => {
    const doc = (await app.inject({ url: '/api/v4/openapi.json' })).json();
    const op = (method: string, path: string) => doc.paths[`/api/v4${path}`][method];
    const ref = (name: string) => ({ $ref: `#/components/schemas/${name}` });
    const json = (
      o: { responses: Record<string, { content?: Record<string, { schema: unknown }> }> },
      status: string,
    ) => o.responses[status].content?.['application/json'].schema;
    const expected: Array<[string, string, string, string, unknown]> = [
      [
        'get',
        '/personal_access_tokens',
        'listPersonalAccessTokens',
        '200',
        { type: 'array', items: ref('PersonalAccessTokenWithLastUsedIps') },
      ],
      ['get', '/personal_access_tokens/self', 'getCurrentPersonalAccessToken', '200', ref('PersonalAccessToken')],
      [
        'get',
        '/personal_access_tokens/{id}',
        'getPersonalAccessToken',
        '200',
        ref('PersonalAccessTokenWithLastUsedIps'),
      ],
      [
        'post',
        '/personal_access_tokens/{id}/rotate',
        'rotatePersonalAccessToken',
        '200',
        ref('PersonalAccessTokenWithToken'),
      ],
      [
        'post',
        '/personal_access_tokens/self/rotate',
        'rotateCurrentPersonalAccessToken',
        '200',
        ref('PersonalAccessTokenWithToken'),
      ],
      ['delete', '/personal_access_tokens/{id}', 'revokePersonalAccessToken', '204', undefined],
      ['delete', '/personal_access_tokens/self', 'revokeCurrentPersonalAccessToken', '204', undefined],
      [
        'post',
        '/users/{id}/personal_access_tokens',
        'createUserPersonalAccessToken',
        '201',
        ref('PersonalAccessTokenWithToken'),
      ],
    ];
    for (const [method, path, operationId, status, schema] of expected) {
      const o = op(method, path);
      expect([path, o.operationId, json(o, status)]).toEqual([path, operationId, schema]);
    }
    expect(doc.components.schemas.PersonalAccessTokenWithToken.required).toEqual([
      'id',
      'name',
      'revoked',
      'created_at',
      'description',
      'scopes',
      'user_id',
      'last_used_at',
      'active',
      'expires_at',
      'token',
    ]);
  });
});
