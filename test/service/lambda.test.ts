// The Lambda entry (service/lambda.ts) answering API Gateway HTTP API v2 events on real PostgreSQL.
import { afterAll, describe, expect, it, vi } from 'vitest';
import { createTestDatabase } from '../support/db';
import { httpApiEvent, lambdaContext } from '../support/api-gateway';

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
