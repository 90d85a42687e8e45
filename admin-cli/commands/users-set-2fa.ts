// `users set-2fa U on|off`: enrol a user in TOTP two-factor authentication (a new secret, its
// otpauth:// URI, and a QR code to scan when stdout is a terminal) or turn it off. Enrolling
// also issues the 10 recovery codes the account page would, so the person is never left with none.
// `on --require-enrolment` hands no secret around: the person enrols their own authenticator at
// their next sign-in, after the password and before anything else.
import { regenerateRecoveryCodes } from '../../service/domain/two-factor';
import { requireTwoFactorEnrolment, setTwoFactor } from '../../service/domain/users';
import { defineCommand } from '../command';
import { UsageError } from '../errors';
import { record } from '../output';
import { terminalQrCode } from '../qr';
import { SHOWN_ONCE } from '../views';

export default defineCommand<{ username: string; state: 'on' | 'off'; requireEnrolment?: boolean }>({
  path: ['users', 'set-2fa <username> <state>'],
  describe: 'Turn two-factor authentication (TOTP) on or off for a user',
  examples: [
    ['users set-2fa alice on', 'prints the otpauth:// URI, and on a terminal a QR code to scan'],
    ['users set-2fa alice on --require-enrolment', 'alice sets up her own authenticator when she next signs in'],
    ['users set-2fa alice off', 'alice signs in with her password alone (her passkeys are removed too)'],
  ],
  options: (y) =>
    y
      .positional('username', { type: 'string', describe: 'The username' })
      .positional('state', {
        choices: ['on', 'off'] as const,
        describe:
          'on: new TOTP secret; off: remove every second factor (TOTP, recovery codes, passkeys, security keys)',
      })
      .option('require-enrolment', {
        type: 'boolean',
        describe: 'with on: no secret here; the person enrols at their next sign-in (signs them out)',
      }),
  async run(args, { db, actor, services, mailSettings, terminal }) {
    const on = args.state === 'on';
    if (args.requireEnrolment) {
      if (!on) throw new UsageError('--require-enrolment goes with on');
      const user = await requireTwoFactorEnrolment(db, args.username, actor);
      return {
        json: { username: user.username, two_factor_enabled: false, two_factor_enrolment_required: true },
        text: `${user.username} will set up two-factor authentication at their next sign-in (signed out everywhere now).`,
      };
    }
    const { user, otpSecret, otpauthUri } = await setTwoFactor(
      db,
      args.username,
      on,
      actor,
      on ? await services.keyRing(db) : undefined,
      mailSettings(),
    );
    if (!on) {
      return {
        json: { username: user.username, two_factor_enabled: false },
        text: `Two-factor authentication is off for ${user.username}.`,
      };
    }
    const recoveryCodes = await regenerateRecoveryCodes(db, user.id, { actor });
    const json = {
      username: user.username,
      two_factor_enabled: true,
      otp_secret: otpSecret!,
      otpauth_uri: otpauthUri!,
      recovery_codes: recoveryCodes,
    };
    // A QR code in a file or a pipe is noise (and the secret again): drawn only on a terminal.
    const text = [
      ...(terminal
        ? [
            `Two-factor authentication is on for ${user.username}. Scan this code with an authenticator app:`,
            '',
            terminalQrCode(otpauthUri!),
            '',
          ]
        : [`Two-factor authentication is on for ${user.username}. Add it to an authenticator app:`]),
      record([
        ['otp_secret', otpSecret],
        ['otpauth_uri', otpauthUri],
        ['recovery_codes', recoveryCodes.join('\n')],
      ]),
      'Give the recovery codes to the person: each signs in once without the authenticator.',
      SHOWN_ONCE,
    ].join('\n');
    return { json, text };
  },
});
