// The HTTP benchmark: the real server (service/server.ts, its own process) on embedded PostgreSQL,
// driven over real HTTP by autocannon at 50 connections, against baselines and a peer measured in
// the same run (bench/http-peers.ts): hand-written Fastify + pg routes answering the same bytes
// (GET /api/v4/user; GET and PUT a project's notification settings with the statements the
// service sends), the raw argon2id verification rate (the password grant's limit) and
// node-oidc-provider 9 (refresh grant; authorize + code exchange with the same PKCE). Every
// scenario runs ROUNDS times and the medians are reported: requests/s, p50/p99 latency, the
// server's peak RSS and its CPU time per request (steadier than requests/s on a shared machine).
// Every `target:` line is a ratio against something of the same run, measured beside it in each
// round (A B B A, runGroups), the median of the rounds' ratios, so a busy machine slows both
// sides alike (cold start and bundle size come from bench/cold-start.ts's
// JSON, which `npm run bench` writes first); writes JSON and an SVG chart under bench/results/.
// Run: npx tsx bench/http.ts   (BENCH_SECONDS=5 BENCH_ROUNDS=3 BENCH_CONNECTIONS=50; BENCH_ONLY=regex
// for a subset; BENCH_SERVER_NODE_ARGS="--cpu-prof --cpu-prof-dir=DIR" to profile the server;
// BENCH_REFRESH_TOKENS=n fresh refresh tokens a side and round, 5,000 a second of the round unset)
import { type ChildProcess, spawn } from 'node:child_process';
import { createHash, randomBytes } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import readline from 'node:readline';
import autocannon from 'autocannon';
import pg from 'pg';
import { Kysely, PostgresDialect, sql } from 'kysely';
import { createDb } from '../service/db/create-db';
import { freePort } from '../service/db/local-postgres';
import { migrateToLatest } from '../service/db/migrator';
import type { Database } from '../service/db/schema';
import { findTokenRecord } from '../service/domain/access-tokens';
import { registerApplication } from '../service/domain/applications';
import { createGroup, createProject } from '../service/domain/namespaces';
import {
  getVisibleNotificationSettings,
  parseNotificationSettingsUpdate,
  updateVisibleNotificationSettings,
} from '../service/domain/notifications/settings';
import { createUser } from '../service/domain/users';
import { startTestPostgres } from '../test/support/postgres-server';
import { type PostgresCpu, postgresCpu } from './support/postgres-cpu';

const ROOT = path.resolve(__dirname, '..');
const RESULTS = path.join(__dirname, 'results');
const SECONDS = Number(process.env.BENCH_SECONDS ?? 5);
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 3);
const CONNECTIONS = Number(process.env.BENCH_CONNECTIONS ?? 50);
/** Fresh refresh tokens minted for each round of a refresh scenario: more than a round can use. */
const REFRESH_TOKENS = Number(process.env.BENCH_REFRESH_TOKENS ?? SECONDS * 5000);
const DURABLE_REFRESH_TOKENS = Math.ceil(REFRESH_TOKENS / 2.5);
/** GET /api/v4/user alongside the password grants, and alone for its idle p99. */
const PROBE_CONNECTIONS = 10;
const PASSWORD = 'correct horse battery staple';
const REDIRECT_URI = 'https://client.example/callback';
const FORM = { 'content-type': 'application/x-www-form-urlencoded' };

const sha256Hex = (s: string) => createHash('sha256').update(s).digest('hex');
const form = (values: Record<string, string>) => new URLSearchParams(values).toString();
const basic = (id: string, secret: string) => `Basic ${Buffer.from(`${id}:${secret}`).toString('base64')}`;
const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
/** One fixed PKCE pair for both sides of the code flow (S256). */
const CODE_VERIFIER = 'bench-code-verifier-0123456789abcdefghijklmnopqrstuvwxyz';
const CODE_CHALLENGE = createHash('sha256').update(CODE_VERIFIER).digest('base64url');

interface Statement {
  text: string;
  values: unknown[];
}

/**
 * The statements `work` sends, recorded on a pool of its own (text and parameters, as PostgreSQL
 * receives them): the settings baselines replay exactly these.
 */
async function recordStatements(databaseUrl: string, work: (db: Kysely<Database>) => Promise<unknown>) {
  const recorded: Statement[] = [];
  const pool = new pg.Pool({ connectionString: databaseUrl, max: 1 });
  pool.on('connect', (client) => {
    const query = client.query.bind(client) as (...args: unknown[]) => unknown;
    (client as unknown as { query: (...args: unknown[]) => unknown }).query = (...args: unknown[]) => {
      const [first, second] = args;
      if (typeof first === 'string') recorded.push({ text: first, values: (second as unknown[]) ?? [] });
      else if (first && typeof first === 'object' && 'text' in first) {
        const q = first as { text: string; values?: unknown[] };
        recorded.push({ text: q.text, values: q.values ?? [] });
      }
      return query(...args);
    };
  });
  const db = new Kysely<Database>({ dialect: new PostgresDialect({ pool }) });
  try {
    await work(db);
  } finally {
    await db.destroy();
  }
  return recorded;
}

/** Cookies as a browser keeps them: name=value from every Set-Cookie seen so far. */
class CookieJar {
  private readonly cookies = new Map<string, string>();
  take(response: Response): void {
    for (const c of response.headers.getSetCookie()) {
      const [pair] = c.split(';');
      const eq = pair.indexOf('=');
      this.cookies.set(pair.slice(0, eq).trim(), pair.slice(eq + 1));
    }
  }
  header(): string {
    return [...this.cookies].map(([k, v]) => `${k}=${v}`).join('; ');
  }
}

/** PostgreSQL's CPU meter (embedded PostgreSQL only): the informational PG column. */
let pgMeter: PostgresCpu | undefined;

interface Sample {
  rps: number;
  p50: number;
  p99: number;
  rssMb: number;
  /** CPU time (user + system) the serving process spent per request answered, in ms. */
  cpuMs: number;
  /**
   * CPU time PostgreSQL's processes spent per request answered, in ms (informational: embedded
   * PostgreSQL only, else NaN; the in-memory peer's is its idle servers'). Processes that exit
   * during a run take their CPU with them (the count can fall: printed as —).
   */
  pgMs: number;
  failures: number;
  /** Every answer's latency, in ms, where the run timed each one (the probes, the code flow). */
  latencies?: number[];
}

