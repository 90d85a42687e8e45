// `secrets rotate signing-key`: in two steps, so that no client sees an ID token signed by a key its
// cached JWKS lacks (issue 22). The first run stages a new RSA key: published in the JWKS at once,
// signing from --activate-after seconds later (default: the JWKS cache age plus the key cache, an
// hour and a minute). A later run before then activates the staged key at once. Retired keys stay
// published until every ID token they signed has expired. Kept in a 0600 file under LANYARD_HOME
// locally and in Secrets Manager when deployed (the admin Lambda's service).
import { defineCommand } from '../command';
import { UserError } from '../errors';

export default defineCommand<{ activateAfter?: number }>({
  path: ['secrets', 'rotate', 'signing-key'],
  describe: 'Stage a new OpenID Connect signing key (published now, signing later); run again to activate it',
  examples: [
    [
      'secrets rotate signing-key --json',
      'stage: {"rotated": true, "kid": "…", "step": "staged", "activates_at": "…"}',
    ],
    ['secrets rotate signing-key', 'run again: the staged key signs from now on'],
    ['secrets rotate signing-key --activate-after 0', 'no key staged: a new key signs at once'],
  ],
  options: (y) =>
    y.option('activate-after', {
      type: 'number',
      describe: 'Seconds until a newly staged key signs (default 3600 + SIGNING_KEY_CACHE_SECONDS)',
    }),
  async run(args, { db, actor, services }) {
    const after = args.activateAfter;
    if (after !== undefined && (!Number.isInteger(after) || after < 0 || after > 30 * 86400))
      throw new UserError('--activate-after must be a whole number of seconds from 0 to 2592000');
    const { kid, step, activates_at } = await services.rotateSigningKey(db, actor, after);
    return {
      json: { rotated: true, kid, step, activates_at },
      text:
        step === 'staged'
          ? `Staged the signing key ${kid}: published now, it signs ID tokens from ${activates_at} (or when this command runs again).`
          : `Rotated the signing key: ID tokens are signed with ${kid} from now on; the previous key stays published until its tokens expire.`,
    };
  },
});
