// The ordered list of migrations. A static table (not a directory scan) so the Lambda bundle
// carries them and the deploy can hash them. Append only; never edit a migration that shipped.
import type { Migration } from 'kysely';
import * as m0001 from './0001-initial-schema';
import * as m0002 from './0002-notification-flags';
import * as m0007 from './0007-recovery-codes';

export const migrations: Record<string, Migration> = {
  '0001-initial-schema': m0001,
  '0002-notification-flags': m0002,
  '0007-recovery-codes': m0007,
};
