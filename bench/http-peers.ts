// The HTTP benchmark's baselines and peer, in their own process (bench/http.ts starts it): a bare
// Fastify route, a hand-written Fastify + pg route doing GET /api/v4/user's SQL (one query, no
// framework of ours), and node-oidc-provider 9 (in memory) for the refresh grant. Prints one
// JSON line with the ports; on a line "mint" on stdin, prints a fresh peer refresh token (its
// in-memory adapter is a 1000-entry LRU that evicts tokens under load).
// Run by bench/http.ts: DATABASE_URL=… node --import tsx bench/http-peers.ts
import { createHash } from 'node:crypto';
import readline from 'node:readline';
import Fastify from 'fastify';
import pg from 'pg';

const USER_SQL = `select t.id as token_id, t.scopes, t.expires_at, t.revoked_at, u.id, u.username, u.name, u.email,
  u.state, u.is_admin, u.created_at, u.otp_secret is not null as two_factor_enabled
  from personal_access_tokens t join users u on u.id = t.user_id where t.token_digest = $1`;

async function main(): Promise<void> {
  const pool = new pg.Pool({ connectionString: process.env.DATABASE_URL, max: 10 });

  const bare = Fastify({ logger: false });
  bare.get('/', async () => ({ hello: 'world' }));

  const baseline = Fastify({ logger: false });
  baseline.get('/api/v4/user', async (request, reply) => {
    const token = request.headers['private-token'];
    if (typeof token !== 'string') return reply.code(401).send({ message: '401 Unauthorized' });
    const digest = createHash('sha256').update(token).digest('hex');
    const { rows } = await pool.query({ name: 'user', text: USER_SQL, values: [digest] });
    const row = rows[0];
    if (!row || row.revoked_at || row.state !== 'active') return reply.code(401).send({ message: '401 Unauthorized' });
    return {
      id: row.id,
      username: row.username,
      name: row.name,
      state: row.state,
      email: row.email,
      is_admin: row.is_admin,
      created_at: row.created_at,
      two_factor_enabled: row.two_factor_enabled,
    };
  });

  // ESM-only; warns "Unsupported runtime" on Node 20 and runs.
  const { default: Provider } = await import('oidc-provider');
  const provider = new Provider('http://127.0.0.1', {
    clients: [
      {
        client_id: 'bench',
        client_secret: 'bench-secret',
        grant_types: ['authorization_code', 'refresh_token'],
        redirect_uris: ['https://client.example/callback'],
      },
    ],
    scopes: ['openid', 'offline_access', 'api'],
    features: { devInteractions: { enabled: false } },
  });
  const client = await provider.Client.find('bench');
  async function mint(): Promise<string> {
    const grant = new provider.Grant({ accountId: 'bench-user', clientId: 'bench' });
    grant.addOIDCScope('openid offline_access');
    grant.addResourceScope?.('urn:lanyard:bench', 'api');
    const grantId = await grant.save();
    const token = new provider.RefreshToken({
      accountId: 'bench-user',
      client,
      grantId,
      scope: 'openid offline_access',
      gty: 'authorization_code',
    });
    return token.save();
  }
  const peerServer = provider.listen(0, '127.0.0.1');
  await new Promise((resolve) => peerServer.once('listening', resolve));

  await bare.listen({ host: '127.0.0.1', port: 0 });
  await baseline.listen({ host: '127.0.0.1', port: 0 });
  const port = (s: { address(): unknown }) => (s.address() as { port: number }).port;
  process.stdout.write(
    `${JSON.stringify({ bare: port(bare.server), baseline: port(baseline.server), peer: port(peerServer) })}\n`,
  );
  for await (const line of readline.createInterface({ input: process.stdin })) {
    if (line === 'mint') process.stdout.write(`${JSON.stringify({ refreshToken: await mint() })}\n`);
  }
  await Promise.all([bare.close(), baseline.close(), pool.end()]);
  peerServer.close();
}

main().catch((err) => {
  process.stderr.write(`bench/http-peers: ${(err as Error).stack}\n`);
  process.exit(1);
});
