// `users add-email U E`: a verified secondary e-mail (the operator vouches for it), usable as a
// notification e-mail.
import { addUserEmail } from '../../service/domain/users';
import { defineCommand } from '../command';
import { userResult, userView } from '../views';

export default defineCommand<{ username: string; email: string }>({
  path: ['users', 'add-email <username> <email>'],
  describe: 'Add a verified secondary e-mail to a user',
  examples: [['users add-email alice alice@work.example', 'alice may now use alice@work.example for notifications']],
  options: (y) =>
    y
      .positional('username', { type: 'string', describe: 'The username' })
      .positional('email', { type: 'string', describe: 'The e-mail address (verified by you)' }),
  async run(args, { db, actor }) {
    const user = await addUserEmail(db, args.username, args.email, actor);
    return userResult(await userView(db, user), `Added ${args.email.trim()} to ${user.username}.`);
  },
});