/** A process's CPU time so far (user + system), in seconds, from /proc. */
function cpuSeconds(pid: number): number {
  try {
    const fields = fs.readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1].split(' ');
    // utime and stime, in clock ticks (USER_HZ: 100 on Linux).
    return (Number(fields[11]) + Number(fields[12])) / 100;
  } catch {
    return 0;
  }
}

/**
 * Wait (at most 30 s) until a process has finished what a run left in flight: autocannon stops
 * waiting when its time is up, but the process still works on the requests it holds, which would
 * load the next scenario. Quiet: at most one clock tick of CPU in each of three 200 ms windows.
 */
async function quiesce(pid: number): Promise<void> {
  const deadline = Date.now() + 30_000;
  let last = cpuSeconds(pid);
  let quiet = 0;
  while (quiet < 3 && Date.now() < deadline) {
    await new Promise((resolve) => setTimeout(resolve, 200));
    const now = cpuSeconds(pid);
    quiet = now - last <= 0.01 ? quiet + 1 : 0;
    last = now;
  }
}

/**
 * Peak resident memory of a process while `work` runs (sampled from /proc every 100 ms), and the
 * CPU time it spent meanwhile.
 */
async function withPeakRss<T>(
  pid: number,
  work: () => Promise<T>,
): Promise<{ value: T; rssMb: number; cpuSeconds: number; pgSeconds: number }> {
  const cpuBefore = cpuSeconds(pid);
  const pgUsed = pgMeter?.start();
  const read = () => {
    try {
      const m = /VmRSS:\s+(\d+) kB/.exec(fs.readFileSync(`/proc/${pid}/status`, 'utf8'));
      return m ? Number(m[1]) / 1024 : 0;
    } catch {
      return 0;
    }
  };
  let peak = read();
  const timer = setInterval(() => {
    peak = Math.max(peak, read());
  }, 100);
  try {
    const value = await work();
    return {
      value,
      rssMb: Math.max(peak, read()),
      cpuSeconds: cpuSeconds(pid) - cpuBefore,
      pgSeconds: (pgUsed?.() ?? Number.NaN) / 1000,
    };
  } finally {
    clearInterval(timer);
  }
}

/** The q-quantile of latencies (ms), read from one sorted copy. */
function quantiles(latencies: readonly number[]): (q: number) => number {
  const sorted = [...latencies].sort((a, b) => a - b);
  return (q) => sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))] ?? 0;
}

function fromAutocannon(r: autocannon.Result, rssMb: number, cpu: number, pg: number): Sample {
  return {
    cpuMs: r['2xx'] > 0 ? (cpu * 1000) / r['2xx'] : 0,
    pgMs: r['2xx'] > 0 ? (pg * 1000) / r['2xx'] : 0,
    rps: r['2xx'] / r.duration,
    p50: r.latency.p50,
    p99: r.latency.p99,
    rssMb,
    failures: r.non2xx + r.errors + r.timeouts,
  };
}

/**
 * How `npm start` runs the server (package.json's start script, `exec node <node args> <script>`),
 * so the bench measures the process a self-hosted installation runs, flags and loader included.
 */
function npmStart(): { nodeArgs: string[]; script: string } {
  const pkg = JSON.parse(fs.readFileSync(path.join(ROOT, 'package.json'), 'utf8')) as { scripts: { start: string } };
  const m = /^exec node ((?:\S+ )*)(\S+\.ts)$/.exec(pkg.scripts.start);
  if (!m) throw new Error(`package.json's start script is not "exec node <node args> <script>": ${pkg.scripts.start}`);
  return { nodeArgs: m[1].split(' ').filter(Boolean), script: m[2] };
}

/** The server as `npm start` runs it, with `extraNodeArgs` (profiling) before its own. */
async function startServer(env: NodeJS.ProcessEnv, extraNodeArgs: string[] = []): Promise<ChildProcess> {
  const { nodeArgs, script } = npmStart();
  const child = spawn(process.execPath, [...extraNodeArgs, ...nodeArgs, script], {
    cwd: ROOT,
    env: { ...process.env, ...env },
    stdio: ['pipe', 'pipe', 'inherit'],
  });
  await new Promise<void>((resolve, reject) => {
    let seen = '';
    const onData = (chunk: Buffer) => {
      seen += chunk.toString();
      if (/Lanyard is listening/.test(seen)) {
        child.stdout!.off('data', onData);
        resolve();
      }
    };
    child.stdout!.on('data', onData);
    child.once('exit', (code) => reject(new Error(`${script} exited (${code}) before it was ready: ${seen}`)));
  });
  return child;
}

