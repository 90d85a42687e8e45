// Per-file fixtures for the OAuth and web tests: a fresh database, the real app, users and apps.
import type { FastifyInstance } from 'fastify';
import { afterAll, beforeAll } from 'vitest';
import { buildApp } from '../../../service/app';
import type { Config } from '../../../service/config';
import type { Db } from '../../../service/db/schema';
import { registerApplication, type RegisterApplicationInput } from '../../../service/domain/applications';
import { setTwoFactor, createUser, setUserState } from '../../../service/domain/users';
import { totp } from '../../support/totp';
import { testConfig, testKeyRing } from '../../support/app';
import { createTestDatabase, type TestDatabase } from '../../support/db';

export interface Fixture {
  db: Db;
  handle: TestDatabase;
  app: FastifyInstance;
  config: Config;
}

/**
 * A database and an app for this file, created in beforeAll (no top-level await: the test files
 * are CommonJS for tsc) and destroyed in afterAll.
 */
export function useFixture(options: { max?: number; config?: Partial<Config> } = {}): Fixture {
  const fixture = {} as Fixture;
  beforeAll(async () => {
    fixture.handle = await createTestDatabase({ max: options.max ?? 12 });
    fixture.db = fixture.handle.db;
    fixture.config = testConfig(options.config);
    fixture.app = await buildApp({
      db: fixture.db,
      config: fixture.config,
      logger: process.env.LOG_TESTS ? { level: 'debug' } : false,
    });
  });
  afterAll(async () => {
    await fixture.app?.close();
    await fixture.handle?.destroy();
  });
  return fixture;
}

export const PASSWORD = 'correct horse battery staple';

export async function makeUser(
  db: Db,
  username: string,
  opts: { twoFactor?: boolean; blocked?: boolean; password?: string } = {},
) {
  let user = await createUser(db, { username, email: `${username}@example.com`, password: opts.password ?? PASSWORD });
  let otpSecret: string | undefined;
  if (opts.twoFactor) {
    const r = await setTwoFactor(db, username, true, 'system', await testKeyRing());
    user = r.user;
    otpSecret = r.otpSecret;
  }
  if (opts.blocked) user = await setUserState(db, username, 'blocked');
  return { user, otpSecret, otp: (at = Date.now()) => totp(otpSecret!, at) };
}

export const REDIRECT_URI = 'https://client.example/callback';

export async function makeApp(db: Db, input: Partial<RegisterApplicationInput> = {}) {
  const { application, secret } = await registerApplication(db, {
    name: 'Test App',
    redirectUris: [REDIRECT_URI],
    scopes: 'api read_user',
    ...input,
  });
  return { application, secret, clientId: application.uid };
}

export const basic = (id: string, secret: string) =>
  `Basic ${Buffer.from(`${encodeURIComponent(id)}:${encodeURIComponent(secret)}`).toString('base64')}`;

export const form = (values: Record<string, string | undefined>): string =>
  new URLSearchParams(Object.entries(values).filter((e): e is [string, string] => e[1] !== undefined)).toString();

export const FORM = { 'content-type': 'application/x-www-form-urlencoded' };
