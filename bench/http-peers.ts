// The HTTP benchmark's baselines and peer, in their own process (bench/http.ts starts it), each
// answering the same bytes as the service (bench/http.ts compares them before timing), with no
// framework of ours:
// - a bare Fastify route;
// - hand-written Fastify + pg routes: GET /api/v4/user and GET|PUT a project's notification
//   settings, running the very statements the service sends (recorded by bench/http.ts from the
//   domain code and passed in BENCH_STATEMENTS, so they cannot drift);
// - POST /verify: one argon2id verification of the bench user's password hash (BENCH_PASSWORD_HASH,
//   the production parameters) straight through @node-rs/argon2: the password grant's limit;
// - node-oidc-provider 9 (in memory) for the refresh grant and the code flow (a signed-in session
//   with a standing grant, as the service's trusted application: authorize answers the code);
// - the same peer keeping its state in the bench's PostgreSQL (informational, beside those two
//   targets: the service writes its codes and tokens there, the in-memory peer nowhere).
// Prints one JSON line with the ports; on a line "mint <peer|durable> <n>" on stdin, n fresh refresh
// tokens of that peer ("forget <peer|durable>" drops them and what they issued). Both peers do the
// service's work: they rotate every refresh token and issue one with every code.
// The peer keeps its state in a plain Map (MapAdapter): its quick-start adapter is a 1000-entry LRU
// that evicted the signed-in session and grant under load, so its code flow stopped answering.
// Run by bench/http.ts: DATABASE_URL=… PUBLIC_URL=<the service's> node --import tsx bench/http-peers.ts
import { createHash } from 'node:crypto';
import http from 'node:http';
import readline from 'node:readline';
import { verify as argon2Verify } from '@node-rs/argon2';
import Fastify from 'fastify';
import pg from 'pg';

const iso = (d: Date | null) => (d ? d.toISOString() : null);
const unauthorized = '{"message":"401 Unauthorized"}';

/** A statement as the service sent it: its text and parameters (the token digest is first). */
interface Statement {
  text: string;
  values: unknown[];
}
/** What bench/http.ts recorded: the token lookup, then each settings route's own statement. */
interface RecordedStatements {
  lookup: Statement;
  getProjectSettings: Statement;
  putProjectSettings: Statement;
}

