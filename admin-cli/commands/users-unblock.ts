// `users unblock U`: undo `users block` (also clears a brute-force lock).
import { setUserState } from '../../service/domain/users';
import { defineCommand } from '../command';
import { userResult, userView } from '../views';

export default defineCommand<{ username: string }>({
  path: ['users', 'unblock <username>'],
  describe: 'Unblock a user',
  examples: [['users unblock mallory', 'let mallory sign in again']],
  options: (y) => y.positional('username', { type: 'string', describe: 'The username' }),
  async run(args, { db, actor }) {
    const user = await setUserState(db, args.username, 'active', actor);
    return userResult(await userView(db, user), `Unblocked user ${user.username}.`);
  },
});
