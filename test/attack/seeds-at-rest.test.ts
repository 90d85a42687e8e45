// Attack (issue 22): "a TOTP seed enrolled on the account page is stored in clear". Enrol through
// the page as a person would, then scan every column of every table for the seed in any encoding
// (base32 as shown, grouped or lowercase; the raw bytes as hex, base64 and base64url) — and the
// same for a seed enrolled with `users set-2fa on`. Both paths seal it; sign-in still works.
import { sql } from 'kysely';
import { beforeEach, describe, expect, it } from 'vitest';
import { runCli } from '../../admin-cli/cli';
import { bufferedIo } from '../../admin-cli/io';
import { databaseTarget } from '../../admin-cli/target';
import { totp } from '../support/totp';
import { resetDatabase } from '../support/db';
import { WebClient } from '../oauth/support/browser-like';
import { makeUser, PASSWORD, useFixture } from '../oauth/support/harness';

const f = useFixture();
beforeEach(() => resetDatabase(f.db, ['service_keys']));

/** RFC 4648 base32, written out here rather than borrowed from the code under test. */
function base32Bytes(text: string): Buffer {
  const alphabet = 'ABCDEFGHIJKLMNOPQRSTUVWXYZ234567';
  let bits = '';
  for (const ch of text.toUpperCase()) bits += alphabet.indexOf(ch).toString(2).padStart(5, '0');
  return Buffer.from((bits.match(/.{8}/g) ?? []).map((b) => Number.parseInt(b, 2)));
}

/** The seed as a dump reader might find it. */
function encodings(seed: string): string[] {
  const raw = base32Bytes(seed);
  return [
    seed,
    seed.toLowerCase(),
    seed.replace(/(.{4})(?=.)/g, '$1 '),
    raw.toString('hex'),
    raw.toString('hex').toUpperCase(),
    raw.toString('base64'),
    raw.toString('base64url'),
  ];
}

/** Every column of every table (cast to text; bytea as hex and as its bytes) holding any needle. */
async function columnsHolding(needles: string[]): Promise<string[]> {
  const { rows: columns } = await sql<{ table_name: string; column_name: string; data_type: string }>`
    select c.table_name, c.column_name, c.data_type from information_schema.columns c
    join information_schema.tables t on t.table_schema = c.table_schema and t.table_name = c.table_name
    where c.table_schema = 'public' and t.table_type = 'BASE TABLE'`.execute(f.db);
  const hits: string[] = [];
  for (const { table_name, column_name, data_type } of columns) {
    const asText =
      data_type === 'bytea'
        ? sql`encode(${sql.ref(column_name)}, 'escape') || encode(${sql.ref(column_name)}, 'hex')`
        : sql`${sql.ref(column_name)}::text`;
    for (const needle of needles) {
      const { rows } = await sql<{ n: number }>`
        select count(*)::int as n from ${sql.table(table_name)}
        where strpos(${asText}, ${needle}) > 0`.execute(f.db);
      if (rows[0].n > 0) hits.push(`${table_name}.${column_name} holds ${JSON.stringify(needle)}`);
    }
  }
  return hits;
}

describe('a TOTP seed enrolled on the account page is stored in clear', () => {
  it('page enrolment: no table holds the seed in any encoding; sign-in with it works', async () => {
    await makeUser(f.db, 'alice');
    const web = new WebClient(f.app);
    expect((await web.signIn('alice', PASSWORD)).statusCode).toBe(302);
    const page = await web.get('/-/profile/two_factor_auth');
    const seed = /id="otp-secret">([^<]+)</.exec(page.body)![1].replace(/ /g, '');
    expect(seed).toMatch(/^[A-Z2-7]{32}$/);
    // While enrolment is pending the seed waits in the session: not readable from the table either.
    expect(await columnsHolding(encodings(seed))).toEqual([]);
    const enrolled = await web.post('/-/profile/two_factor_auth', {
      authenticity_token: WebClient.csrf(page.body),
      pin_code: totp(seed),
    });
    expect(enrolled.statusCode).toBe(303);
    const row = await f.db
      .selectFrom('users')
      .select('otp_secret')
      .where('username', '=', 'alice')
      .executeTakeFirstOrThrow();
    expect(row.otp_secret).toMatch(/^totp1\.[0-9A-Za-z_-]+\.[A-Za-z0-9_-]{16}\.[A-Za-z0-9_-]{48,}$/);
    expect(await columnsHolding(encodings(seed))).toEqual([]);

    const next = await new WebClient(f.app).signIn('alice', PASSWORD, () => totp(seed, Date.now() + 30_000));
    expect(next.statusCode).toBe(302);
    expect(next.headers.location).toBe('/-/profile');
  });

  it('CLI enrolment (users set-2fa on) seals the seed the same way', async () => {
    await makeUser(f.db, 'bob');
    const io = bufferedIo();
    const code = await runCli(['users', 'set-2fa', 'bob', 'on', '--json'], {
      io,
      target: databaseTarget(f.db),
      env: { LANYARD_HOME: f.config.home },
    });
    expect(code, io.err).toBe(0);
    const seed = JSON.parse(io.out).otp_secret as string;
    expect(await columnsHolding(encodings(seed))).toEqual([]);
    const res = await new WebClient(f.app).signIn('bob', PASSWORD, () => totp(seed));
    expect(res.statusCode).toBe(302);
  });
});
