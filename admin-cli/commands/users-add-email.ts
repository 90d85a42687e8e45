// `users add-email U E [--no-confirmed]`: a verified secondary e-mail for a user (the operator
// vouches for it, as GitLab's admin does with skip_confirmation): usable at once as a notification
// e-mail or primary. With --no-confirmed it is added unconfirmed and a confirmation link goes to it,
// as when the user adds it on /-/profile/emails. Either way the primary address is alerted.
import { RateLimitedError } from '../../service/domain/errors';
import { addUserEmail } from '../../service/domain/users';
import { defineCommand } from '../command';
import { UserError } from '../errors';
import { userResult, userView } from '../views';

export default defineCommand<{ username: string; email: string; confirmed?: boolean }>({
  path: ['users', 'add-email <username> <email>'],
  describe: 'Add a verified secondary e-mail to a user (--no-confirmed: mail it a confirmation link)',
  examples: [
    ['users add-email alice alice@work.example', 'alice may use alice@work.example for notifications at once'],
    ['users add-email alice alice@work.example --no-confirmed', 'mails alice@work.example a confirmation link'],
  ],
  options: (y) =>
    y
      .positional('username', { type: 'string', describe: 'The username' })
      .positional('email', { type: 'string', describe: 'The e-mail address' })
      .option('confirmed', {
        type: 'boolean',
        default: true,
        describe: 'The address is confirmed (you vouch for it); --no-confirmed mails it a confirmation link instead',
      }),
  async run(args, { db, actor, mailSettings }) {
    const confirmed = args.confirmed !== false;
    const user = await addUserEmail(db, args.username, args.email, actor, { confirmed, mail: mailSettings() }).catch(
      (err: unknown) => {
        // The page's limit on confirmation links applies here too: say so, in one line.
        if (err instanceof RateLimitedError)
          throw new UserError(
            `too many confirmation e-mails for this account: try again in ${Math.ceil(err.retryAfterSeconds / 60)} minutes, or add it without --no-confirmed`,
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
