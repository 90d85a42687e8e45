// Regression (issue 22, "TRUST_PROXY=true takes the left-most, client-chosen X-Forwarded-For"):
// TRUST_PROXY is a hop count or a list of the proxies' addresses/CIDRs, and the client address is
// the right-most untrusted X-Forwarded-For entry. Checked through the real app: the address a
// failed credential check is counted under (rate_limit_counters), and the per-address limit that
// spoofed left-most entries must not evade. `true` and malformed values are refused at start-up.
import type { FastifyInstance } from 'fastify';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { buildApp } from '../../service/app';
import { ConfigError, loadConfig } from '../../service/config';
import { testConfig } from '../support/app';
import { resetDatabase } from '../support/db';
import { form, FORM, useFixture } from '../oauth/support/harness';

const f = useFixture();
const apps: Record<string, FastifyInstance> = {};
beforeAll(async () => {
  for (const [name, value] of Object.entries({ none: undefined, one: '1', two: '2', list: '10.0.0.0/8, 192.0.2.1' }))
    apps[name] = await buildApp({
      db: f.db,
      config: testConfig({ trustProxy: loadConfig({ TRUST_PROXY: value }).trustProxy }),
      logger: false,
    });
});
afterAll(async () => {
  for (const app of Object.values(apps)) await app.close();
});
beforeEach(() => resetDatabase(f.db));

/** A failed password grant (unknown user) arriving from `peer` with `xff`. */
const guess = (app: FastifyInstance, peer: string, xff?: string, i = 0) =>
  app.inject({
    method: 'POST',
    url: '/oauth/token',
    remoteAddress: peer,
    headers: { ...FORM, ...(xff === undefined ? {} : { 'x-forwarded-for': xff }) },
    payload: form({ grant_type: 'password', username: `nobody${i}`, password: 'wrong' }),
  });

/** The address the service counted the failure under. */
async function countedAddress(): Promise<string[]> {
  const rows = await f.db.selectFrom('rate_limit_counters').select('key').orderBy('key').execute();
  return rows.map((r) => r.key.replace(/^failures:addr:/, ''));
}

describe('TRUST_PROXY: the client is the right-most untrusted X-Forwarded-For entry', () => {
  it('unset: X-Forwarded-For is ignored, the peer is the client', async () => {
    expect((await guess(apps.none, '203.0.113.9', '198.51.100.1')).statusCode).toBe(400);
    expect(await countedAddress()).toEqual(['203.0.113.9']);
  });

  it('1 (one load balancer): the entry it appended, never the left-most the client wrote', async () => {
    expect((await guess(apps.one, '10.0.0.5', 'spoofed-by-client, 1.2.3.4, 203.0.113.7')).statusCode).toBe(400);
    expect(await countedAddress()).toEqual(['203.0.113.7']);
  });

  it('1: a request without the header is the peer itself', async () => {
    await guess(apps.one, '10.0.0.5');
    expect(await countedAddress()).toEqual(['10.0.0.5']);
  });

  it('2 (CDN, then load balancer): the second entry from the right', async () => {
    await guess(apps.two, '10.0.0.5', '1.2.3.4, 203.0.113.7, 10.9.9.9');
    expect(await countedAddress()).toEqual(['203.0.113.7']);
  });

  it('a list: trusted hops are skipped from the right, the first untrusted one is the client', async () => {
    await guess(apps.list, '10.0.0.5', '1.2.3.4, 203.0.113.7, 192.0.2.1, 10.2.3.4');
    expect(await countedAddress()).toEqual(['203.0.113.7']);
  });

  it('a list: a peer that is not a listed proxy is the client, whatever header it sends', async () => {
    await guess(apps.list, '198.51.100.50', '1.2.3.4, 203.0.113.7');
    expect(await countedAddress()).toEqual(['198.51.100.50']);
  });

  it('spoofed left-most entries do not evade the per-address limit: the 61st failure is 429', async () => {
    for (let i = 0; i < 60; i++) {
      const res = await guess(apps.one, '10.0.0.5', `192.0.2.${i}, 203.0.113.7`, i);
      expect(res.statusCode).toBe(400);
    }
    const limited = await guess(apps.one, '10.0.0.5', '192.0.2.250, 203.0.113.7', 99);
    expect(limited.statusCode).toBe(429);
    expect(Number(limited.headers['retry-after'])).toBeGreaterThanOrEqual(1);
    expect(limited.json()).toEqual({ error: 'slow_down', error_description: 'Too many failed attempts. Retry later.' });
    // Another client behind the same load balancer is not affected.
    expect((await guess(apps.one, '10.0.0.5', '192.0.2.250, 203.0.113.8', 100)).statusCode).toBe(400);
    const counters = await f.db.selectFrom('rate_limit_counters').select(['key', 'count']).orderBy('key').execute();
    expect(counters).toEqual([
      { key: 'failures:addr:203.0.113.7', count: 60 },
      { key: 'failures:addr:203.0.113.8', count: 1 },
    ]);
  });
});

describe('TRUST_PROXY values', () => {
  const parse = (value: string | undefined) => loadConfig({ TRUST_PROXY: value }).trustProxy;

  it('unset, empty, false and 0: no proxy; a whole number: that many hops; a list: addresses and CIDRs', () => {
    expect([undefined, '', 'false', 'FALSE', '0'].map(parse)).toEqual([false, false, false, false, false]);
    expect(parse('1')).toBe(1);
    expect(parse(' 3 ')).toBe(3);
    expect(parse('10.0.0.0/8,192.0.2.1, 2001:db8::/32 ,::1,loopback')).toEqual([
      '10.0.0.0/8',
      '192.0.2.1',
      '2001:db8::/32',
      '::1',
      'loopback',
    ]);
  });

  it('true is refused at start-up with what to set instead', () => {
    for (const value of ['true', 'TRUE', ' true '])
      expect(() => parse(value)).toThrow(
        new ConfigError(
          'TRUST_PROXY=true is refused: it would take the client address from the left-most X-Forwarded-For entry, which the client writes. Set the number of proxies in front of Lanyard (e.g. TRUST_PROXY=1 behind one load balancer) or their addresses (e.g. TRUST_PROXY=10.0.0.0/8)',
        ),
      );
  });

  it('malformed values are refused at start-up, naming the bad entry', () => {
    const refused = (value: string) => {
      try {
        parse(value);
      } catch (err) {
        expect(err).toBeInstanceOf(ConfigError);
        return (err as Error).message;
      }
      throw new Error(`accepted: ${value}`);
    };
    expect(refused('yes')).toBe(
      'TRUST_PROXY must be false, a number of proxies, or a comma-separated list of proxy addresses/CIDRs (got "yes" in "yes")',
    );
    expect(refused('10.0.0.0/8, 10.0.0.300')).toBe(
      'TRUST_PROXY must be false, a number of proxies, or a comma-separated list of proxy addresses/CIDRs (got "10.0.0.300" in "10.0.0.0/8, 10.0.0.300")',
    );
    for (const value of ['-1', '1.5', '10.0.0.0/33', '::1/129', '10.0.0.0/8/1', '10.0.0.1,', 'on'])
      expect(refused(value)).toMatch(/^TRUST_PROXY must be /);
    expect(refused('33')).toBe('TRUST_PROXY must be a number of proxies from 0 to 32 (got "33")');
  });
});