async function main(): Promise<void> {
  const postgres = await startTestPostgres();
  const dbName = `lanyard_http_bench_${process.pid}`;
  const admin = new pg.Client({ connectionString: postgres.adminUrl });
  await admin.connect();
  await admin.query(`create database ${dbName}`);
  await admin.end();
  const url = new URL(postgres.adminUrl);
  url.pathname = `/${dbName}`;
  const databaseUrl = url.toString();
  const children: ChildProcess[] = [];
  const home = fs.mkdtempSync(path.join(os.tmpdir(), 'lanyard-bench-home-'));
  const handle = createDb({ connectionString: databaseUrl, max: 4 });
  try {
    // --- fixtures, at the service's real password cost --------------------------------------
    await migrateToLatest(handle.db);
    const db = handle.db;
    if (postgres.kind === 'embedded') pgMeter = await postgresCpu(db);
    const user = await createUser(db, { username: 'bench', email: 'bench@example.com', password: PASSWORD });
    const pat = `glpat-${randomBytes(32).toString('base64url')}`;
    await db
      .insertInto('personal_access_tokens')
      .values({ user_id: user.id, name: 'bench', token_digest: sha256Hex(pat), scopes: ['api', 'read_user'] })
      .execute();
    for (let i = 0; i < CONNECTIONS; i++) {
      await createUser(db, { username: `signer${i}`, email: `signer${i}@example.com`, password: PASSWORD });
    }
    await createGroup(db, { path: 'bench-group', visibility: 'public' });
    const project = await createProject(db, { path: 'bench-group/bench-project', visibility: 'public' });
    const { application, secret } = await registerApplication(db, {
      name: 'Bench',
      redirectUris: [REDIRECT_URI],
      scopes: 'api read_user openid',
      trusted: true,
    });
    const clientAuth = basic(application.uid, secret);
    const { password_hash: passwordHash } = await db
      .selectFrom('users')
      .select('password_hash')
      .where('id', '=', user.id)
      .executeTakeFirstOrThrow();
    if (!passwordHash) throw new Error('the bench user has no password hash');

    // The statements the service sends for GET and PUT /projects/:id/notification_settings with
    // this token (service/http/authenticate.ts, then the domain), for the baselines to replay.
    let lookup: Statement | undefined;
    const statements = {
      get: await recordStatements(databaseUrl, async (rdb) => {
        const record = await findTokenRecord(rdb as never, 'personal_access_token', pat);
        await getVisibleNotificationSettings(rdb as never, record!.user!, 'project', String(project.id));
      }),
      put: await recordStatements(databaseUrl, async (rdb) => {
        const record = await findTokenRecord(rdb as never, 'personal_access_token', pat);
        const update = parseNotificationSettingsUpdate({ level: 'watch' }, { kind: 'project', id: 0 });
        await updateVisibleNotificationSettings(rdb as never, record!.user!, 'project', String(project.id), update, {
          actor: 'user:bench',
          ipAddress: '127.0.0.1',
        });
      }),
    };
    for (const list of Object.values(statements)) {
      if (list.length !== 2) throw new Error(`expected two statements, recorded ${JSON.stringify(list)}`);
      lookup = list[0];
    }
    const recordedStatements = {
      lookup: lookup!,
      getProjectSettings: statements.get[1],
      putProjectSettings: statements.put[1],
    };

    /** Refresh tokens as the token endpoint stores them (digests only), minted in bulk per run. */
    async function mintRefreshTokens(count: number): Promise<string[]> {
      const tokens = Array.from({ length: count }, () => randomBytes(32).toString('hex'));
      const client = new pg.Client({ connectionString: databaseUrl });
      await client.connect();
      try {
        await client.query(
          `insert into oauth_access_tokens (application_id, user_id, token_digest, refresh_token_digest, scopes, expires_at)
           select $1, $2, a, r, array['api'], now() + interval '2 hours' from unnest($3::text[], $4::text[]) as t(a, r)`,
          [application.id, user.id, tokens.map((t) => sha256Hex(`a${t}`)), tokens.map(sha256Hex)],
        );
      } finally {
        await client.end();
      }
      return tokens;
    }

    // --- the servers ------------------------------------------------------------------------
    const port = await freePort();
    const base = `http://127.0.0.1:${port}`;
    const server = await startServer(
      { DATABASE_URL: databaseUrl, HOST: '127.0.0.1', PORT: String(port), LOG_LEVEL: 'silent', LANYARD_HOME: home },
      // e.g. BENCH_SERVER_NODE_ARGS="--cpu-prof --cpu-prof-dir=/tmp/prof" to profile the server alone.
      process.env.BENCH_SERVER_NODE_ARGS?.split(/\s+/).filter(Boolean),
    );
    children.push(server);
    const peers = spawn(process.execPath, ['--expose-gc', '--import', 'tsx', 'bench/http-peers.ts'], {
      cwd: ROOT,
      env: {
        ...process.env,
        DATABASE_URL: databaseUrl,
        PUBLIC_URL: base,
        BENCH_STATEMENTS: JSON.stringify(recordedStatements),
        BENCH_PASSWORD_HASH: passwordHash ?? '',
      },
      stdio: ['pipe', 'pipe', 'inherit'],
    });
    children.push(peers);
    const peerLines = readline.createInterface({ input: peers.stdout! })[Symbol.asyncIterator]();
    // oidc-provider prints its "Unsupported runtime" warning on stdout: only JSON lines are answers.
    const nextPeerLine = async (): Promise<Record<string, unknown>> => {
      for (;;) {
        const { value, done } = await peerLines.next();
        if (done) throw new Error('bench/http-peers.ts exited');
        if ((value as string).startsWith('{')) return JSON.parse(value as string);
      }
    };
    const ports = (await nextPeerLine()) as unknown as {
      bare: number;
      baseline: number;
      peer: number;
      durablePeer: number;
    };
    const mintPeerTokens = async (peer: 'peer' | 'durable', n: number): Promise<string[]> => {
      peers.stdin!.write(`mint ${peer} ${n}\n`);
      return (await nextPeerLine()).refreshTokens as unknown as string[];
    };
    const forgetPeerTokens = async (peer: 'peer' | 'durable'): Promise<void> => {
      peers.stdin!.write(`forget ${peer}\n`);
      await nextPeerLine();
    };

    // A signed-in browser session for the authorize scenario, through the real sign-in form.
    const signInPage = await fetch(`${base}/users/sign_in`);
    let cookie = signInPage.headers.getSetCookie()[0].split(';')[0];
    const csrf = /name="authenticity_token" value="([^"]+)"/.exec(await signInPage.text())![1];
    const signIn = await fetch(`${base}/users/sign_in`, {
      method: 'POST',
      redirect: 'manual',
      headers: { ...FORM, cookie },
      body: form({ authenticity_token: csrf, 'user[login]': 'bench', 'user[password]': PASSWORD }),
    });
    if (signIn.status !== 302) throw new Error(`sign-in answered ${signIn.status}`);
    cookie = signIn.headers.getSetCookie()[0]?.split(';')[0] ?? cookie;

    // The peers' signed-in sessions: one authorization through each one's interaction
    // (bench/http-peers.ts answers sign-in and consent at once), whose cookies then make
    // authorize answer the code.
    const peerQuery = form({
      client_id: 'bench',
      redirect_uri: REDIRECT_URI,
      response_type: 'code',
      scope: 'openid',
      state: 'bench',
      code_challenge: CODE_CHALLENGE,
      code_challenge_method: 'S256',
    });
    async function peerSession(peerBase: string): Promise<string> {
      const jar = new CookieJar();
      let next = `/auth?${peerQuery}`;
      for (let hop = 0; hop < 6 && !next.startsWith(REDIRECT_URI); hop++) {
        const res = await fetch(peerBase + next, { redirect: 'manual', headers: { cookie: jar.header() } });
        jar.take(res);
        const location = res.headers.get('location');
        if (!location) throw new Error(`the peer's ${next} answered ${res.status}: ${await res.text()}`);
        const url = new URL(location, peerBase);
        next = url.href.startsWith(REDIRECT_URI) ? url.href : url.pathname + url.search;
      }
      if (!next.startsWith(REDIRECT_URI)) throw new Error(`the peer's sign-in did not reach the client: ${next}`);
      return jar.header();
    }
    const peerBase = `http://127.0.0.1:${ports.peer}`;
    const peerCookie = await peerSession(peerBase);
    const durablePeerBase = `http://127.0.0.1:${ports.durablePeer}`;
    const durablePeerCookie = await peerSession(durablePeerBase);

    const cannon = (target: string, pid: number, options: Omit<autocannon.Options, 'url'>, connections = CONNECTIONS) =>
      // autocannon takes the path from the URL (a `path` option only applies inside `requests`).
      withPeakRss(pid, () =>
        autocannon({
          ...options,
          url: target + (options.path ?? ''),
          connections,
          duration: options.duration ?? SECONDS,
        }),
      ).then(({ value, rssMb, cpuSeconds: cpu, pgSeconds }) => fromAutocannon(value, rssMb, cpu, pgSeconds));

    /**
     * Refresh grants at full speed, each presenting a fresh refresh token (minted beforehand,
     * untimed): a token presented twice is another path (a retry or a replay) on both sides, so a
     * run that would need more tokens than it has fails instead. Afterwards (untimed) `forget`
     * drops them and what they issued, so that no later scenario runs beside a store grown by them
     * (the next scenario's settling, in the rounds' loop, vacuums what that leaves). `table`: where
     * the side keeps them in the bench's PostgreSQL, vacuumed after the minting, and a checkpoint,
     * so that the minting's aftermath (autovacuum, the checkpointer's writes) is not in the run.
     */
    async function refreshRun(
      target: string,
      pid: number,
      tokenPath: string,
      authorization: string,
      table: string | undefined,
      mint: (count: number) => Promise<string[]>,
      forget: (tokens: string[]) => Promise<void>,
      perRound: number,
      seconds: number,
    ): Promise<Sample> {
      const tokens = await mint(Math.ceil((perRound * seconds) / SECONDS));
      if (table) await sql`vacuum ${sql.table(table)}`.execute(db);
      await sql`checkpoint`.execute(db);
      let next = 0;
      const sample = await cannon(target, pid, {
        duration: seconds,
        requests: [
          {
            method: 'POST',
            path: tokenPath,
            headers: { ...FORM, authorization },
            setupRequest: (request) => ({
              ...request,
              body: form({ grant_type: 'refresh_token', refresh_token: tokens[next++] ?? 'exhausted' }),
            }),
          },
        ],
      });
      if (next > tokens.length)
        throw new Error(
          `${target}: ${next} refreshes needed more than the ${tokens.length} tokens minted for the run (BENCH_REFRESH_TOKENS a round)`,
        );
      await forget(tokens);
      return sample;
    }

    /**
     * authorize (trusted: straight to the redirect) + code exchange, CONNECTIONS loops at once,
     * through autocannon's chained requests (the code read from the 302's Location): a fetch()
     * client in this process cost as much CPU as the server it measures, on the same cores.
     */
    async function authorizeAndExchange(
      target: string,
      pid: number,
      authorizePath: string,
      tokenPath: string,
      sessionCookie: string,
      authorization: string,
      seconds: number,
    ): Promise<Sample> {
      type Pair = { code?: string; started?: number };
      const latencies: number[] = [];
      let failures = 0;
      const {
        value,
        rssMb,
        cpuSeconds: cpu,
        pgSeconds,
      } = await withPeakRss(pid, () =>
        autocannon({
          url: target,
          connections: CONNECTIONS,
          duration: seconds,
          requests: [
            {
              method: 'GET',
              path: authorizePath,
              headers: { cookie: sessionCookie },
              setupRequest: (request, context: Pair) => {
                context.started = performance.now();
                return request;
              },
              onResponse: (status, _body, context: Pair, headers) => {
                // Header names as the server spelt them (node-oidc-provider: `Location`).
                const location =
                  Object.entries(headers ?? {}).find(([name]) => name.toLowerCase() === 'location')?.[1] ?? '';
                context.code =
                  status === 302 || status === 303
                    ? (new URL(location, target).searchParams.get('code') ?? undefined)
                    : undefined;
                if (!context.code) failures++;
              },
            },
            {
              method: 'POST',
              path: tokenPath,
              headers: { ...FORM, authorization },
              // No code: start the pair again (autocannon restarts on a falsy request).
              setupRequest: (request, context: Pair) =>
                context.code
                  ? {
                      ...request,
                      body: form({
                        grant_type: 'authorization_code',
                        code: context.code,
                        redirect_uri: REDIRECT_URI,
                        code_verifier: CODE_VERIFIER,
                      }),
                    }
                  : (undefined as never),
              onResponse: (status, _body, context: Pair) => {
                if (status === 200 && context.started !== undefined)
                  latencies.push(performance.now() - context.started);
                else failures++;
              },
            },
          ],
        }),
      );
      const at = quantiles(latencies);
      return {
        rps: latencies.length / value.duration,
        p50: at(0.5),
        p99: at(0.99),
        rssMb,
        cpuMs: latencies.length > 0 ? (cpu * 1000) / latencies.length : 0,
        pgMs: latencies.length > 0 ? (pgSeconds * 1000) / latencies.length : 0,
        failures: failures + value.errors + value.timeouts,
        latencies,
      };
    }

    /**
     * GET /api/v4/user from PROBE_CONNECTIONS connections, each answer timed here to the
     * microsecond: autocannon's histogram keeps whole milliseconds, and at an idle p99 of 2 ms the
     * p99 ratio would move in steps of 0.5 (2 ms against 4 or 5). Both probes are timed alike.
     */
    async function probe(target: string, pid: number, seconds: number): Promise<Sample> {
      const latencies: number[] = [];
      const sample = await cannon(
        target,
        pid,
        {
          duration: seconds,
          requests: [
            {
              ...userRequest,
              method: 'GET',
              setupRequest: (request, context: { started?: number }) => {
                context.started = performance.now();
                return request;
              },
              onResponse: (status, _body, context: { started?: number }) => {
                if (status === 200 && context.started !== undefined)
                  latencies.push(performance.now() - context.started);
              },
            },
          ],
        },
        PROBE_CONNECTIONS,
      );
      const at = quantiles(latencies);
      return { ...sample, p50: at(0.5), p99: at(0.99), latencies };
    }

    /**
     * Wait (at most 60 s) until the server has settled every sign-in a run left in flight: its
     * per-address reservations (service/domain/rate-limit.ts) are gone. autocannon stops waiting
     * when its time is up, but the server still hashes what it holds, which would load the next
     * scenario and count, with the next run's sign-ins from this address, past its limit.
     */
    const signInsSettled = async () => {
      const deadline = Date.now() + 60_000;
      while (Date.now() < deadline) {
        const row = await db
          .selectFrom('rate_limit_counters')
          .select('count')
          .where('key', '=', 'failures:addr:127.0.0.1')
          .executeTakeFirst();
        if (!row || row.count === 0) return;
        await new Promise((resolve) => setTimeout(resolve, 100));
      }
    };
    const userRequest = { path: '/api/v4/user', headers: { 'private-token': pat } };
    // Sign-ins by CONNECTIONS different people, in turn: one account signing in 50 times at once
    // is what the brute-force limits refuse (every attempt is reserved before it is checked).
    let signer = 0;
    const passwordRequest = {
      requests: [
        {
          method: 'POST',
          path: '/oauth/token',
          headers: FORM,
          setupRequest: (request: autocannon.Request) => ({
            ...request,
            body: form({ grant_type: 'password', username: `signer${signer++ % CONNECTIONS}`, password: PASSWORD }),
          }),
        },
      ],
    };
    const settingsPath = `/api/v4/projects/${project.id}/notification_settings`;
    const getSettings = { path: settingsPath, headers: { 'private-token': pat } };
    const putSettings = { method: 'PUT', path: `${settingsPath}?level=watch`, headers: { 'private-token': pat } };
    const baselineUrl = `http://127.0.0.1:${ports.baseline}`;
    const lanyardAuthorize = `/oauth/authorize?${form({
      client_id: application.uid,
      redirect_uri: REDIRECT_URI,
      response_type: 'code',
      scope: 'openid',
      state: 'bench',
      code_challenge: CODE_CHALLENGE,
      code_challenge_method: 'S256',
    })}`;
    /** Each scenario runs for the seconds it is given (runs of a round: see the rounds' loop). */
    const scenarios: Record<string, (seconds: number) => Promise<Sample>> = {
      'bare Fastify route': (seconds) => cannon(`http://127.0.0.1:${ports.bare}`, peers.pid!, { duration: seconds }),
      'baseline: Fastify + pg, GET /user SQL': (seconds) =>
        cannon(baselineUrl, peers.pid!, { ...userRequest, duration: seconds }),
      'baseline: Fastify + pg, GET settings SQL': (seconds) =>
        cannon(baselineUrl, peers.pid!, { ...getSettings, duration: seconds }),
      'baseline: Fastify + pg, PUT settings SQL': (seconds) =>
        cannon(baselineUrl, peers.pid!, { ...putSettings, duration: seconds }),
      // The hashing scenarios wait for their process to finish what they left in flight.
      'baseline: argon2id verify': (seconds) =>
        cannon(baselineUrl, peers.pid!, {
          method: 'POST',
          path: '/verify',
          headers: FORM,
          body: form({ password: PASSWORD }),
          duration: seconds,
        }).finally(() => quiesce(peers.pid!)),
      'peer: node-oidc-provider authorize + exchange': (seconds) =>
        authorizeAndExchange(
          peerBase,
          peers.pid!,
          `/auth?${peerQuery}`,
          '/token',
          peerCookie,
          basic('bench', 'bench-secret'),
          seconds,
        ),
      'peer: node-oidc-provider + PostgreSQL authorize + exchange': (seconds) =>
        authorizeAndExchange(
          durablePeerBase,
          peers.pid!,
          `/auth?${peerQuery}`,
          '/token',
          durablePeerCookie,
          basic('bench', 'bench-secret'),
          seconds,
        ),
      'peer: node-oidc-provider refresh': async (seconds) =>
        refreshRun(
          peerBase,
          peers.pid!,
          '/token',
          basic('bench', 'bench-secret'),
          undefined,
          (count) => mintPeerTokens('peer', count),
          () => forgetPeerTokens('peer'),
          REFRESH_TOKENS,
          seconds,
        ),
      'peer: node-oidc-provider + PostgreSQL refresh': async (seconds) =>
        refreshRun(
          durablePeerBase,
          peers.pid!,
          '/token',
          basic('bench', 'bench-secret'),
          'bench_peer_oidc',
          (count) => mintPeerTokens('durable', count),
          () => forgetPeerTokens('durable'),
          DURABLE_REFRESH_TOKENS,
          seconds,
        ),
      'GET /api/v4/user (PAT)': (seconds) => cannon(base, server.pid!, { ...userRequest, duration: seconds }),
      'GET project notification settings': (seconds) =>
        cannon(base, server.pid!, { ...getSettings, duration: seconds }),
      'PUT project notification settings': (seconds) =>
        cannon(base, server.pid!, { ...putSettings, duration: seconds }),
      'refresh_token grant': (seconds) =>
        refreshRun(
          base,
          server.pid!,
          '/oauth/token',
          clientAuth,
          'oauth_access_tokens',
          (count) => mintRefreshTokens(count),
          // The minted tokens are chains' first rows: their rotations go with them (family_id).
          async (tokens) => {
            await sql`delete from oauth_access_tokens where refresh_token_digest = any(${tokens.map(sha256Hex)}::text[])`.execute(
              db,
            );
          },
          REFRESH_TOKENS,
          seconds,
        ),
      'authorize (trusted) + code exchange': (seconds) =>
        authorizeAndExchange(base, server.pid!, lanyardAuthorize, '/oauth/token', cookie, clientAuth, seconds),
      'GET /user probe, idle': (seconds) => probe(base, server.pid!, seconds),
      'password grant': (seconds) =>
        cannon(base, server.pid!, { ...passwordRequest, duration: seconds }).finally(signInsSettled),
      'GET /user probe, during password grants': async (seconds) => {
        const [probed] = await Promise.all([
          probe(base, server.pid!, seconds),
          autocannon({
            ...passwordRequest,
            url: base,
            connections: CONNECTIONS,
            duration: seconds,
          }),
        ]);
        await signInsSettled();
        return probed;
      },
    };

    // Each side answers the same request, with the same bytes, before anything is timed.
    for (const request of [userRequest, putSettings, getSettings]) {
      const answers: string[] = [];
      for (const target of [baselineUrl, base]) {
        const res = await fetch(target + request.path, {
          method: (request as { method?: string }).method ?? 'GET',
          headers: request.headers,
        });
        const body = await res.text();
        if (res.status !== 200) throw new Error(`${target}${request.path} answered ${res.status}: ${body}`);
        answers.push(`${res.headers.get('content-type')}\n${body}`);
      }
      if (answers[0] !== answers[1]) {
        throw new Error(`the baseline and the service differ on ${request.path}:\n${answers.join('\n')}`);
      }
    }

    // Each side's code flow works before anything is timed (and has made its first ID token: the
    // signing key is ready on both sides).
    for (const [target, path, tokenPath, sessionCookie, authorization] of [
      [base, lanyardAuthorize, '/oauth/token', cookie, clientAuth],
      [peerBase, `/auth?${peerQuery}`, '/token', peerCookie, basic('bench', 'bench-secret')],
      [durablePeerBase, `/auth?${peerQuery}`, '/token', durablePeerCookie, basic('bench', 'bench-secret')],
    ]) {
      const res = await fetch(target + path, { redirect: 'manual', headers: { cookie: sessionCookie } });
      const location = res.headers.get('location') ?? '';
      const code = new URL(location, target).searchParams.get('code');
      if (!code) throw new Error(`${target}${path} answered ${res.status} ${location}: ${await res.text()}`);
      const token = await fetch(target + tokenPath, {
        method: 'POST',
        headers: { ...FORM, authorization },
        body: form({
          grant_type: 'authorization_code',
          code,
          redirect_uri: REDIRECT_URI,
          code_verifier: CODE_VERIFIER,
        }),
      });
      const body = (await token.json()) as { id_token?: string; refresh_token?: string };
      // The same work on every side: an ID token and a refresh token from each code.
      if (token.status !== 200 || !body.id_token || !body.refresh_token)
        throw new Error(`${target}${tokenPath}: ${JSON.stringify(body)}`);
    }

    // And each side's refresh does the same work: a new refresh token (the presented one rotated
    // out), no ID token (the tokens hold no openid).
    for (const [target, tokenPath, authorization, mint] of [
      [base, '/oauth/token', clientAuth, () => mintRefreshTokens(1)],
      [peerBase, '/token', basic('bench', 'bench-secret'), () => mintPeerTokens('peer', 1)],
      [durablePeerBase, '/token', basic('bench', 'bench-secret'), () => mintPeerTokens('durable', 1)],
    ] as const) {
      const [presented] = await mint();
      const res = await fetch(target + tokenPath, {
        method: 'POST',
        headers: { ...FORM, authorization },
        body: form({ grant_type: 'refresh_token', refresh_token: presented }),
      });
      const body = (await res.json()) as { access_token?: string; refresh_token?: string; id_token?: string };
      if (
        res.status !== 200 ||
        !body.access_token ||
        !body.refresh_token ||
        body.refresh_token === presented ||
        body.id_token
      )
        throw new Error(`${target}${tokenPath} refresh: ${res.status} ${JSON.stringify(body)}`);
    }

    // BENCH_ONLY=regex runs a subset (when measuring one change); targets need the full run.
    if (process.env.BENCH_ONLY) {
      const only = new RegExp(process.env.BENCH_ONLY, 'i');
      for (const name of Object.keys(scenarios)) if (!only.test(name)) delete scenarios[name];
    }
    const samples: Record<string, Sample[]> = Object.fromEntries(Object.keys(scenarios).map((k) => [k, []]));
    const started = Date.now();
    for (let round = 1; round <= ROUNDS; round++) {
      for (const group of runGroups(Object.keys(scenarios), round)) {
        // The group's sides in turn and back again (A B B A), each run half the round: a load
        // that rises or falls through the group falls on every side alike. Not a latency target:
        // its load (50 sign-ins at once) takes a second to settle, a larger share of a shorter
        // run, so its sides run whole, back to back.
        const split = !group.some(isLatencyTarget);
        const runs: Record<string, Sample[]> = Object.fromEntries(group.map((name) => [name, []]));
        for (const name of split ? [...group, ...[...group].reverse()] : group) {
          // Each run starts on a settled database (untimed): what the ones before it wrote is
          // vacuumed and checkpointed now, not by autovacuum and the checkpointer during its run.
          await sql`vacuum`.execute(db);
          await sql`checkpoint`.execute(db);
          runs[name].push(await scenarios[name](split ? SECONDS / 2 : SECONDS));
        }
        for (const name of group) {
          const { latencies: _, ...s } = split ? joinHalves(runs[name]) : runs[name][0];
          samples[name].push(s);
          process.stdout.write(
            `  round ${round}/${ROUNDS}  ${name.padEnd(42)} ${s.rps.toFixed(1).padStart(8)} req/s  p99 ${s.p99.toFixed(1)} ms${s.failures ? `  (${s.failures} failed)` : ''}\n`,
          );
        }
      }
    }
    const result = Object.fromEntries(
      Object.entries(samples).map(([name, xs]) => [
        name,
        {
          rps: median(xs.map((x) => x.rps)),
          p50: median(xs.map((x) => x.p50)),
          p99: median(xs.map((x) => x.p99)),
          rssMb: median(xs.map((x) => x.rssMb)),
          cpuMs: median(xs.map((x) => x.cpuMs)),
          pgMs: median(xs.map((x) => x.pgMs)),
          failures: xs.reduce((n, x) => n + x.failures, 0),
        },
      ]),
    ) as Record<string, Sample>;
    if (process.env.BENCH_ONLY) printTable(result, samples, (Date.now() - started) / 1000);
    else report(result, samples, (Date.now() - started) / 1000);
  } finally {
    for (const child of children) child.kill('SIGTERM');
    await Promise.all(children.map((c) => (c.exitCode === null ? new Promise((r) => c.once('exit', r)) : null)));
    await handle.destroy();
    await postgres.stop();
    fs.rmSync(home, { recursive: true, force: true });
  }
}

