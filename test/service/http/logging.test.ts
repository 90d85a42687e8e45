// Logs are JSON with request ids and never contain a token, secret or password.
import { Writable } from 'node:stream';
import { describe, expect, it } from 'vitest';
import { buildApp } from '../../../service/app';
import { loggerOptions, redactUrl } from '../../../service/http/logging';
import { createTestDatabase } from '../../support/db';
import { testConfig } from '../../support/app';

describe('request logging', () => {
  it('masks credential query parameters', () => {
    expect(redactUrl('/api/v4/user?private_token=glpat-abc&x=1')).toBe('/api/v4/user?private_token=[REDACTED]&x=1');
    expect(redactUrl('/cb?code=abc&state=s&access_token=t')).toBe(
      '/cb?code=[REDACTED]&state=s&access_token=[REDACTED]',
    );
  });

  it('builds no logger at all when silent (no per-request child logger), and one at every other level', () => {
    expect(loggerOptions('silent')).toBe(false);
    for (const level of ['fatal', 'error', 'warn', 'info', 'debug', 'trace']) {
      expect(loggerOptions(level)).toMatchObject({ level });
    }
  });

  it('writes JSON lines with a request id and no credentials', async () => {
    const t = await createTestDatabase();
    const lines: string[] = [];
    const stream = new Writable({
      write(chunk, _enc, cb) {
        lines.push(...chunk.toString().trim().split('\n'));
        cb();
      },
    });
    const app = await buildApp({
      db: t.db,
      config: testConfig(),
      logger: { ...(loggerOptions('info') as object), stream },
    });
    await app.inject({
      method: 'GET',
      url: '/api/v4/user?private_token=glpat-SECRETSECRETSECRET1&access_token=deadbeefcafe',
      headers: {
        authorization: 'Bearer topsecretbearer',
        'private-token': 'glpat-headersecret',
        cookie: '_lanyard_session=sessionsecret',
      },
    });
    await app.close();
    const text = lines.join('\n');
    for (const secret of [
      'glpat-SECRETSECRETSECRET1',
      'deadbeefcafe',
      'topsecretbearer',
      'glpat-headersecret',
      'sessionsecret',
    ]) {
      expect(text).not.toContain(secret);
    }
    const entries = lines.map((l) => JSON.parse(l));
    const incoming = entries.find((e) => e.msg === 'incoming request');
    expect(incoming.reqId).toMatch(/^[0-9a-f-]{36}$/);
    expect(incoming.req.url).toBe('/api/v4/user?private_token=[REDACTED]&access_token=[REDACTED]');
  });
});
