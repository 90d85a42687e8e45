// `users show U`: one user.
import { getUserByUsername } from '../../service/domain/users';
import { defineCommand } from '../command';
import { userResult, userView } from '../views';

export default defineCommand<{ username: string }>({
  path: ['users', 'show <username>'],
  describe: 'Show a user',
  examples: [['users show alice --json', "alice's account as JSON"]],
  options: (y) => y.positional('username', { type: 'string', describe: 'The username' }),
  async run(args, { db }) {
    return userResult(await userView(db, await getUserByUsername(db, args.username)));
  },
});
