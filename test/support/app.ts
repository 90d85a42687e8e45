// Build the real app over a test database (logger off unless LOG_TESTS=1).
import type { FastifyInstance } from 'fastify';
import { afterAll } from 'vitest';
import { buildApp } from '../../service/app';
import { loadConfig, type Config } from '../../service/config';
import type { Db } from '../../service/db/schema';

export function testConfig(overrides: Partial<Config> = {}): Config {
  return loadConfig({ LOG_LEVEL: 'silent' }, overrides);
}

export async function buildTestApp(db: Db, overrides: Partial<Config> = {}): Promise<FastifyInstance> {
  const app = await buildApp({
    db,
    config: testConfig(overrides),
    logger: process.env.LOG_TESTS ? { level: 'debug' } : false,
  });
  afterAll(() => app.close());
  return app;
}
