// `users add-email U E [--confirmed]`: a secondary e-mail for a user. Unconfirmed by default: a
// confirmation link goes to the address, as when the user adds it on /-/profile/emails. With
// --confirmed the operator vouches for it (usable at once as a notification e-mail or primary),
// as GitLab's admin does with skip_confirmation. Either way the primary address is alerted.
import { RateLimitedError } from '../../service/domain/errors';
import { addUserEmail } from '../../service/domain/users';
import { defineCommand } from '../command';
import { UserError } from '../errors';
import { userResult, userView } from '../views';

export default defineCommand<{ username: string; email: string; confirmed?: boolean }>({
  path: ['users', 'add-email <username> <email>'],
  describe: 'Add a secondary e-mail to a user (a confirmation link is mailed unless --confirmed)',
  examples: [
    ['users add-email alice alice@work.example', 'mails alice@work.example a confirmation link'],
    [
      'users add-email alice alice@work.example --confirmed',
      'alice may use alice@work.example for notifications at once',
    ],
  ],
  options: (y) =>
    y
      .positional('username', { type: 'string', describe: 'The username' })
      .positional('email', { type: 'string', describe: 'The e-mail address' })
      .option('confirmed', {
        type: 'boolean',
        default: false,
        describe: 'Mark the address confirmed (you vouch for it); no confirmation link is sent',
      }),
  async run(args, { db, actor, mailSettings }) {
    const confirmed = args.confirmed === true;
    const user = await addUserEmail(db, args.username, args.email, actor, { confirmed, mail: mailSettings() }).catch(
      (err: unknown) => {
        // The page's limit on confirmation links applies here too: say so, in one line.
        if (err instanceof RateLimitedError)
          throw new UserError(
            `too many confirmation e-mails for this account: try again in ${Math.ceil(err.retryAfterSeconds / 60)} minutes, or add it with --confirmed`,
          );
        throw err;
      },
    );
    const email = args.email.trim();
    return userResult(
      await userView(db, user),
      confirmed
        ? `Added ${email} to ${user.username}, confirmed.`
        : `Added ${email} to ${user.username}; a confirmation link was sent to it.`,
    );
  },
});
