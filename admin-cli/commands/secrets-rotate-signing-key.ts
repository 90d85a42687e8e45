// `secrets rotate signing-key`: a new RSA key signs ID tokens from now on; the retired keys stay
// in the JWKS until every ID token they signed has expired, then drop out. Kept in a 0600 file
// under LANYARD_HOME locally and in Secrets Manager when deployed (the admin Lambda's service).
import { defineCommand } from '../command';

export default defineCommand({
  path: ['secrets', 'rotate', 'signing-key'],
  describe: 'Rotate the OpenID Connect ID token signing key (tokens already issued still verify)',
  examples: [['secrets rotate signing-key --json', '{"rotated": true, "kid": "…"}']],
  async run(_args, { db, actor, services }) {
    const { kid } = await services.rotateSigningKey(db, actor);
    return {
      json: { rotated: true, kid },
      text: `Rotated the signing key: ID tokens are signed with ${kid} from now on; the previous key stays published until its tokens expire.`,
    };
  },
});
