// The ordered list of migrations. A static table (not a directory scan) so the Lambda bundle
// carries them and the deploy can hash them. Append only; never edit a migration that shipped.
import type { Migration } from 'kysely';
import * as m0001 from './0001-initial-schema';
import * as m0008 from './0008-retention-indexes';

export const migrations: Record<string, Migration> = {
  '0001-initial-schema': m0001,
  '0008-retention-indexes': m0008,
};
