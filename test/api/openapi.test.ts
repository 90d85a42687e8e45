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
      'GET /api/v4/applications',
      'GET /api/v4/groups',
      'GET /api/v4/groups/{id}',
      'GET /api/v4/groups/{id}/notification_settings',
      'GET /api/v4/groups/{id}/notification_settings/effective',
      'GET /api/v4/metadata',
      'GET /api/v4/notification_settings',
      'GET /api/v4/openapi.json',
      'GET /api/v4/projects',
      'GET /api/v4/projects/{id}',
      'GET /api/v4/projects/{id}/notification_settings',
      'GET /api/v4/projects/{id}/notification_settings/effective',
      'GET /api/v4/user',
      'GET /api/v4/version',
      'POST /api/v4/applications',
      'POST /api/v4/applications/{id}/renew-secret',
      'POST /api/v4/groups/{id}/notification_recipients',
      'POST /api/v4/projects/{id}/notification_recipients',
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
      'oauth2',
      'private_token_header',
      'private_token_query',
    ]);
    expect(doc.paths['/api/v4/openapi.json'].get.security).toEqual([]);
  });
});
