// The ordered list of migrations. A static table (not a directory scan) so the Lambda bundle
// carries them and the deploy can hash them. Append only; never edit a migration that shipped.
import type { Migration } from 'kysely';
import * as m0001 from './0001-initial-schema';
import * as m0002 from './0002-notification-flags';
import * as m0003 from './0003-encrypt-totp-secrets';
import * as m0004 from './0004-openid-connect';
import * as m0005 from './0005-device-grants';
import * as m0006 from './0006-notification-settings-source-indexes';
import * as m0007 from './0007-recovery-codes';
import * as m0008 from './0008-retention-indexes';
import * as m0009 from './0009-application-tokens';
import * as m0010 from './0010-personal-access-token-rotation';
import * as m0011 from './0011-attempt-reservations';
import * as m0012 from './0012-keys-out-of-database-visibility-by-parent';
import * as m0013 from './0013-notification-holder-indexes';
import * as m0014 from './0014-mail-outbox';
import * as m0015 from './0015-account-emails';
import * as m0016 from './0016-logout';
import * as m0017 from './0017-notification-events';
import * as m0018 from './0018-mail-suppressions';
import * as m0019 from './0019-backchannel-logout';
import * as m0020 from './0020-resource-indicators-dynamic-clients';
import * as m0021 from './0021-dpop';
import * as m0022 from './0022-webauthn';
import * as m0023 from './0023-two-factor-enrolment';
import * as m0024 from './0024-event-recipient-mail-link';
import * as m0025 from './0025-mail-outbox-queue-index';
import * as m0026 from './0026-token-fillfactor';
import * as m0027 from './0027-notification-events-retention';
import * as m0028 from './0028-device-grant-sign-in';
import * as m0029 from './0029-logout-deliveries-queue-index';
import * as m0030 from './0030-notification-subscriptions';
import * as m0031 from './0031-mail-outbox-hot-claim';
import * as m0032 from './0032-token-code-on-chain-root';
import * as m0033 from './0033-authorization-code-types';
import * as m0034 from './0034-token-dpop-jkt-unchecked';
import * as m0035 from './0035-token-links-and-key-indexes';

export const migrations: Record<string, Migration> = {
  '0001-initial-schema': m0001,
  '0002-notification-flags': m0002,
  '0003-encrypt-totp-secrets': m0003,
  '0004-openid-connect': m0004,
  '0005-device-grants': m0005,
  '0006-notification-settings-source-indexes': m0006,
  '0007-recovery-codes': m0007,
  '0008-retention-indexes': m0008,
  '0009-application-tokens': m0009,
  '0010-personal-access-token-rotation': m0010,
  '0011-attempt-reservations': m0011,
  '0012-keys-out-of-database-visibility-by-parent': m0012,
  '0013-notification-holder-indexes': m0013,
  '0014-mail-outbox': m0014,
  '0015-account-emails': m0015,
  '0016-logout': m0016,
  '0017-notification-events': m0017,
  '0018-mail-suppressions': m0018,
  '0019-backchannel-logout': m0019,
  '0020-resource-indicators-dynamic-clients': m0020,
  '0021-dpop': m0021,
  '0022-webauthn': m0022,
  '0023-two-factor-enrolment': m0023,
  '0024-event-recipient-mail-link': m0024,
  '0025-mail-outbox-queue-index': m0025,
  '0026-token-fillfactor': m0026,
  '0027-notification-events-retention': m0027,
  '0028-device-grant-sign-in': m0028,
  '0029-logout-deliveries-queue-index': m0029,
  '0030-notification-subscriptions': m0030,
  '0031-mail-outbox-hot-claim': m0031,
  '0032-token-code-on-chain-root': m0032,
  '0033-authorization-code-types': m0033,
  '0034-token-dpop-jkt-unchecked': m0034,
  '0035-token-links-and-key-indexes': m0035,
};