/** What each scenario's ratio is taken against (the baselines and the peer of the same run). */
const RATIO_TO: Record<string, string> = {
  'GET /api/v4/user (PAT)': 'baseline: Fastify + pg, GET /user SQL',
  'GET project notification settings': 'baseline: Fastify + pg, GET settings SQL',
  'PUT project notification settings': 'baseline: Fastify + pg, PUT settings SQL',
  'refresh_token grant': 'peer: node-oidc-provider refresh',
  'authorize (trusted) + code exchange': 'peer: node-oidc-provider authorize + exchange',
  'password grant': 'baseline: argon2id verify',
  'GET /user probe, during password grants': 'GET /user probe, idle',
};

/** A target on the p99 latency of a probe, not on throughput (see RATIO_TO). */
const isLatencyTarget = (name: string) => name.includes('probe');

/** Beside a target and what it is measured against, informational: the same peer on PostgreSQL. */
const BESIDE: Record<string, string[]> = {
  'refresh_token grant': ['peer: node-oidc-provider + PostgreSQL refresh'],
  'authorize (trusted) + code exchange': ['peer: node-oidc-provider + PostgreSQL authorize + exchange'],
};

/**
 * The groups a round runs, in order: each target with what it is measured against (and the
 * informational side beside them), run together (see the rounds' loop) so that a neighbour's load,
 * which moves from second to second, falls on both sides of a ratio alike; the order within each
 * group reversed every other round, so that neither side always runs first. The rest run alone.
 */
