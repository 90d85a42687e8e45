// The migration function's logic, built by a factory so tests drive it on a test database with
// an in-memory secret store: migrate, then keep the app role (lanyard_app) and its secret current,
// then seed the session key ring and the first OpenID Connect signing key. Also `status`, and `rotate-db-password` for the app role.
import type { Db } from '../db/schema';
import { migrateToLatest, migrationStatus } from '../db/migrator';
import { assertSubscriptionRulesCurrent } from '../domain/notifications/subscriptions';
import { ensureAppDbCredentials, rotateAppDbPassword } from './app-db-credentials';
import type { SecretStore } from './secret-store';
import { resealTotpSecrets } from '../domain/totp-secrets';
import { ensureKeyRingSecret, secretKeyRingSource } from './session-key-ring';
import type { SigningKeyPolicy } from '../domain/signing-keys';
import { ensureSigningKeySecret } from './signing-key-secret';

export interface MigrateEvent {
  /** "status" reports without applying; "rotate-db-password" gives the app role a new password; default "migrate". */
  action?: 'migrate' | 'status' | 'rotate-db-password';
}

export interface MigrateResult {
  applied: string[];
  pending: string[];
  /** Applied by this invocation. */
  newlyApplied: string[];
  /** The app role and its secret (absent when no app secret is configured, e.g. local runs). */
  appRole?: { secret: 'created' | 'present'; role: 'created' | 'updated' } | { rotated: true };
  /** The session key ring secret: created now or already present (absent when not configured). */
  sessionKeyRing?: 'created' | 'present';
  /** The OpenID Connect signing key secret: its first key written now, or already present. */
  signingKeys?: 'created' | 'present';
}

export interface MigrateHandlerOptions {
  /** Connected as the master user: the only function that is. */
  db: Db;
  store?: SecretStore;
  appDbSecretArn?: string;
  sessionKeysSecretArn?: string;
  signingKeysSecretArn?: string;
  signingKeyPolicy?: SigningKeyPolicy;
}

export function createMigrateHandler(options: MigrateHandlerOptions) {
  const { db, store } = options;
  return async (event: MigrateEvent | null | undefined): Promise<MigrateResult> => {
    const action = event?.action ?? 'migrate';
    if (action === 'status') return { ...(await migrationStatus(db)), newlyApplied: [] };
    if (action === 'rotate-db-password') {
      if (!store || !options.appDbSecretArn) throw new Error('rotate-db-password needs APP_DB_SECRET_ARN');
      const appRole = await rotateAppDbPassword(db, store, options.appDbSecretArn);
      return { ...(await migrationStatus(db)), newlyApplied: [], appRole };
    }
    if (action !== 'migrate') throw new Error(`unknown action ${JSON.stringify(action)}`);
    const { applied, pending, newlyApplied } = await migrateToLatest(db);
    await assertSubscriptionRulesCurrent(db);
    const result: MigrateResult = { applied, pending, newlyApplied };
    if (store && options.appDbSecretArn) {
      // Every run, not only when something was applied: grants follow the tables.
      result.appRole = await ensureAppDbCredentials(db, store, options.appDbSecretArn);
    }
    if (store && options.sessionKeysSecretArn) {
      result.sessionKeyRing = await ensureKeyRingSecret(store, options.sessionKeysSecretArn);
      // The deployed key ring is in Secrets Manager, out of a frozen migration's reach: the deploy's
      // data pass seals TOTP secrets still in clear (and any under a retired key) with it.
      await resealTotpSecrets(db, await secretKeyRingSource(store, options.sessionKeysSecretArn).load());
    }
    if (store && options.signingKeysSecretArn && options.signingKeyPolicy) {
      result.signingKeys = await ensureSigningKeySecret(store, options.signingKeysSecretArn, options.signingKeyPolicy);
    }
    return result;
  };
}