async function main(): Promise<void> {
  // As many connections as the service opens (DB_POOL_MAX's default).
  const databaseUrl = process.env.DATABASE_URL ?? '';
  const pool = new pg.Pool({ connectionString: databaseUrl, max: 10 });

  const bare = Fastify({ logger: false });
  bare.get('/', async () => ({ hello: 'world' }));

  const baseline = Fastify({ logger: false });
  // The same answer as the service, byte for byte (bench/http.ts compares them before timing):
  // GitLab's user entity, the same checks (expiry, revocation, scope, state), no framework of ours.
  const publicUrl = process.env.PUBLIC_URL ?? '';
  // The statements the service sends, recorded from its domain code by bench/http.ts: the same SQL
  // on both sides, so neither can drift from the other.
  const recorded = JSON.parse(process.env.BENCH_STATEMENTS ?? 'null') as RecordedStatements | null;
  if (!recorded) throw new Error('BENCH_STATEMENTS is not set: run bench/http.ts, which records and passes them');
  baseline.get('/api/v4/user', async (request, reply) => {
    reply.header('content-type', 'application/json');
    const token = request.headers['private-token'];
    if (typeof token !== 'string') return reply.code(401).send(Buffer.from(unauthorized));
    const digest = createHash('sha256').update(token).digest('hex');
    const { rows } = await pool.query({ name: 'lookup', text: recorded.lookup.text, values: [digest] });
    const u = rows[0];
    // A PAT's expires_at is a date (YYYY-MM-DD): it works through that day.
    const live = u && !u.revoked_at && (u.expires_at === null || new Date().toISOString().slice(0, 10) <= u.expires_at);
    if (!live || !u.scopes.some((s: string) => s === 'api' || s === 'read_api' || s === 'read_user')) {
      return reply.code(401).send(Buffer.from(unauthorized));
    }
    if (u.state !== 'active') return reply.code(403).send(Buffer.from('{"message":"403 Forbidden"}'));
    // A Buffer: Fastify appends `; charset=utf-8` to a string's JSON type (GitLab sends none).
    return reply.send(
      Buffer.from(
        JSON.stringify({
          id: Number(u.id),
          username: u.username,
          name: u.name,
          state: u.state,
          locked: u.locked_until !== null && u.locked_until > new Date(),
          avatar_url: u.avatar_url,
          web_url: `${publicUrl}/${u.username}`,
          created_at: u.created_at.toISOString(),
          bio: u.bio,
          location: '',
          public_email: u.public_email,
          skype: '',
          linkedin: '',
          twitter: '',
          discord: '',
          website_url: '',
          organization: '',
          job_title: '',
          pronouns: null,
          bot: false,
          work_information: null,
          followers: 0,
          following: 0,
          is_followed: false,
          local_time: null,
          last_sign_in_at: iso(u.last_sign_in_at),
          confirmed_at: iso(u.confirmed_at),
          last_activity_on: null,
          email: u.email,
          theme_id: 3,
          color_scheme_id: 1,
          projects_limit: 100000,
          current_sign_in_at: iso(u.current_sign_in_at),
          identities: [],
          can_create_group: u.can_create_group,
          can_create_project: u.can_create_project,
          two_factor_enabled: u.two_factor_enabled,
          external: u.external,
          private_profile: u.private_profile,
          commit_email: u.email,
          ...(u.is_admin ? { is_admin: true } : {}),
        }),
      ),
    );
  });

  // GET|PUT /api/v4/projects/:id/notification_settings: the service's two round trips (the token
  // with its owner, then the settings statement), its checks, its view (level; events if custom).
  {
    const settingsRoute =
      (statement: Statement, scopes: readonly string[], name: string) =>
      async (request: import('fastify').FastifyRequest, reply: import('fastify').FastifyReply) => {
        reply.header('content-type', 'application/json');
        const token = request.headers['private-token'];
        if (typeof token !== 'string') return reply.code(401).send(Buffer.from(unauthorized));
        const digest = createHash('sha256').update(token).digest('hex');
        const lookup = await pool.query({ name: 'lookup', text: recorded.lookup.text, values: [digest] });
        const t = lookup.rows[0];
        const live =
          t && !t.revoked_at && (t.expires_at === null || new Date().toISOString().slice(0, 10) <= t.expires_at);
        if (!live || !t.scopes.some((s: string) => scopes.includes(s))) {
          return reply.code(401).send(Buffer.from(unauthorized));
        }
        if (t.state !== 'active') return reply.code(403).send(Buffer.from('{"message":"403 Forbidden"}'));
        const { rows } = await pool.query({ name, text: statement.text, values: statement.values });
        const row = rows[0];
        if (!row) return reply.code(404).send(Buffer.from('{"message":"404 Project Not Found"}'));
        const level = row.found === false ? 'global' : row.level;
        return reply.send(Buffer.from(JSON.stringify(level === 'custom' ? { level, events: {} } : { level })));
      };
    baseline.get(
      '/api/v4/projects/:id/notification_settings',
      settingsRoute(recorded.getProjectSettings, ['api', 'read_api'], 'get-settings'),
    );
    baseline.put(
      '/api/v4/projects/:id/notification_settings',
      settingsRoute(recorded.putProjectSettings, ['api'], 'put-settings'),
    );
  }

  // POST /verify: the raw argon2id rate, on libuv's pool (4 threads at nice 0; the service hashes
  // on its own threads, one per core, at nice 19: service/domain/passwords.ts).
  const passwordHash = process.env.BENCH_PASSWORD_HASH ?? '';
  baseline.addContentTypeParser('application/x-www-form-urlencoded', { parseAs: 'string' }, (_request, body, done) =>
    done(null, new URLSearchParams(body as string)),
  );
  baseline.post('/verify', async (request, reply) => {
    const ok = await argon2Verify(passwordHash, (request.body as URLSearchParams).get('password') ?? '');
    return reply.code(ok ? 200 : 400).send(Buffer.from(ok ? '{}' : '{"error":"invalid_grant"}'));
  });

  // ESM-only; warns "Unsupported runtime" on Node 20 and runs.
  const store = new Map<string, Record<string, unknown>>();
  const byGrant = new Map<string, string[]>();
  const index = new Map<string, string>();
  class MapAdapter {
    constructor(private readonly model: string) {}
    private key(id: string) {
      return `${this.model}:${id}`;
    }
    async upsert(id: string, payload: Record<string, unknown>) {
      const key = this.key(id);
      store.set(key, payload);
      if (typeof payload.grantId === 'string') {
        // Appended in place: copying the grant's list on every upsert made the peer's cost grow
        // with the run (every pair of a round shares one grant).
        const keys = byGrant.get(payload.grantId);
        if (keys) keys.push(key);
        else byGrant.set(payload.grantId, [key]);
      }
      if (typeof payload.userCode === 'string') index.set(`userCode:${payload.userCode}`, id);
      if (typeof payload.uid === 'string') index.set(`uid:${payload.uid}`, id);
    }
    async find(id: string) {
      return store.get(this.key(id));
    }
    async findByUserCode(userCode: string) {
      const id = index.get(`userCode:${userCode}`);
      return id === undefined ? undefined : this.find(id);
    }
    async findByUid(uid: string) {
      const id = index.get(`uid:${uid}`);
      return id === undefined ? undefined : this.find(id);
    }
    async consume(id: string) {
      const payload = store.get(this.key(id));
      if (payload) payload.consumed = Math.floor(Date.now() / 1000);
    }
    async destroy(id: string) {
      store.delete(this.key(id));
    }
    async revokeByGrantId(grantId: string) {
      for (const key of byGrant.get(grantId) ?? []) store.delete(key);
      byGrant.delete(grantId);
    }
    /** The grants and everything issued under them, whatever the model. */
    async forgetGrants(grantIds: string[]) {
      for (const grantId of grantIds) {
        await this.revokeByGrantId(grantId);
        store.delete(`Grant:${grantId}`);
      }
    }
  }
  // The same peer keeping its state in this PostgreSQL instead (informational, beside the
  // target): one table of JSON payloads per model and id, as Logto's production adapter for
  // node-oidc-provider has it (packages/core/src/oidc/adapter.ts, oidc_model_instances), each
  // query a named prepared statement, over a pool as large as the service's.
  const durablePool = new pg.Pool({ connectionString: databaseUrl, max: 10 });
  await durablePool.query(`
    drop table if exists bench_peer_oidc;
    create table bench_peer_oidc (
      model_name varchar(64) not null,
      id varchar(128) not null,
      payload jsonb not null,
      expires_at timestamptz,
      consumed_at timestamptz,
      primary key (model_name, id)
    );
    create index on bench_peer_oidc (model_name, (payload->>'grantId'));
    create index on bench_peer_oidc (model_name, (payload->>'uid'));
    create index on bench_peer_oidc (model_name, (payload->>'userCode'));`);
  class PgAdapter {
    constructor(private readonly model: string) {}
    private async findWhere(name: string, field: 'id' | 'uid' | 'userCode', value: string) {
      const where = field === 'id' ? 'id = $2' : `payload->>'${field}' = $2`;
      const { rows } = await durablePool.query({
        name,
        text: `select payload, consumed_at from bench_peer_oidc
          where model_name = $1 and ${where} and (expires_at is null or expires_at > now())`,
        values: [this.model, value],
      });
      const row = rows[0];
      return row ? { ...row.payload, ...(row.consumed_at ? { consumed: true } : {}) } : undefined;
    }
    async upsert(id: string, payload: Record<string, unknown>, expiresIn?: number) {
      await durablePool.query({
        name: 'peer-upsert',
        text: `insert into bench_peer_oidc (model_name, id, payload, expires_at)
          values ($1, $2, $3, now() + make_interval(secs => $4))
          on conflict (model_name, id) do update set payload = excluded.payload, expires_at = excluded.expires_at`,
        values: [this.model, id, payload, expiresIn ?? null],
      });
    }
    find(id: string) {
      return this.findWhere('peer-find', 'id', id);
    }
    findByUid(uid: string) {
      return this.findWhere('peer-find-uid', 'uid', uid);
    }
    findByUserCode(userCode: string) {
      return this.findWhere('peer-find-user-code', 'userCode', userCode);
    }
    async consume(id: string) {
      await durablePool.query({
        name: 'peer-consume',
        text: 'update bench_peer_oidc set consumed_at = now() where model_name = $1 and id = $2',
        values: [this.model, id],
      });
    }
    async destroy(id: string) {
      await durablePool.query({
        name: 'peer-destroy',
        text: 'delete from bench_peer_oidc where model_name = $1 and id = $2',
        values: [this.model, id],
      });
    }
    async revokeByGrantId(grantId: string) {
      await durablePool.query({
        name: 'peer-revoke',
        text: `delete from bench_peer_oidc where model_name = $1 and payload->>'grantId' = $2`,
        values: [this.model, grantId],
      });
    }
    /** The grants and everything issued under them, whatever the model. */
    async forgetGrants(grantIds: string[]) {
      await durablePool.query(
        `delete from bench_peer_oidc where payload->>'grantId' = any($1) or (model_name = 'Grant' and id = any($1))`,
        [grantIds],
      );
    }
  }

  const peer = await startPeer(MapAdapter);
  const durablePeer = await startPeer(PgAdapter);

  await bare.listen({ host: '127.0.0.1', port: 0 });
  await baseline.listen({ host: '127.0.0.1', port: 0 });
  const port = (s: { address(): unknown }) => (s.address() as { port: number }).port;
  process.stdout.write(
    `${JSON.stringify({ bare: port(bare.server), baseline: port(baseline.server), peer: peer.port, durablePeer: durablePeer.port })}\n`,
  );
  // "mint <peer|durable> <n>": n fresh refresh tokens of that peer, each of its own grant;
  // "forget <peer|durable>": those grants and all they issued, gone (after a refresh run, so that
  // no scenario after it runs beside a store, or a heap, grown by tens of thousands of tokens).
  for await (const line of readline.createInterface({ input: process.stdin })) {
    const forget = /^forget (peer|durable)$/.exec(line);
    // A full collection after either (untimed): neither's garbage is collected in a timed run, the
    // peer's or the next scenario's (run with --expose-gc by bench/http.ts).
    const collect = () => (globalThis as { gc?: () => void }).gc?.();
    if (forget) {
      const forgotten = await (forget[1] === 'peer' ? peer : durablePeer).forget();
      collect();
      process.stdout.write(`${JSON.stringify({ forgotten })}\n`);
      continue;
    }
    const m = /^mint (peer|durable) (\d+)$/.exec(line);
    if (!m) continue;
    const mint = (m[1] === 'peer' ? peer : durablePeer).mint;
    const refreshTokens: string[] = [];
    // 50 at a time: the durable peer's inserts overlap on its pool.
    for (let left = Number(m[2]); left > 0; left -= 50)
      refreshTokens.push(...(await Promise.all(Array.from({ length: Math.min(50, left) }, mint))));
    collect();
    process.stdout.write(`${JSON.stringify({ refreshTokens })}\n`);
  }
  await Promise.all([bare.close(), baseline.close(), pool.end()]);
  peer.server.close();
  durablePeer.server.close();
  await durablePool.end();
}