function runGroups(names: string[], round: number): string[][] {
  const groupOf = (name: string) => {
    for (const [target, against] of Object.entries(RATIO_TO)) {
      const group = [target, against, ...(BESIDE[target] ?? [])];
      if (group.includes(name)) return group.filter((n) => names.includes(n));
    }
    return [name];
  };
  const groups: string[][] = [];
  for (const name of names) {
    if (groups.some((g) => g.includes(name))) continue;
    const group = groupOf(name);
    groups.push(round % 2 === 0 ? group.reverse() : group);
  }
  return groups;
}

/**
 * A side's two runs of a round (equally long) as one sample: their rate the mean, the figures per
 * request weighted by each run's requests; the latency quantiles those of both runs' answers
 * where each was timed, else (autocannon's whole-millisecond histograms) weighted alike. A run
 * that answered nothing fails its side's round (rate 0), as a whole run would: half a rate
 * would let a broken side pass a lenient goal.
 */
function joinHalves([x, y]: Sample[]): Sample {
  const rps = x.rps > 0 && y.rps > 0 ? x.rps + y.rps : 0;
  const per = (f: (s: Sample) => number) => (rps > 0 ? (f(x) * x.rps + f(y) * y.rps) / rps : f(x));
  const at = x.latencies && y.latencies ? quantiles([...x.latencies, ...y.latencies]) : undefined;
  return {
    rps: rps / 2,
    p50: at ? at(0.5) : per((s) => s.p50),
    p99: at ? at(0.99) : per((s) => s.p99),
    rssMb: Math.max(x.rssMb, y.rssMb),
    cpuMs: per((s) => s.cpuMs),
    pgMs: per((s) => s.pgMs),
    failures: x.failures + y.failures,
  };
}

