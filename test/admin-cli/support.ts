// Helpers for the admin CLI tests: run the CLI in-process against a test database, and take a
// fingerprint of every table so a failed command can be shown to have changed nothing.
import { sql } from 'kysely';
import { expect } from 'vitest';
import { runCli, type RunCliOptions } from '../../admin-cli/cli';
import { testHome } from '../support/app';
import { bufferedIo } from '../../admin-cli/io';
import { databaseTarget } from '../../admin-cli/target';
import type { Db } from '../../service/db/schema';

export interface CliRun {
  code: number;
  out: string;
  err: string;
  /** stdout parsed as JSON (throws when it is not exactly one JSON document). */
  json: any;
}

export const ACTOR = 'cli:test-operator';

export async function runIn(
  db: Db,
  argv: string[],
  options: { stdin?: string; answers?: string[]; columns?: number } & Partial<Omit<RunCliOptions, 'io'>> = {},
): Promise<CliRun> {
  const { stdin, answers, columns, ...rest } = options;
  const io = bufferedIo({ stdin, answers, columns });
  // This file's LANYARD_HOME: the local service key ring and signing keys live there.
  const env = { ...process.env, LANYARD_HOME: testHome(), ...rest.env };
  const code = await runCli(argv, { io, target: databaseTarget(db), actor: ACTOR, ...rest, env });
  return withJson({ code, out: io.out, err: io.err });
}

/** Adds `json`: stdout parsed, or `{ notJson: stdout }` (so a failed matcher can still print the run). */
export function withJson<T extends { out: string }>(run: T): T & { json: any } {
  const parse = () => {
    try {
      return JSON.parse(run.out);
    } catch {
      return { notJson: run.out };
    }
  };
  return Object.defineProperty(run, 'json', { get: parse, enumerable: false }) as T & { json: any };
}

/** Row count and a digest of the contents of every application table (audit events included). */
export async function fingerprint(db: Db): Promise<Record<string, string>> {
  const { rows } = await sql<{ tablename: string }>`
    select tablename from pg_tables where schemaname = 'public' and tablename not like 'kysely_%' order by tablename
  `.execute(db);
  const result: Record<string, string> = {};
  for (const { tablename } of rows) {
    const r = await sql<{ n: string; digest: string | null }>`
      select count(*)::text as n, md5(string_agg(t::text, '|' order by t::text)) as digest from ${sql.table(tablename)} t
    `.execute(db);
    result[tablename] = `${r.rows[0].n}:${r.rows[0].digest ?? '-'}`;
  }
  return result;
}

/**
 * Run a command that must fail as a user error: exit 1, one line on stderr naming the problem,
 * `{"error": …}` as the one JSON document on stdout, and not one row of the database changed.
 */
export async function expectUserError(
  db: Db,
  argv: string[],
  message: RegExp,
  options: Parameters<typeof runIn>[2] = {},
): Promise<CliRun> {
  const before = await fingerprint(db);
  const run = await runIn(db, [...argv, '--json'], options);
  expect(await fingerprint(db)).toEqual(before);
  expect(run.code).toBe(1);
  // Prompts may precede it; the error itself is one line.
  const lines = run.err
    .trimEnd()
    .split('\n')
    .filter((l) => l.startsWith('lanyard-admin: ') && !l.includes('warning: --password'));
  expect(lines, run.err).toHaveLength(1);
  expect(lines[0]).toMatch(message);
  expect(run.err.endsWith(`${lines[0]}\n`)).toBe(true);
  expect(run.json).toEqual({ error: expect.any(String) });
  return run;
}
