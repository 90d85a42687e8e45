// Cold start of the API function, measured locally: process start → first response to an HTTP
// API v2 health event (which queries PostgreSQL), for the esbuild bundle (what is deployed) and
// for the same code with its dependencies left in node_modules (a zip-the-folder deployment),
// as ratios against bare `node -e 0` measured in the same run. Also the bundle sizes.
// `npx tsx bench/cold-start.ts [runs=15]`; DATABASE_URL to use an existing PostgreSQL.
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { gzipSync } from 'node:zlib';
import * as esbuild from 'esbuild';
import { bundleLambdas, ROOT } from '../infra/build/bundle';
import { createDb } from '../service/db/create-db';
import { migrateToLatest } from '../service/db/migrator';
import { startTestPostgres } from '../test/support/postgres-server';

const runs = Number(process.argv[2] ?? 15);

const HEALTH_EVENT = {
  version: '2.0',
  routeKey: '$default',
  rawPath: '/-/health',
  rawQueryString: '',
  headers: { host: 'bench.execute-api.eu-west-1.amazonaws.com' },
  requestContext: {
    http: { method: 'GET', path: '/-/health', sourceIp: '203.0.113.7' },
    stage: '$default',
    requestId: 'bench',
  },
  isBase64Encoded: false,
};

/**
 * A second first request, reported beside the target (informational): the first request of a cold
 * instance can be any API call, here GET /api/v4/user with a token that does not exist (401).
 */
const USER_EVENT = {
  ...HEALTH_EVENT,
  rawPath: '/api/v4/user',
  headers: { ...HEALTH_EVENT.headers, authorization: 'Bearer glpat-not-a-token' },
  requestContext: {
    ...HEALTH_EVENT.requestContext,
    http: { ...HEALTH_EVENT.requestContext.http, path: '/api/v4/user' },
  },
};

/** ms from spawn to the first byte on stdout (the child prints once it has a response). */
function timeToFirstOutput(args: string[], env: NodeJS.ProcessEnv): Promise<{ ms: number; out: string }> {
  return new Promise((resolve, reject) => {
    const started = process.hrtime.bigint();
    const child = spawn(process.execPath, args, { env, stdio: ['ignore', 'pipe', 'pipe'] });
    let stderr = '';
    child.stderr.on('data', (d) => (stderr += d));
    child.stdout.once('data', (d: Buffer) => {
      const ms = Number(process.hrtime.bigint() - started) / 1e6;
      child.kill('SIGKILL'); // the pool keeps the process alive, like a warm Lambda instance
      resolve({ ms, out: d.toString() });
    });
    child.on('exit', (code) => code && code !== 0 && reject(new Error(`child exited ${code}: ${stderr}`)));
  });
}

const invoke = (file: string, event: object = HEALTH_EVENT) =>
  `require(${JSON.stringify(file)}).handler(${JSON.stringify(event)},{}).then(r=>process.stdout.write(r.statusCode+" "+r.body))`;

function stats(samples: number[]) {
  const s = [...samples].sort((a, b) => a - b);
  const at = (q: number) => s[Math.min(s.length - 1, Math.floor(q * s.length))];
  return { median: at(0.5), p90: at(0.9), min: s[0] };
}

