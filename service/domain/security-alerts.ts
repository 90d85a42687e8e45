// Security alerts: a short e-mail to the account's primary address when something that protects
// the account changes (password changed or reset, two-factor turned off, recovery codes
// regenerated, a personal access token created, an address added). Written to the outbox in the
// transaction of the change itself: no alert for a change that rolled back, no change without it.
import type { DbOrTrx, User } from '../db/schema';
import { type MailSettings, type SecurityAlert, securityAlertMessage } from './mail/account-messages';
import { enqueueMail } from './mail/outbox';

export type { MailSettings, SecurityAlert };

export async function enqueueSecurityAlert(
  trx: DbOrTrx,
  user: Pick<User, 'email' | 'name' | 'username'>,
  alert: SecurityAlert,
  mail: MailSettings,
): Promise<void> {
  const message = securityAlertMessage(mail, user, alert, new Date());
  await enqueueMail(trx, { to: user.email, ...message, kind: `security_alert.${alert.kind}` });
}
