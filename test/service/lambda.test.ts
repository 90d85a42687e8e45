// The Lambda entry (service/lambda.ts) answering API Gateway HTTP API v2 events on real PostgreSQL.
import { afterAll, describe, expect, it, vi } from 'vitest';
import { createTestDatabase } from '../support/db';
import { httpApiEvent, lambdaContext } from '../support/api-gateway';
import { testConfig } from '../support/app';
import { buildApp } from '../../service/app';

describe('service/lambda.ts handler', () => {
  it('answers health, unknown API routes and errors through API Gateway v2 events', async () => {
    const t = await createTestDatabase();
    vi.stubEnv('DATABASE_URL', t.url);
    vi.stubEnv('LOG_LEVEL', 'silent');
    afterAll(() => vi.unstubAllEnvs());
    const { handler } = await import('../../service/lambda.js');

    const health = await handler(httpApiEvent({ method: 'GET', path: '/-/health' }), lambdaContext);
    expect(health).toMatchObject({ statusCode: 200, body: '{"status":"ok"}', isBase64Encoded: false });
    expect((health as any).headers['content-type']).toBe('application/json; charset=utf-8');

    const missing = await handler(httpApiEvent({ method: 'GET', path: '/api/v4/nope', query: 'a=1' }), lambdaContext);
    expect(missing).toMatchObject({ statusCode: 404, body: '{"error":"404 Not Found"}' });
  });
});

describe('buildApp betweenSteps (the Lambda handler turns the event loop there)', () => {
  it('is awaited between the registration steps, and the app it builds answers', async () => {
    const t = await createTestDatabase();
    const turns: string[] = [];
    const app = await buildApp({
      db: t.db,
      config: testConfig(),
      logger: false,
      betweenSteps: async () => {
        await new Promise<void>((resolve) => setImmediate(resolve));
        turns.push('turn');
      },
    });
    expect(turns).toHaveLength(5);
    await app.ready();
    const health = await app.inject({ method: 'GET', url: '/-/health' });
    expect(health.statusCode).toBe(200);
    expect(health.body).toBe('{"status":"ok"}');
    await app.close();
  });
});
