// `users webauthn remove U NAME`: remove one of a user's passkeys or security keys (lost, or
// stolen). The last second factor gone, the recovery codes go too. Destructive: confirmed on a
// terminal, --yes elsewhere.
import { removeWebAuthnCredentialByName } from '../../service/domain/webauthn';
import { defineCommand } from '../command';

export default defineCommand<{ username: string; name: string }>({
  path: ['users', 'webauthn', 'remove <username> <name>'],
  describe: "Remove one of a user's passkeys or security keys, by its name",
  examples: [['users webauthn remove alice "Blue key" --yes', 'alice can no longer sign in with "Blue key"']],
  options: (y) =>
    y.positional('username', { type: 'string', describe: 'The username' }).positional('name', {
      type: 'string',
      describe: 'The name of the passkey or security key (users show lists them)',
    }),
  confirm: (args) => `Remove ${args.username}'s passkey or security key "${args.name}"? It will no longer sign in.`,
  async run(args, { db, actor }) {
    const removed = await removeWebAuthnCredentialByName(db, args.username, args.name, { actor });
    return {
      json: { username: args.username, removed: removed.name },
      text: `Removed ${args.username}'s ${removed.kind === 'passkey' ? 'passkey' : 'security key'} "${removed.name}".`,
    };
  },
});
