// Build the real app over a test database (logger off unless LOG_TESTS=1).
import { chmodSync, mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import type { FastifyInstance } from 'fastify';
import { afterAll } from 'vitest';
import { buildApp } from '../../service/app';
import { loadConfig, type Config } from '../../service/config';
import type { Db } from '../../service/db/schema';
import { fileKeyRingSource } from '../../service/local/service-key-file';

let home: string | undefined;

/**
 * This test file's LANYARD_HOME (its service key ring and signing keys): a fresh folder per file
 * (vitest loads modules per file), mode 0755 like the one `npm start` is given, removed at exit.
 */
export function testHome(): string {
  if (!home) {
    home = mkdtempSync(path.join(os.tmpdir(), 'lanyard-home-'));
    chmodSync(home, 0o755);
    const made = home;
    process.on('exit', () => rmSync(made, { recursive: true, force: true }));
  }
  return home;
}

export function testConfig(overrides: Partial<Config> = {}): Config {
  return loadConfig({ LOG_LEVEL: 'silent' }, { home: testHome(), ...overrides });
}

/** The service key ring of this file's LANYARD_HOME (what the app under test signs and seals with). */
export const testKeyRing = () => fileKeyRingSource(testHome()).load();

export async function buildTestApp(db: Db, overrides: Partial<Config> = {}): Promise<FastifyInstance> {
  const app = await buildApp({
    db,
    config: testConfig(overrides),
    logger: process.env.LOG_TESTS ? { level: 'debug' } : false,
  });
  afterAll(() => app.close());
  return app;
}
