// `users show U`: one user, with their passkeys and security keys (never a key itself).
import { getUserByUsername } from '../../service/domain/users';
import { listWebAuthnCredentials } from '../../service/domain/webauthn';
import { defineCommand } from '../command';
import { table } from '../output';
import { userResult, userView } from '../views';

export default defineCommand<{ username: string }>({
  path: ['users', 'show <username>'],
  describe: 'Show a user, with their passkeys and security keys',
  examples: [['users show alice --json', "alice's account as JSON"]],
  options: (y) => y.positional('username', { type: 'string', describe: 'The username' }),
  async run(args, { db }) {
    const user = await getUserByUsername(db, args.username);
    const credentials = (await listWebAuthnCredentials(db, user.id)).map((c) => ({
      name: c.name,
      kind: c.kind,
      backed_up: c.backed_up,
      created_at: c.created_at.toISOString(),
      last_used_at: c.last_used_at?.toISOString() ?? null,
    }));
    const shown = userResult(await userView(db, user));
    const keys = table(credentials, [
      { header: 'PASSKEY OR SECURITY KEY', value: (c) => c.name },
      { header: 'TYPE', value: (c) => (c.kind === 'passkey' ? 'passkey' : 'security key') },
      { header: 'CREATED', value: (c) => c.created_at.slice(0, 10) },
      { header: 'LAST USED', value: (c) => c.last_used_at?.slice(0, 10) ?? 'never' },
    ]);
    return {
      json: { ...(shown.json as object), webauthn_credentials: credentials },
      text: `${shown.text}\n${keys}`,
    };
  },
});
