// The HTTP benchmark: the real server (service/server.ts, its own process) on embedded PostgreSQL,
// driven over real HTTP by autocannon at 50 connections, against a bare Fastify route, a
// hand-written Fastify + pg route doing GET /api/v4/user's SQL (the baseline) and
// node-oidc-provider 9 (the refresh grant's peer), both in bench/http-peers.ts. Every scenario
// runs ROUNDS times, interleaved, and the medians are reported: requests/s, p50/p99 latency, the
// server's peak RSS and its CPU time per request (steadier than requests/s on a shared machine).
// Prints the table with ratios and one `target:` line per target of the performance issue (cold
// start and bundle size come from bench/cold-start.ts's JSON, which `npm run bench` writes first);
// writes JSON and an SVG chart under bench/results/.
// Run: npx tsx bench/http.ts   (BENCH_SECONDS=5 BENCH_ROUNDS=3 BENCH_CONNECTIONS=50; BENCH_ONLY=regex
// for a subset; BENCH_SERVER_NODE_ARGS="--cpu-prof --cpu-prof-dir=DIR" to profile the server)
import { type ChildProcess, spawn } from 'node:child_process';
import { createHash, randomBytes } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import readline from 'node:readline';
import autocannon from 'autocannon';
import pg from 'pg';
import { createDb } from '../service/db/create-db';
import { freePort } from '../service/db/local-postgres';
import { migrateToLatest } from '../service/db/migrator';
import { registerApplication } from '../service/domain/applications';
import { createGroup, createProject } from '../service/domain/namespaces';
import { createUser } from '../service/domain/users';
import { startTestPostgres } from '../test/support/postgres-server';

const ROOT = path.resolve(__dirname, '..');
const RESULTS = path.join(__dirname, 'results');
const SECONDS = Number(process.env.BENCH_SECONDS ?? 5);
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 3);
const CONNECTIONS = Number(process.env.BENCH_CONNECTIONS ?? 50);
/** GET /api/v4/user alongside the password grants, and alone for its idle p99. */
const PROBE_CONNECTIONS = 10;
const PASSWORD = 'correct horse battery staple';
const REDIRECT_URI = 'https://client.example/callback';
const FORM = { 'content-type': 'application/x-www-form-urlencoded' };

const sha256Hex = (s: string) => createHash('sha256').update(s).digest('hex');
const form = (values: Record<string, string>) => new URLSearchParams(values).toString();
const basic = (id: string, secret: string) => `Basic ${Buffer.from(`${id}:${secret}`).toString('base64')}`;
const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];

interface Sample {
  rps: number;
  p50: number;
  p99: number;
  rssMb: number;
  /** CPU time (user + system) the serving process spent per request answered, in ms. */
  cpuMs: number;
  failures: number;
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
 * Peak resident memory of a process while `work` runs (sampled from /proc every 100 ms), and the
 * CPU time it spent meanwhile.
 */
async function withPeakRss<T>(
  pid: number,
  work: () => Promise<T>,
): Promise<{ value: T; rssMb: number; cpuSeconds: number }> {
  const cpuBefore = cpuSeconds(pid);
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
    return { value, rssMb: Math.max(peak, read()), cpuSeconds: cpuSeconds(pid) - cpuBefore };
  } finally {
    clearInterval(timer);
  }
}

function fromAutocannon(r: autocannon.Result, rssMb: number, cpu: number): Sample {
  return {
    cpuMs: r['2xx'] > 0 ? (cpu * 1000) / r['2xx'] : 0,
    rps: r['2xx'] / r.duration,
    p50: r.latency.p50,
    p99: r.latency.p99,
    rssMb,
    failures: r.non2xx + r.errors + r.timeouts,
  };
}

