// The account e-mails' words: forgotten-password instructions, address confirmation and the
// security alerts. Composed by buildMessage (message.ts): a greeting with the account's name,
// short paragraphs, at most one link on PUBLIC_URL, text and HTML parts saying the same thing.
import { buildMessage, type ComposedMessage, type MailSettings } from './message';

export type { MailSettings };

const host = (mail: MailSettings) => new URL(mail.publicUrl).host;

export function resetPasswordMessage(
  mail: MailSettings,
  name: string,
  token: string,
  validMinutes: number,
): ComposedMessage {
  return buildMessage(mail, {
    name,
    subject: 'Reset password instructions',
    paragraphs: [
      `Someone, hopefully you, asked to reset the password of your account on ${host(mail)}.`,
      'If you did not ask for this, ignore this e-mail: your password stays as it is.',
    ],
    action: { label: 'Choose a new password', path: '/users/password/edit', query: { reset_password_token: token } },
    closing: [`The link works once, for ${validMinutes} minutes.`],
  });
}

export function confirmEmailMessage(
  mail: MailSettings,
  name: string,
  email: string,
  token: string,
  validHours: number,
): ComposedMessage {
  return buildMessage(mail, {
    name,
    subject: 'Confirmation instructions',
    paragraphs: [`Confirm that ${email} is your e-mail address on ${host(mail)}.`],
    action: {
      label: 'Confirm your e-mail address',
      path: '/-/profile/emails/confirmation',
      query: { confirmation_token: token },
    },
    closing: [
      `The link works for ${validHours} hours.`,
      'If you did not add this address, ignore this e-mail: it stays unconfirmed.',
    ],
  });
}

/** The security alerts: what happened to the account, sent to its primary address. */
export type SecurityAlert =
  | { kind: 'password_changed' }
  | { kind: 'password_reset' }
  | { kind: 'two_factor_disabled' }
  | { kind: 'recovery_codes_regenerated' }
  | { kind: 'personal_access_token_created'; tokenName: string }
  | { kind: 'email_added'; email: string }
  | { kind: 'primary_email_changed'; email: string };

/** Subject and what happened, per alert (GitLab's subjects where GitLab sends the alert). */
function describe(alert: SecurityAlert): [string, string] {
  switch (alert.kind) {
    case 'password_changed':
      return ['Password changed', 'The password of your account was changed.'];
    case 'password_reset':
      return [
        'Password reset',
        'The password of your account was reset through a forgotten-password link, and every session was signed out.',
      ];
    case 'two_factor_disabled':
      return [
        'Two-factor authentication disabled',
        'Two-factor authentication was turned off for your account: it is now protected by its password alone.',
      ];
    case 'recovery_codes_regenerated':
      return [
        'Recovery codes regenerated',
        'New two-factor recovery codes were generated for your account; the old ones no longer work.',
      ];
    case 'personal_access_token_created':
      return [
        'A new personal access token has been created',
        `A personal access token named "${alert.tokenName}" was created for your account.`,
      ];
    case 'email_added':
      return ['New email address added', `The e-mail address ${alert.email} was added to your account.`];
    case 'primary_email_changed':
      return [
        'Email Changed',
        `The primary e-mail address of your account is now ${alert.email}; account e-mail goes there from now on.`,
      ];
  }
}

export function securityAlertMessage(
  mail: MailSettings,
  user: { name: string; username: string },
  alert: SecurityAlert,
  at: Date,
): ComposedMessage {
  const [subject, what] = describe(alert);
  return buildMessage(mail, {
    name: user.name,
    subject,
    paragraphs: [
      what,
      `Account: ${user.username} on ${host(mail)}, ${at.toISOString().slice(0, 16).replace('T', ' ')} UTC.`,
    ],
    action: { label: 'If this was not you, reset your password', path: '/users/password/new' },
    closing: ['Then review your account’s access tokens, applications and e-mail addresses.'],
  });
}
