// `users set-2fa U on|off`: enrol a user in TOTP two-factor authentication (a new secret, its
// otpauth:// URI and a QR code to scan) or turn it off.
import { setTwoFactor } from '../../service/domain/users';
import { defineCommand } from '../command';
import { record } from '../output';
import { terminalQrCode } from '../qr';
import { SHOWN_ONCE } from '../views';

export default defineCommand<{ username: string; state: 'on' | 'off' }>({
  path: ['users', 'set-2fa <username> <state>'],
  describe: 'Turn two-factor authentication (TOTP) on or off for a user',
  examples: [
    ['users set-2fa alice on', 'prints a QR code for an authenticator app, and the otpauth:// URI'],
    ['users set-2fa alice off', 'alice signs in with her password alone'],
  ],
  options: (y) =>
    y
      .positional('username', { type: 'string', describe: 'The username' })
      .positional('state', { choices: ['on', 'off'] as const, describe: 'on: new TOTP secret; off: remove it' }),
  async run(args, { db, actor, services, mailSettings }) {
    const on = args.state === 'on';
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
    const json = {
      username: user.username,
      two_factor_enabled: true,
      otp_secret: otpSecret!,
      otpauth_uri: otpauthUri!,
    };
    const text = [
      `Two-factor authentication is on for ${user.username}. Scan this code with an authenticator app:`,
      '',
      terminalQrCode(otpauthUri!),
      '',
      record([
        ['otp_secret', otpSecret],
        ['otpauth_uri', otpauthUri],
      ]),
      SHOWN_ONCE,
    ].join('\n');
    return { json, text };
  },
});
