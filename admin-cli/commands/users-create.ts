// `users create`: a user with a password (read safely), optionally an administrator.
import { createUser, twoFactorEnabled } from '../../service/domain/users';
import { defineCommand } from '../command';
import { recordOf } from '../output';

interface Args {
  username: string;
  email: string;
  name?: string;
  admin: boolean;
}

export default defineCommand<Args>({
  path: ['users', 'create'],
  describe: 'Create a user',
  examples: [
    [
      'users create --username alice --email alice@example.com --name "Alice Liddell"',
      'prompts for the password on a terminal',
    ],
    [
      'users create --username ci --email ci@example.com --password-stdin --json < password.txt',
      'in a script (or pipe the password in)',
    ],
  ],
  options: (y) =>
    y
      .option('username', { type: 'string', demandOption: true, describe: 'Login name' })
      .option('email', { type: 'string', demandOption: true, describe: 'Primary e-mail address' })
      .option('name', { type: 'string', describe: 'Display name (default: the username)' })
      .option('admin', { type: 'boolean', default: false, describe: 'Make the user an administrator' }),
  password: true,
  async run(args, { db, actor, password }) {
    const user = await createUser(db, {
      username: args.username,
      email: args.email,
      name: args.name,
      password: password!,
      isAdmin: args.admin,
      actor,
    });
    const view = {
      id: user.id,
      username: user.username,
      email: user.email,
      name: user.name,
      is_admin: user.is_admin,
      two_factor_enabled: twoFactorEnabled(user),
    };
    return { json: view, text: `Created user ${user.username}.\n${recordOf(view)}` };
  },
});
