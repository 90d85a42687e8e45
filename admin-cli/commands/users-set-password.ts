// `users set-password U`: a new password (read safely); clears a brute-force lock.
import { setUserPassword } from '../../service/domain/users';
import { defineCommand } from '../command';
import { userResult, userView } from '../views';

export default defineCommand<{ username: string }>({
  path: ['users', 'set-password <username>'],
  describe: "Set a user's password",
  examples: [
    ['users set-password alice', 'prompts twice for the new password'],
    ['users set-password alice --password-stdin < password.txt', 'from a file or a pipe'],
  ],
  options: (y) => y.positional('username', { type: 'string', describe: 'The username' }),
  password: true,
  async run(args, { db, actor, password, mailSettings }) {
    const user = await setUserPassword(db, args.username, password!, actor, mailSettings());
    return userResult(await userView(db, user), `Set the password of ${user.username}.`);
  },
});
