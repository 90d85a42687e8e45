// service/aws: the Secrets Manager client, the cached secret, and the session key ring secret.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  CachedSecret,
  fullJitterDelay,
  NetworkError,
  secretsManagerStore,
  SecretsManagerError,
  type SecretStore,
} from '../../service/aws/secret-store';
import { ensureKeyRingSecret, rotateKeyRingSecret, secretKeyRingSource } from '../../service/aws/session-key-ring';
import {
  ensureSigningKeySecret,
  rotateSigningKeySecret,
  secretSigningKeySource,
} from '../../service/aws/signing-key-secret';
import { parseKeyRingDocument } from '../../service/domain/service-keys';
import { startFakeSecretsManager, type FakeSecretsManager } from './fake-secrets-manager';

const ARN = 'arn:aws:secretsmanager:eu-west-1:123456789012:secret:lanyard-db-AbCdEf';
const RING = 'arn:aws:secretsmanager:eu-west-1:123456789012:secret:lanyard-session-keys-AbCdEf';
const SIGNING = 'arn:aws:secretsmanager:eu-west-1:123456789012:secret:lanyard-signing-keys-AbCdEf';
const credentials = { accessKeyId: 'AKIDEXAMPLE', secretAccessKey: 'secret', sessionToken: 'token' };

let fake: FakeSecretsManager;
let store: SecretStore;
beforeAll(async () => {
  fake = await startFakeSecretsManager({
    [ARN]: '{"username":"lanyard","password":"p1"}',
    [RING]: undefined,
    [SIGNING]: undefined,
  });
  store = secretsManagerStore({ region: 'eu-west-1', credentials, endpoint: fake.url });
});
afterAll(() => fake.close());

describe('secretsManagerStore', () => {
  it('reads a secret string with a signed request', async () => {
    expect(await store.get(ARN)).toBe('{"username":"lanyard","password":"p1"}');
    expect(fake.calls.at(-1)).toMatchObject({ target: 'GetSecretValue', secretId: ARN });
  });

  it('answers undefined for a secret without a value, and throws typed errors otherwise', async () => {
    expect(await store.get(RING)).toBeUndefined();
    const bad = secretsManagerStore({
      region: 'eu-west-1',
      credentials: { accessKeyId: '', secretAccessKey: '' },
      endpoint: fake.url,
    });
    const err = await bad.get(ARN).catch((e) => e);
    expect(err).toBeInstanceOf(SecretsManagerError);
    expect(err.type).toBe('IncompleteSignatureException');
  });
});

describe('secretsManagerStore retries (full jitter, bounded)', () => {
  const sleeps: number[] = [];
  const retrying = (maxAttempts = 3) =>
    secretsManagerStore({
      region: 'eu-west-1',
      credentials,
      endpoint: fake.url,
      retry: {
        maxAttempts,
        baseDelayMs: 100,
        maxDelayMs: 2_000,
        random: () => 0.5,
        sleep: async (ms) => void sleeps.push(ms),
      },
    });
  const callsSince = (n: number) => fake.calls.slice(n).map((c) => c.target);

  it('retries throttling, 5xx and dropped connections, then answers', async () => {
    sleeps.length = 0;
    const before = fake.calls.length;
    fake.failNext.push({ status: 400, type: 'ThrottlingException' }, 'drop');
    expect(await retrying().get(ARN)).toBe('{"username":"lanyard","password":"p1"}');
    expect(callsSince(before)).toEqual(['GetSecretValue', 'GetSecretValue', 'GetSecretValue']);
    expect(sleeps).toEqual([50, 100]); // half of 100·2^0, half of 100·2^1

    sleeps.length = 0;
    const mark = fake.calls.length;
    fake.failNext.push({ status: 503, type: 'ServiceUnavailable' }, { status: 500, type: 'InternalServiceError' });
    expect(await retrying().get(ARN)).toBe('{"username":"lanyard","password":"p1"}');
    expect(callsSince(mark)).toHaveLength(3);
  });

  it('gives up after maxAttempts with the last error, and never retries a client error', async () => {
    sleeps.length = 0;
    const before = fake.calls.length;
    fake.failNext.push(...Array(4).fill({ status: 500, type: 'InternalServiceError' }));
    const err = await retrying()
      .get(ARN)
      .catch((e) => e);
    expect(err).toBeInstanceOf(SecretsManagerError);
    expect(err).toMatchObject({ type: 'InternalServiceError', statusCode: 500 });
    expect(callsSince(before)).toHaveLength(3);
    expect(sleeps).toEqual([50, 100]);
    fake.failNext.length = 0;

    const mark = fake.calls.length;
    fake.failNext.push({ status: 400, type: 'AccessDeniedException' });
    const denied = await retrying()
      .get(ARN)
      .catch((e) => e);
    expect(denied).toMatchObject({ type: 'AccessDeniedException', statusCode: 400 });
    expect(callsSince(mark)).toHaveLength(1);

    const dropMark = fake.calls.length;
    fake.failNext.push('drop', 'drop');
    const dropped = await retrying(2)
      .get(ARN)
      .catch((e) => e);
    expect(dropped).toBeInstanceOf(NetworkError);
    expect(callsSince(dropMark)).toHaveLength(2);
  });

  it('sends one request token for every attempt of a put, so a retried put stores one version', async () => {
    const before = fake.calls.length;
    fake.failNext.push('drop');
    await retrying().put(ARN, '{"username":"lanyard","password":"p2"}');
    const puts = fake.calls.slice(before);
    expect(puts.map((c) => c.target)).toEqual(['PutSecretValue', 'PutSecretValue']);
    expect(puts[0].token).toMatch(/^[0-9a-f-]{36}$/);
    expect(puts[1].token).toBe(puts[0].token);
    fake.secrets.set(ARN, '{"username":"lanyard","password":"p1"}');
  });

  it('draws each wait from [0, min(cap, base·2^retry))', () => {
    const policy = { maxAttempts: 9, baseDelayMs: 100, maxDelayMs: 2_000, sleep: async () => undefined };
    expect([0, 1, 2, 3, 4, 5].map((r) => fullJitterDelay({ ...policy, random: () => 0.999999 }, r))).toEqual([
      99, 199, 399, 799, 1599, 1999,
    ]);
    expect(fullJitterDelay({ ...policy, random: () => 0 }, 5)).toBe(0);
  });
});

