import { availableParallelism } from 'node:os';
import { defineConfig } from 'vitest/config';

// Two projects over one PostgreSQL (the global setup): `fast` is the inner loop (units, domain
// functions, the real app through app.inject() on real PostgreSQL); `slow` is everything that
// spawns a process, drives Chromium or a real client library, attacks, bundles or runs Pulumi.
// `npm test` runs both; `npm run test:fast` runs `fast` only.
const SLOW = [
  'test/e2e/**', // Chromium
  'test/clients/**', // python-gitlab, @gitbeaker/rest over HTTP
  'test/attack/**', // fuzzing, races, outages
  'test/infra/**', // Pulumi under mocks, its ts-node loader
  'test/lambda/**', // esbuild bundles, openssl, built functions
  'test/admin-cli/subprocess.test.ts',
  'test/admin-cli/terminal.test.ts',
  'test/admin-cli/local-database.test.ts',
  'test/hardening/npm-start-lifecycle.test.ts',
  'test/service/server.test.ts',
  'test/api/gitbeaker.test.ts',
  'test/api/oauth-tokens.test.ts',
  'test/api/openapi-client.test.ts',
  'test/oauth/client-library.test.ts',
  'test/oauth/dpop-client.test.ts',
];

const GLOBAL_SETUP = 'test/support/global-setup.ts';

export default defineConfig({
  test: {
    setupFiles: ['test/support/setup-file.ts'],
    pool: 'forks',
    // One test file per core at once (vitest's default leaves one core out). The files spend much of
    // their time waiting on other processes (PostgreSQL, Chromium, spawned CLIs and servers), so on
    // two cores one file at a time left the machine half idle: the whole suite took 1,048 s of
    // vitest with one worker and 791 s with two, all 171 files passing.
    maxWorkers: availableParallelism(),
    testTimeout: 30_000,
    hookTimeout: 60_000,
    reporters: ['default'],
    projects: [
      // Each project starts its own PostgreSQL (global setup) when it has files to run.
      {
        extends: true,
        test: { name: 'fast', include: ['test/**/*.test.ts'], exclude: SLOW, globalSetup: [GLOBAL_SETUP] },
      },
      {
        extends: true,
        test: {
          name: 'slow',
          include: SLOW.map((p) => (p.endsWith('/**') ? `${p}/*.test.ts` : p)),
          globalSetup: [GLOBAL_SETUP],
        },
      },
    ],
  },
});