async function startProcess(
  args: string[],
  env: NodeJS.ProcessEnv,
  ready: RegExp,
  nodeArgs: string[] = [],
): Promise<ChildProcess> {
  const child = spawn(process.execPath, [...nodeArgs, '--import', 'tsx', ...args], {
    cwd: ROOT,
    env: { ...process.env, ...env },
    stdio: ['pipe', 'pipe', 'inherit'],
  });
  await new Promise<void>((resolve, reject) => {
    let seen = '';
    const onData = (chunk: Buffer) => {
      seen += chunk.toString();
      if (ready.test(seen)) {
        child.stdout!.off('data', onData);
        resolve();
      }
    };
    child.stdout!.on('data', onData);
    child.once('exit', (code) => reject(new Error(`${args[0]} exited (${code}) before it was ready: ${seen}`)));
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
    const user = await createUser(db, { username: 'bench', email: 'bench@example.com', password: PASSWORD });
    const pat = `glpat-${randomBytes(32).toString('base64url')}`;
    await db
      .insertInto('personal_access_tokens')
      .values({ user_id: user.id, name: 'bench', token_digest: sha256Hex(pat), scopes: ['api', 'read_user'] })
      .execute();
    await createGroup(db, { path: 'bench-group', visibility: 'public' });
    const project = await createProject(db, { path: 'bench-group/bench-project', visibility: 'public' });
    const { application, secret } = await registerApplication(db, {
      name: 'Bench',
      redirectUris: [REDIRECT_URI],
      scopes: 'api read_user',
      trusted: true,
    });
    const clientAuth = basic(application.uid, secret);

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
    const server = await startProcess(
      ['service/server.ts'],
      { DATABASE_URL: databaseUrl, HOST: '127.0.0.1', PORT: String(port), LOG_LEVEL: 'silent', LANYARD_HOME: home },
      /Lanyard is listening/,
      // e.g. BENCH_SERVER_NODE_ARGS="--cpu-prof --cpu-prof-dir=/tmp/prof" to profile the server alone.
      process.env.BENCH_SERVER_NODE_ARGS?.split(/\s+/).filter(Boolean),
    );
    children.push(server);
    const peers = spawn(process.execPath, ['--import', 'tsx', 'bench/http-peers.ts'], {
      cwd: ROOT,
      env: { ...process.env, DATABASE_URL: databaseUrl, PUBLIC_URL: base },
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
    const ports = (await nextPeerLine()) as unknown as { bare: number; baseline: number; peer: number };
    const mintPeerToken = async (): Promise<string> => {
      peers.stdin!.write('mint\n');
      return (await nextPeerLine()).refreshToken as string;
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

    const cannon = (target: string, pid: number, options: Omit<autocannon.Options, 'url'>, connections = CONNECTIONS) =>
      // autocannon takes the path from the URL (a `path` option only applies inside `requests`).
      withPeakRss(pid, () =>
        autocannon({ ...options, url: target + (options.path ?? ''), connections, duration: SECONDS }),
      ).then(({ value, rssMb, cpuSeconds: cpu }) => fromAutocannon(value, rssMb, cpu));

    /**
     * authorize (trusted: straight to the redirect) + code exchange, CONNECTIONS loops at once,
     * through autocannon's chained requests (the code read from the 302's Location): a fetch()
     * client in this process cost as much CPU as the server it measures, on the same cores.
     */
    async function authorizeAndExchange(): Promise<Sample> {
      const authorizePath = `/oauth/authorize?${form({
        client_id: application.uid,
        redirect_uri: REDIRECT_URI,
        response_type: 'code',
        scope: 'api',
        state: 'bench',
      })}`;
      type Pair = { code?: string; started?: number };
      const latencies: number[] = [];
      let failures = 0;
      const {
        value,
        rssMb,
        cpuSeconds: cpu,
      } = await withPeakRss(server.pid!, () =>
        autocannon({
          url: base,
          connections: CONNECTIONS,
          duration: SECONDS,
          requests: [
            {
              method: 'GET',
              path: authorizePath,
              headers: { cookie },
              setupRequest: (request, context: Pair) => {
                context.started = performance.now();
                return request;
              },
              onResponse: (status, _body, context: Pair, headers) => {
                const location = (headers as Record<string, string | undefined>)?.location ?? '';
                context.code =
                  status === 302 ? (new URL(location, base).searchParams.get('code') ?? undefined) : undefined;
                if (!context.code) failures++;
              },
            },
            {
              method: 'POST',
              path: '/oauth/token',
              headers: { ...FORM, authorization: clientAuth },
              // No code: start the pair again (autocannon restarts on a falsy request).
              setupRequest: (request, context: Pair) =>
                context.code
                  ? {
                      ...request,
                      body: form({ grant_type: 'authorization_code', code: context.code, redirect_uri: REDIRECT_URI }),
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
      latencies.sort((a, b) => a - b);
      const at = (q: number) => latencies[Math.min(latencies.length - 1, Math.floor(q * latencies.length))] ?? 0;
      return {
        rps: latencies.length / value.duration,
        p50: at(0.5),
        p99: at(0.99),
        rssMb,
        cpuMs: latencies.length > 0 ? (cpu * 1000) / latencies.length : 0,
        failures: failures + value.errors + value.timeouts,
      };
    }

    const userRequest = { path: '/api/v4/user', headers: { 'private-token': pat } };
    const passwordRequest = {
      method: 'POST',
      path: '/oauth/token',
      headers: FORM,
      body: form({ grant_type: 'password', username: 'bench', password: PASSWORD }),
    };
    const scenarios: Record<string, () => Promise<Sample>> = {
      'bare Fastify route': () => cannon(`http://127.0.0.1:${ports.bare}`, peers.pid!, {}),
      'baseline: Fastify + pg, GET /user SQL': () =>
        cannon(`http://127.0.0.1:${ports.baseline}`, peers.pid!, userRequest),
      'peer: node-oidc-provider refresh': async () => {
        const refreshToken = await mintPeerToken();
        return cannon(`http://127.0.0.1:${ports.peer}`, peers.pid!, {
          method: 'POST',
          path: '/token',
          headers: { ...FORM, authorization: basic('bench', 'bench-secret') },
          body: form({ grant_type: 'refresh_token', refresh_token: refreshToken }),
        });
      },
      'GET /api/v4/user (PAT)': () => cannon(base, server.pid!, userRequest),
      'GET /notification_settings': () =>
        cannon(base, server.pid!, { path: '/api/v4/notification_settings', headers: { 'private-token': pat } }),
      'PUT project notification settings': () =>
        cannon(base, server.pid!, {
          method: 'PUT',
          path: `/api/v4/projects/${project.id}/notification_settings?level=watch`,
          headers: { 'private-token': pat },
        }),
      'refresh_token grant': async () => {
        const tokens = await mintRefreshTokens(8000);
        let next = 0;
        return cannon(base, server.pid!, {
          requests: [
            {
              method: 'POST',
              path: '/oauth/token',
              headers: { ...FORM, authorization: clientAuth },
              setupRequest: (request) => ({
                ...request,
                body: form({ grant_type: 'refresh_token', refresh_token: tokens[next++ % tokens.length] }),
              }),
            },
          ],
        });
      },
      'authorize (trusted) + code exchange': authorizeAndExchange,
      'GET /user probe, idle': () => cannon(base, server.pid!, userRequest, PROBE_CONNECTIONS),
      'password grant': () => cannon(base, server.pid!, passwordRequest),
      'GET /user probe, during password grants': async () => {
        const [probe] = await Promise.all([
          cannon(base, server.pid!, userRequest, PROBE_CONNECTIONS),
          autocannon({
            ...passwordRequest,
            url: base + passwordRequest.path,
            connections: CONNECTIONS,
            duration: SECONDS,
          }),
        ]);
        return probe;
      },
    };

    // Each side answers the same request, with the same bytes, before anything is timed.
    const answers: string[] = [];
    for (const target of [`http://127.0.0.1:${ports.baseline}`, base]) {
      const res = await fetch(`${target}/api/v4/user`, { headers: { 'private-token': pat } });
      const body = await res.text();
      if (res.status !== 200) throw new Error(`${target}/api/v4/user answered ${res.status}: ${body}`);
      answers.push(`${res.headers.get('content-type')}\n${body}`);
    }
    if (answers[0] !== answers[1]) throw new Error(`the baseline and the service differ:\n${answers.join('\n')}`);

    // BENCH_ONLY=regex runs a subset (when measuring one change); targets need the full run.
    if (process.env.BENCH_ONLY) {
      const only = new RegExp(process.env.BENCH_ONLY, 'i');
      for (const name of Object.keys(scenarios)) if (!only.test(name)) delete scenarios[name];
    }
    const samples: Record<string, Sample[]> = Object.fromEntries(Object.keys(scenarios).map((k) => [k, []]));
    const started = Date.now();
    for (let round = 1; round <= ROUNDS; round++) {
      for (const [name, run] of Object.entries(scenarios)) {
        const s = await run();
        samples[name].push(s);
        process.stdout.write(
          `  round ${round}/${ROUNDS}  ${name.padEnd(42)} ${s.rps.toFixed(1).padStart(8)} req/s  p99 ${s.p99.toFixed(1)} ms${s.failures ? `  (${s.failures} failed)` : ''}\n`,
        );
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
          failures: xs.reduce((n, x) => n + x.failures, 0),
        },
      ]),
    ) as Record<string, Sample>;
    if (process.env.BENCH_ONLY) printTable(result, (Date.now() - started) / 1000);
    else report(result, (Date.now() - started) / 1000);
  } finally {
    for (const child of children) child.kill('SIGTERM');
    await Promise.all(children.map((c) => (c.exitCode === null ? new Promise((r) => c.once('exit', r)) : null)));
    await handle.destroy();
    await postgres.stop();
    fs.rmSync(home, { recursive: true, force: true });
  }
}

function printTable(r: Record<string, Sample>, seconds: number): void {
  const line = (s: string) => process.stdout.write(`${s}\n`);
  const ratioTo: Record<string, string> = {
    'GET /api/v4/user (PAT)': 'baseline: Fastify + pg, GET /user SQL',
    'refresh_token grant': 'peer: node-oidc-provider refresh',
    'GET /user probe, during password grants': 'GET /user probe, idle',
  };
  line(
    `\nHTTP, ${CONNECTIONS} connections (probe ${PROBE_CONNECTIONS}), medians of ${ROUNDS} interleaved ${SECONDS} s rounds, ${os.cpus().length} cores, Node ${process.version}; ${seconds.toFixed(0)} s in all`,
  );
  line(
    `${'scenario'.padEnd(42)} ${'req/s'.padStart(9)} ${'p50 ms'.padStart(8)} ${'p99 ms'.padStart(8)} ${'RSS MB'.padStart(7)} ${'CPU ms/req'.padStart(10)}  ratio`,
  );
  for (const [name, s] of Object.entries(r)) {
    const against = ratioTo[name];
    const ratio =
      against && r[against]
        ? name.includes('probe')
          ? `p99 ×${(s.p99 / r[against].p99).toFixed(2)} of idle`
          : `×${(s.rps / r[against].rps).toFixed(2)} of ${against.split(':')[0]} (CPU/req ×${(s.cpuMs / r[against].cpuMs).toFixed(2)})`
        : '';
    line(
      `${name.padEnd(42)} ${s.rps.toFixed(1).padStart(9)} ${s.p50.toFixed(1).padStart(8)} ${s.p99.toFixed(1).padStart(8)} ${s.rssMb.toFixed(0).padStart(7)} ${s.cpuMs.toFixed(3).padStart(10)}  ${ratio}${s.failures ? `  ${s.failures} failed` : ''}`,
    );
  }
}

function report(r: Record<string, Sample>, seconds: number): void {
  const line = (s: string) => process.stdout.write(`${s}\n`);
  printTable(r, seconds);

  const coldFile = path.join(RESULTS, 'cold-start.json');
  const cold = fs.existsSync(coldFile)
    ? (JSON.parse(fs.readFileSync(coldFile, 'utf8')) as { ratio: number; bundleBytes: number })
    : undefined;
  const pw = r['password grant'];
  const probeRatio = r['GET /user probe, during password grants'].p99 / r['GET /user probe, idle'].p99;
  const userRatio = r['GET /api/v4/user (PAT)'].rps / r['baseline: Fastify + pg, GET /user SQL'].rps;
  const targets: Array<[string, string, string, boolean]> = [
    [
      'password grant',
      `${pw.rps.toFixed(1)}/s, RSS ${pw.rssMb.toFixed(0)} MB, GET /user p99 ×${probeRatio.toFixed(2)} of idle`,
      '≥ 40/s, RSS ≤ 200 MB, p99 ≤ 2× idle',
      pw.rps >= 40 && pw.rssMb <= 200 && probeRatio <= 2,
    ],
    ['refresh grant', `${r['refresh_token grant'].rps.toFixed(0)}/s`, '≥ 1000/s', r['refresh_token grant'].rps >= 1000],
    [
      'authorize + exchange',
      `${r['authorize (trusted) + code exchange'].rps.toFixed(0)} round trips/s`,
      '≥ 800/s',
      r['authorize (trusted) + code exchange'].rps >= 800,
    ],
    [
      'PUT notification settings',
      `${r['PUT project notification settings'].rps.toFixed(0)}/s`,
      '≥ 1500/s',
      r['PUT project notification settings'].rps >= 1500,
    ],
    [
      'GET notification_settings',
      `${r['GET /notification_settings'].rps.toFixed(0)}/s`,
      '≥ 2000/s',
      r['GET /notification_settings'].rps >= 2000,
    ],
    ['GET /user vs baseline', `×${userRatio.toFixed(2)}`, '≥ 0.9×', userRatio >= 0.9],
    [
      'cold start',
      cold ? `×${cold.ratio.toFixed(2)} of node -e 0` : 'not measured (run npm run bench)',
      '≤ 3×',
      !!cold && cold.ratio <= 3,
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

  fs.mkdirSync(RESULTS, { recursive: true });
  const json = {
    at: new Date().toISOString(),
    node: process.version,
    cores: os.cpus().length,
    connections: CONNECTIONS,
    seconds: SECONDS,
    rounds: ROUNDS,
    scenarios: r,
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