/**
 * `a`'s figure over `b`'s, round by round (the two ran together), and the median of those:
 * steadier on a busy machine than a ratio of the two sides' medians, which may come from rounds
 * minutes apart. A round in which either side answered nothing counts as `failed`.
 */
function roundRatio(
  samples: Record<string, Sample[]>,
  a: string,
  b: string,
  figure: (s: Sample) => number,
  failed: number,
): number {
  return median(
    samples[a].map((x, i) => {
      const y = samples[b][i];
      return x.rps > 0 && y?.rps > 0 ? figure(x) / figure(y) : failed;
    }),
  );
}
const RPS = (s: Sample) => s.rps;
const CPU = (s: Sample) => s.cpuMs;

function printTable(r: Record<string, Sample>, samples: Record<string, Sample[]>, seconds: number): void {
  const line = (s: string) => process.stdout.write(`${s}\n`);
  line(
    `\nHTTP, ${CONNECTIONS} connections (probe ${PROBE_CONNECTIONS}), medians of ${ROUNDS} rounds of ${SECONDS} s (each side's two runs of ${SECONDS / 2} s beside its reference's, A B B A; the probes whole, back to back), ratios the median of the rounds', ${os.cpus().length} cores, Node ${process.version}; ${seconds.toFixed(0)} s in all`,
  );
  line(
    `${'scenario'.padEnd(42)} ${'req/s'.padStart(9)} ${'p50 ms'.padStart(8)} ${'p99 ms'.padStart(8)} ${'RSS MB'.padStart(7)} ${'CPU ms/req'.padStart(10)} ${'PG ms/req'.padStart(9)}  ratio`,
  );
  for (const [name, s] of Object.entries(r)) {
    const against = RATIO_TO[name];
    const ratio =
      against && r[against]
        ? isLatencyTarget(name)
          ? `p99 ×${roundRatio(samples, name, against, (x) => x.p99, Number.POSITIVE_INFINITY).toFixed(2)} of idle`
          : `×${roundRatio(samples, name, against, RPS, 0).toFixed(2)} of ${against.split(':')[0]} (CPU/req ×${roundRatio(samples, name, against, CPU, Number.POSITIVE_INFINITY).toFixed(2)})`
        : '';
    line(
      `${name.padEnd(42)} ${s.rps.toFixed(1).padStart(9)} ${s.p50.toFixed(1).padStart(8)} ${s.p99.toFixed(1).padStart(8)} ${s.rssMb.toFixed(0).padStart(7)} ${s.cpuMs.toFixed(3).padStart(10)} ${(s.pgMs >= 0 ? s.pgMs.toFixed(3) : '—').padStart(9)}  ${ratio}${s.failures ? `  ${s.failures} failed` : ''}`,
    );
  }
}

