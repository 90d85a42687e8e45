// `users block U`: the user can no longer sign in, and every token of theirs stops working
// (the API refuses blocked users). Destructive: confirmed on a terminal, --yes elsewhere.
import { setUserState } from '../../service/domain/users';
import { defineCommand } from '../command';
import { userResult, userView } from '../views';

export default defineCommand<{ username: string }>({
  path: ['users', 'block <username>'],
  describe: 'Block a user (no sign-in, no API access)',
  examples: [['users block mallory --yes', 'block without asking (scripts)']],
  options: (y) => y.positional('username', { type: 'string', describe: 'The username' }),
  confirm: (args) => `Block user ${args.username}? They will be signed out of the API and unable to sign in.`,
  async run(args, { db, actor }) {
    const user = await setUserState(db, args.username, 'blocked', actor);
    return userResult(await userView(db, user), `Blocked user ${user.username}.`);
  },
});