async function main(): Promise<void> {
  const work = path.join(ROOT, '.tmp', 'bench-cold-start');
  fs.rmSync(work, { recursive: true, force: true });
  fs.mkdirSync(work, { recursive: true });

  // The deployed artifact, and the same entry with node_modules left external (inside the repo,
  // so require() finds them — as a zipped folder with node_modules would on Lambda).
  const [api] = await bundleLambdas({
    outDir: path.join(work, 'bundle'),
    entries: [{ name: 'api', source: 'service/lambda.ts' }],
  });
  const unbundledFile = path.join(work, 'unbundled', 'index.js');
  await esbuild.build({
    absWorkingDir: ROOT,
    entryPoints: ['service/lambda.ts'],
    outfile: unbundledFile,
    bundle: true,
    packages: 'external',
    platform: 'node',
    format: 'cjs',
    target: 'node20',
    logLevel: 'warning',
  });
  fs.copyFileSync(path.join(api.dir, 'rds-ca.pem'), path.join(work, 'unbundled', 'rds-ca.pem'));

  const pgServer = process.env.DATABASE_URL ? undefined : await startTestPostgres();
  const url = process.env.DATABASE_URL ?? pgServer!.adminUrl;
  const handle = createDb({ connectionString: url, max: 1 });
  await migrateToLatest(handle.db);
  await handle.destroy();

  const env = { ...process.env, DATABASE_URL: url, LOG_LEVEL: 'silent', NODE_ENV: 'production' };
  const samples = { baseline: [] as number[], bundle: [] as number[], unbundled: [] as number[] };
  const userSamples: number[] = [];
  await timeToFirstOutput(['-e', invoke(api.file)], env); // warm the file cache once
  await timeToFirstOutput(['-e', invoke(unbundledFile)], env);
  for (let i = 0; i < runs; i++) {
    // Interleaved, so drift on the machine affects all three alike.
    samples.baseline.push((await timeToFirstOutput(['-e', 'process.stdout.write("0")'], env)).ms);
    const b = await timeToFirstOutput(['-e', invoke(api.file)], env);
    if (!b.out.startsWith('200 ')) throw new Error(`bundle answered ${b.out}`);
    samples.bundle.push(b.ms);
    const u = await timeToFirstOutput(['-e', invoke(unbundledFile)], env);
    if (!u.out.startsWith('200 ')) throw new Error(`unbundled answered ${u.out}`);
    samples.unbundled.push(u.ms);
    const user = await timeToFirstOutput(['-e', invoke(api.file, USER_EVENT)], env);
    if (!user.out.startsWith('401 ')) throw new Error(`bundle answered GET /api/v4/user with ${user.out}`);
    userSamples.push(user.ms);
  }
  await pgServer?.stop();

  const base = stats(samples.baseline);
  const rows = Object.entries(samples).map(([name, s]) => ({ name, ...stats(s) }));
  const line = (s: string) => process.stdout.write(`${s}\n`);
  line(
    `Cold start, process start → first response to GET /-/health (real PostgreSQL), ${runs} runs each, ${os.cpus().length} cores, Node ${process.version}`,
  );
  for (const r of rows) {
    line(
      `  ${r.name.padEnd(10)} median ${r.median.toFixed(0).padStart(4)} ms  p90 ${r.p90.toFixed(0).padStart(4)} ms  min ${r.min.toFixed(0).padStart(4)} ms  ×${(r.median / base.median).toFixed(2)} of node -e 0`,
    );
  }
  const user = stats(userSamples);
  line(
    `  (informational) bundle, first request GET /api/v4/user with an unknown token (401): median ${user.median.toFixed(0)} ms, ×${(user.median / base.median).toFixed(2)} of node -e 0`,
  );
  if (process.env.NODE_EXTRA_CA_CERTS) {
    line(
      `  (note) NODE_EXTRA_CA_CERTS is set here: every process, node -e 0 included, loads those certificates at start, which a Lambda instance does not`,
    );
  }
  const bundle = stats(samples.bundle).median;
  const unbundled = stats(samples.unbundled).median;
  line(
    `  bundle / unbundled: ×${(bundle / unbundled).toFixed(2)}; bundle minus baseline ${(bundle - base.median).toFixed(0)} ms, unbundled minus baseline ${(unbundled - base.median).toFixed(0)} ms`,
  );
  const js = fs.readFileSync(api.file);
  // For bench/http.ts's target lines (npm run bench runs this first).
  const results = path.join(ROOT, 'bench', 'results');
  fs.mkdirSync(results, { recursive: true });
  fs.writeFileSync(
    path.join(results, 'cold-start.json'),
    `${JSON.stringify({ ratio: bundle / base.median, bundleMs: bundle, nodeMs: base.median, bundleBytes: js.length }, null, 2)}\n`,
  );
  const ca = fs.statSync(path.join(api.dir, 'rds-ca.pem')).size;
  line(
    `Bundle: index.js ${js.length} bytes (${(js.length / 1024).toFixed(1)} KiB, gzip ${(gzipSync(js, { level: 9 }).length / 1024).toFixed(1)} KiB) + rds-ca.pem ${(ca / 1024).toFixed(1)} KiB`,
  );
  line(
    `  largest parts: ${api.breakdown
      .slice(0, 6)
      .map(([p, b]) => `${p} ${(b / 1024).toFixed(0)} KiB`)
      .join(', ')}`,
  );
}

main().catch((err) => {
  process.stderr.write(`bench/cold-start: ${(err as Error).stack}\n`);
  process.exit(1);
});