describe('CachedSecret', () => {
  it('fetches once, shares a fetch in flight, re-fetches on refresh, and does not cache failures', async () => {
    let gets = 0;
    let value: string | undefined = 'a';
    let fail = false;
    const counting: SecretStore = {
      get: async () => {
        gets++;
        await new Promise((r) => setTimeout(r, 5));
        if (fail) throw new Error('unreachable');
        return value;
      },
      put: async () => undefined,
    };
    const secret = new CachedSecret(counting, 'x', (t) => t.toUpperCase());
    expect(await Promise.all([secret.get(), secret.get()])).toEqual(['A', 'A']);
    expect(await secret.get()).toBe('A');
    expect(gets).toBe(1);
    value = 'b';
    expect(await secret.refresh()).toBe('B');
    expect(await secret.get()).toBe('B');
    expect(gets).toBe(2);
    fail = true;
    await expect(secret.refresh()).rejects.toThrow('unreachable');
    expect(await secret.get()).toBe('B'); // the last good value stays
    fail = false;
    value = undefined;
    await expect(new CachedSecret(counting, 'y', (t) => t).get()).rejects.toThrow('secret y has no value');
  });
});

describe('the session key ring secret', () => {
  it('is seeded once by the migration function, rotated by the admin function, and read by the app', async () => {
    expect(await ensureKeyRingSecret(store, RING)).toBe('created');
    const first = parseKeyRingDocument(fake.secrets.get(RING)!);
    expect(await ensureKeyRingSecret(store, RING)).toBe('present');
    expect(parseKeyRingDocument(fake.secrets.get(RING)!).signing.id).toBe(first.signing.id);

    const { rotated, keyId } = await rotateKeyRingSecret(store, RING);
    expect(rotated).toBe(true);
    const ring = await secretKeyRingSource(store, RING).load();
    expect(ring.signing.id).toBe(keyId);
    expect(ring.verifying.map((k) => k.id)).toEqual([keyId, first.signing.id]);
  });
});

describe('the signing key secret', () => {
  it('is written once by the migration function, rotated by the admin function, read and cached by the API', async () => {
    const policy = { idTokenLifetimeSeconds: 120, cacheSeconds: 60 };
    expect(await ensureSigningKeySecret(store, SIGNING, policy)).toBe('created');
    const first = JSON.parse(fake.secrets.get(SIGNING)!).keys[0].kid;
    expect(await ensureSigningKeySecret(store, SIGNING, policy)).toBe('present');
    expect(JSON.parse(fake.secrets.get(SIGNING)!).keys.map((k: { kid: string }) => k.kid)).toEqual([first]);

    const source = secretSigningKeySource(store, SIGNING, policy);
    const reads = () => fake.calls.filter((c) => c.target === 'GetSecretValue' && c.secretId === SIGNING).length;
    const before = reads();
    expect((await source.load()).kid).toBe(first);
    expect((await source.load()).kid).toBe(first);
    expect(reads()).toBe(before + 1); // cached for cacheSeconds

    const { kid } = await rotateSigningKeySecret(store, SIGNING, policy);
    const fresh = await secretSigningKeySource(store, SIGNING, policy).load();
    expect(fresh.kid).toBe(kid);
    expect(fresh.jwks.map((k) => k.kid)).toEqual([kid, first]);
    // With no lifetime and no cache left, a retired key has signed nothing still valid: it drops out.
    const none = await secretSigningKeySource(store, SIGNING, { idTokenLifetimeSeconds: 0, cacheSeconds: 0 }).load();
    expect(none.jwks.map((k) => k.kid)).toEqual([kid]);
    // A rotation prunes retired keys past their retention from the stored document too.
    const last = await rotateSigningKeySecret(store, SIGNING, { idTokenLifetimeSeconds: 0, cacheSeconds: 0 });
    expect(JSON.parse(fake.secrets.get(SIGNING)!).keys.map((k: { kid: string }) => k.kid)).toEqual([last.kid]);
  });
});