function report(r: Record<string, Sample>, samples: Record<string, Sample[]>, seconds: number): void {
  const line = (s: string) => process.stdout.write(`${s}\n`);
  printTable(r, samples, seconds);

  const coldFile = path.join(RESULTS, 'cold-start.json');
  const cold = fs.existsSync(coldFile)
    ? (JSON.parse(fs.readFileSync(coldFile, 'utf8')) as {
        ratio: number;
        bundleBytes: number;
        bundleMs: number;
        nodeMs: number;
      })
    : undefined;
  const pw = r['password grant'];
  const probe = 'GET /user probe, during password grants';
  const probeRatio = roundRatio(samples, probe, RATIO_TO[probe], (x) => x.p99, Number.POSITIVE_INFINITY);
  /**
   * Throughput and CPU per request of `name` as multiples of what it is measured against (the
   * medians of the rounds' ratios; `a` and `b`, each side's medians, are printed beside them).
   * A side that answered nothing (a failed baseline) makes no ratio: its target is missed.
   */
  const vs = (name: string) => ({
    rps: roundRatio(samples, name, RATIO_TO[name], RPS, 0),
    cpu: roundRatio(samples, name, RATIO_TO[name], CPU, Number.POSITIVE_INFINITY),
    a: r[name],
    b: r[RATIO_TO[name]],
  });
  const figures = (x: ReturnType<typeof vs>) =>
    `×${x.rps.toFixed(2)} (${x.a.rps.toFixed(0)}/s vs ${x.b.rps.toFixed(0)}/s), CPU/req ×${x.cpu.toFixed(2)} (${x.a.cpuMs.toFixed(3)} vs ${x.b.cpuMs.toFixed(3)} ms)`;
  const user = vs('GET /api/v4/user (PAT)');
  const getSettings = vs('GET project notification settings');
  const putSettings = vs('PUT project notification settings');
  const refresh = vs('refresh_token grant');
  const code = vs('authorize (trusted) + code exchange');
  const password = vs('password grant');
  const targets: Array<[string, string, string, boolean]> = [
    [
      'GET /api/v4/user vs hand-written',
      figures(user),
      'throughput ≥ 1.0×, CPU/req ≤ 1.1×',
      user.rps >= 1 && user.cpu <= 1.1,
    ],
    ['GET project settings vs hand-written', figures(getSettings), '≥ 0.9×', getSettings.rps >= 0.9],
    ['PUT project settings vs hand-written', figures(putSettings), '≥ 0.9×', putSettings.rps >= 0.9],
    [
      'refresh grant vs node-oidc-provider',
      figures(refresh),
      'throughput ≥ 1.0×, CPU/req ≤ 0.5×',
      refresh.rps >= 1 && refresh.cpu <= 0.5,
    ],
    ['authorize + exchange vs node-oidc-provider', figures(code), '≥ 1.0×', code.rps >= 1],
    [
      'password grant vs raw argon2id',
      `${figures(password)}; GET /user p99 ×${probeRatio.toFixed(2)} of idle; RSS ${pw.rssMb.toFixed(0)} MB`,
      '≥ 0.8×, p99 ≤ 2× idle, RSS ≤ 200 MB',
      password.rps >= 0.8 && probeRatio <= 2 && pw.rssMb <= 200,
    ],
    [
      'cold start',
      cold
        ? `×${cold.ratio.toFixed(2)} of node -e 0 (${cold.bundleMs.toFixed(0)} vs ${cold.nodeMs.toFixed(0)} ms)`
        : 'not measured (run npm run bench)',
      '≤ 2.5×',
      !!cold && cold.ratio <= 2.5,
    ],
    [
      'bundle',
      cold ? `${cold.bundleBytes} bytes` : 'not measured (run npm run bench)',
      '≤ 1000000 bytes',
      !!cold && cold.bundleBytes <= 1_000_000,
    ],
  ];
  for (const [name, figure, goal, met] of targets) {
    line(`target: ${name} ${figure} (goal ${goal}) ${met ? 'met' : 'missed'}`);
  }
  // Beside the two OAuth targets, not targets: the same peer writing its state where the service
  // writes its own (bench/http-peers.ts), on the same PostgreSQL and cores.
  for (const [what, target] of [
    ['authorize + exchange', 'authorize (trusted) + code exchange'],
    ['refresh grant', 'refresh_token grant'],
  ] as const) {
    const peer = BESIDE[target][0];
    const [ours, durable] = [r[target], r[peer]];
    if (!(durable?.rps > 0)) continue;
    const ratio = (figure: (s: Sample) => number) => roundRatio(samples, target, peer, figure, 0).toFixed(2);
    line(
      `  (informational) ${what} vs node-oidc-provider keeping its state in the same PostgreSQL: ×${ratio(RPS)} (${ours.rps.toFixed(0)}/s vs ${durable.rps.toFixed(0)}/s), CPU/req ×${ratio(CPU)}, PostgreSQL/req ×${ratio((x) => x.pgMs)} (${ours.pgMs.toFixed(3)} vs ${durable.pgMs.toFixed(3)} ms)`,
    );
  }

  fs.mkdirSync(RESULTS, { recursive: true });
  const json = {
    at: new Date().toISOString(),
    node: process.version,
    cores: os.cpus().length,
    connections: CONNECTIONS,
    seconds: SECONDS,
    rounds: ROUNDS,
    scenarios: r,
    samples,
    coldStart: cold,
    targets: targets.map(([name, figure, goal, met]) => ({ name, figure, goal, met })),
  };
  fs.writeFileSync(path.join(RESULTS, 'http.json'), `${JSON.stringify(json, null, 2)}\n`);
  fs.writeFileSync(path.join(RESULTS, 'http.svg'), chart(r));
  line(`wrote ${path.relative(ROOT, path.join(RESULTS, 'http.json'))} and http.svg`);
}

