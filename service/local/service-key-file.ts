// The local service key ring: LANYARD_HOME/service-keys.json, mode 0600, created on first use, in
// the document format of the deployed Secrets Manager secret. Outside the database so that a dump
// or a backup of it holds no key: it cannot forge a session or pending-TOTP cookie nor open a TOTP
// seed (issue 22). Keys an older installation kept in the service_keys table move here at start-up
// (moveDatabaseServiceKeys, before migration 0012 drops the table).
import path from 'node:path';
import { migrateToLatest } from '../db/migrator';
import { assertSubscriptionRulesCurrent } from '../domain/notifications/subscriptions';
import type { Db } from '../db/schema';
import {
  documentKeyRingSource,
  moveDatabaseServiceKeys,
  type KeyRingDocumentStore,
  type KeyRingSource,
  rotateKeyRingDocument,
} from '../domain/service-keys';
import { resealTotpSecrets } from '../domain/totp-secrets';
import { ensurePrivateFile, readIfPresent, replacePrivateFile } from './private-file';

export const serviceKeyFilePath = (home: string) => path.join(home, 'service-keys.json');

/** The document, created with a first key when missing. */
export const ensureServiceKeyFile = (home: string): Promise<string> =>
  ensurePrivateFile(serviceKeyFilePath(home), () => rotateKeyRingDocument(undefined).document);

/** The file as a store: `secrets rotate session-key` and the move out of the database write it. */
export const serviceKeyFileStore = (home: string): KeyRingDocumentStore => ({
  read: () => readIfPresent(serviceKeyFilePath(home)),
  write: (document) => replacePrivateFile(serviceKeyFilePath(home), document),
});

/** Re-read on every load (the app caches the ring; a miss reloads): a CLI rotation applies at once. */
export const fileKeyRingSource = (home: string): KeyRingSource =>
  documentKeyRingSource(() => ensureServiceKeyFile(home));

/**
 * A local installation's migrations (`npm start`, the CLI on its embedded database, `db migrate`):
 * first the keys an older version kept in the database move to the file (migration 0012 drops their
 * table and refuses while it holds any), then the migrations, then every TOTP seed still in clear
 * or under an older key is sealed under the file's signing key (one indexed query when none is).
 */
export async function migrateLocalDatabase(
  db: Db,
  home: string,
  log: (line: string) => void,
): Promise<{ applied: string[]; pending: string[]; newlyApplied: string[] }> {
  const moved = await moveDatabaseServiceKeys(db, serviceKeyFileStore(home));
  if (moved.moved)
    log(
      `Moved ${moved.moved} service key(s) out of the database into ${serviceKeyFilePath(home)}; a new key signs from now on (${moved.resealedTotpSecrets} TOTP secret(s) sealed again).`,
    );
  const migrated = await migrateToLatest(db);
  await assertSubscriptionRulesCurrent(db);
  const sealed = await resealTotpSecrets(db, await fileKeyRingSource(home).load());
  if (sealed) log(`Encrypted ${sealed} TOTP secret(s) at rest.`);
  return migrated;
}
