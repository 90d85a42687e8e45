// The one migrator: used by `npm start`, the CLI (`db migrate`/`db status`), the tests and the deploy.
import { Migrator, type MigrationProvider } from 'kysely';
import { migrations } from '../../migrations';
import type { DbOrTrx } from './schema';

const provider: MigrationProvider = { getMigrations: async () => migrations };

export function createMigrator(db: DbOrTrx): Migrator {
  return new Migrator({ db, provider });
}

export interface MigrationStatus {
  applied: string[];
  pending: string[];
}

export async function migrationStatus(db: DbOrTrx): Promise<MigrationStatus> {
  const all = await createMigrator(db).getMigrations();
  return {
    applied: all.filter((m) => m.executedAt).map((m) => m.name),
    pending: all.filter((m) => !m.executedAt).map((m) => m.name),
  };
}

/** Apply every pending migration; throws with the failing migration's name. Returns the status after. */
export async function migrateToLatest(db: DbOrTrx): Promise<MigrationStatus & { newlyApplied: string[] }> {
  const { error, results } = await createMigrator(db).migrateToLatest();
  const failed = results?.find((r) => r.status === 'Error');
  if (error) {
    const e = new Error(
      `migration ${failed?.migrationName ?? '(unknown)'} failed: ${(error as Error).message ?? error}`,
    );
    (e as Error & { cause?: unknown }).cause = error;
    throw e;
  }
  const status = await migrationStatus(db);
  return { ...status, newlyApplied: (results ?? []).filter((r) => r.status === 'Success').map((r) => r.migrationName) };
}