/** A horizontal bar chart of requests/s per scenario, log-free and dependency-free. */
function chart(r: Record<string, Sample>): string {
  const rows = Object.entries(r);
  const max = Math.max(...rows.map(([, s]) => s.rps));
  const esc = (s: string) => s.replace(/&/g, '&amp;').replace(/</g, '&lt;');
  const bars = rows
    .map(([name, s], i) => {
      const y = 30 + i * 26;
      const w = Math.max(1, (s.rps / max) * 420);
      return `<text x="330" y="${y + 14}" text-anchor="end">${esc(name)}</text><rect x="340" y="${y}" width="${w.toFixed(1)}" height="18" fill="#4a7ab5"/><text x="${(345 + w).toFixed(1)}" y="${y + 14}">${s.rps.toFixed(0)}/s · p99 ${s.p99.toFixed(0)} ms</text>`;
    })
    .join('\n');
  return `<svg xmlns="http://www.w3.org/2000/svg" width="900" height="${40 + rows.length * 26}" font-family="sans-serif" font-size="12">
<text x="10" y="18" font-weight="bold">Lanyard HTTP benchmark: requests/s (median of ${ROUNDS} rounds, ${CONNECTIONS} connections)</text>
${bars}
</svg>
`;
}

main().catch((err) => {
  process.stderr.write(`bench/http: ${(err as Error).stack}\n`);
  process.exit(1);
});
