// Fixtures for the /api/v4 tests: users, personal access tokens and OAuth access tokens inserted
// directly (digests only, as the service stores them), groups/projects/members, and a real HTTP
// server for the GitLab client library.
import type { FastifyInstance } from 'fastify';
import { randomBytes } from 'node:crypto';
import { createServer } from 'node:net';
import type { Db, User } from '../../service/db/schema';
import { addMember, createGroup, createProject } from '../../service/domain/namespaces';
import { randomHex, sha256Hex } from '../../service/domain/secrets';
import { createUser } from '../../service/domain/users';
import { buildTestApp } from './app';

export const TEST_PASSWORD = 'correct horse battery staple 42';

export async function makeUser(
  db: Db,
  username: string,
  options: { admin?: boolean; blocked?: boolean; twoFactor?: boolean; email?: string } = {},
): Promise<User> {
  const user = await createUser(db, {
    username,
    email: options.email ?? `${username}@example.com`,
    password: TEST_PASSWORD,
    isAdmin: options.admin,
  });
  if (options.blocked || options.twoFactor) {
    return db
      .updateTable('users')
      .set({
        ...(options.blocked ? { state: 'blocked' as const } : {}),
        ...(options.twoFactor ? { otp_secret: 'JBSWY3DPEHPK3PXP' } : {}),
      })
      .where('id', '=', user.id)
      .returningAll()
      .executeTakeFirstOrThrow();
  }
  return user;
}

export interface TokenOptions {
  /** PAT: YYYY-MM-DD; OAuth: a Date. */
  expiresAt?: string | Date | null;
  revoked?: boolean;
}

/** A personal access token (glpat-…) for the user; returns the plaintext. */
export async function makePat(
  db: Db,
  user: Pick<User, 'id'>,
  scopes: string[],
  options: TokenOptions = {},
): Promise<string> {
  const token = `glpat-${randomBytes(32).toString('base64url')}`;
  await db
    .insertInto('personal_access_tokens')
    .values({
      user_id: user.id,
      name: 'test',
      token_digest: sha256Hex(token),
      scopes,
      expires_at: (options.expiresAt as string | null | undefined) ?? null,
      revoked_at: options.revoked ? new Date() : null,
    })
    .execute();
  return token;
}

/** An OAuth access token (64 hex) for the user, as the token endpoint would store it. */
export async function makeOAuthToken(
  db: Db,
  user: Pick<User, 'id'>,
  scopes: string[],
  options: TokenOptions = {},
): Promise<string> {
  const token = randomHex();
  await db
    .insertInto('oauth_access_tokens')
    .values({
      user_id: user.id,
      application_id: null,
      token_digest: sha256Hex(token),
      scopes,
      expires_at: (options.expiresAt as Date | undefined) ?? new Date(Date.now() + 7200_000),
      revoked_at: options.revoked ? new Date() : null,
    })
    .execute();
  return token;
}

export { addMember, createGroup, createProject };

/** Listen on 127.0.0.1:0 and return the base URL (the app is closed by buildTestApp's afterAll). */
export async function listen(app: FastifyInstance): Promise<string> {
  await app.listen({ host: '127.0.0.1', port: 0 });
  const address = app.server.address();
  if (!address || typeof address === 'string') throw new Error('no TCP address');
  return `http://127.0.0.1:${address.port}`;
}

/**
 * The real app listening on 127.0.0.1 with PUBLIC_URL set to its own address, so that GitLab's
 * absolute pagination Link URLs lead back to it (clients follow them). Closed by buildTestApp.
 */
export async function serveOnOwnUrl(db: Db): Promise<{ app: FastifyInstance; url: string }> {
  const probe = createServer();
  await new Promise<void>((resolve) => probe.listen(0, '127.0.0.1', resolve));
  const { port } = probe.address() as { port: number };
  await new Promise((resolve) => probe.close(resolve));
  const url = `http://127.0.0.1:${port}`;
  const app = await buildTestApp(db, { publicUrl: url });
  await app.listen({ host: '127.0.0.1', port });
  return { app, url };
}