/**
 * node-oidc-provider 9 on its own port with the bench's client, keeping its state through
 * `Adapter`: its server, its port, and ways to mint refresh tokens and to forget them.
 */
async function startPeer(Adapter: new (model: string) => { forgetGrants(grantIds: string[]): Promise<void> }) {
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
    // biome-ignore lint/suspicious/noExplicitAny: the adapter classes above implement its interface.
    adapter: Adapter as any,
    features: { devInteractions: { enabled: false } },
    // The service's work (domain/oauth-tokens.ts): every refresh rotates the refresh token, and
    // every code exchange issues one. The peer's defaults rotate a confidential client's token
    // only past 70 % of its life, and issue one only for offline_access.
    rotateRefreshToken: true,
    issueRefreshToken: async () => true,
    findAccount: async (_ctx: unknown, sub: string) => ({ accountId: sub, claims: async () => ({ sub }) }),
  });
  const client = await provider.Client.find('bench');
  const minted: string[] = [];
  async function forget(): Promise<number> {
    const grantIds = minted.splice(0);
    await new Adapter('Grant').forgetGrants(grantIds);
    return grantIds.length;
  }
  async function mint(): Promise<string> {
    // The service's bench tokens hold `api` alone: no openid, so neither side signs an ID token
    // on refresh (with openid the peer signed one per refresh and the service none).
    const grant = new provider.Grant({ accountId: 'bench-user', clientId: 'bench' });
    grant.addOIDCScope('api');
    const grantId = await grant.save();
    minted.push(grantId);
    const token = new provider.RefreshToken({
      accountId: 'bench-user',
      client,
      grantId,
      scope: 'api',
      gty: 'authorization_code',
    });
    return token.save();
  }
  // The interaction (sign-in and consent) answered at once for the bench user, with a grant of
  // openid: the session cookie it leaves makes every later authorize answer the code directly.
  const callback = provider.callback();
  const server = http.createServer((req, res) => {
    if (!req.url?.startsWith('/interaction/')) return void callback(req, res);
    (async () => {
      const details = await provider.interactionDetails(req, res);
      const grant = new provider.Grant({ accountId: 'bench-user', clientId: details.params.client_id as string });
      grant.addOIDCScope('openid');
      const grantId = await grant.save();
      await provider.interactionFinished(req, res, { login: { accountId: 'bench-user' }, consent: { grantId } });
    })().catch((err) => {
      res.statusCode = 500;
      res.end(String(err));
    });
  });
  server.listen(0, '127.0.0.1');
  await new Promise((resolve) => server.once('listening', resolve));
  return { server, port: (server.address() as { port: number }).port, mint, forget };
}

main().catch((err) => {
  process.stderr.write(`bench/http-peers: ${(err as Error).stack}\n`);
  process.exit(1);
});
