// Pure pieces: PKCE (RFC 7636 Appendix B vector, through the transforms the code exchange
// compares), Basic decoding (RFC 6749 §2.3.1), scope resolution, HTML escaping, redirect building.
import { describe, expect, it } from 'vitest';
import type { FastifyRequest } from 'fastify';
import { readClientCredentials } from '../../service/oauth/client-auth';
import { InvalidClient, InvalidRequest, InvalidScope } from '../../service/oauth/errors';
import { parseCodeChallenge, verifierCandidates } from '../../service/oauth/pkce';
import { resolveScopes } from '../../service/oauth/scope';
import { redirectWith } from '../../service/oauth/authorize-request';

describe('PKCE (RFC 7636)', () => {
  it('the transforms the code exchange compares: the Appendix B example', () => {
    const verifier = 'dBjftJeZ4CVP-mB92K27uhbUJU1p1r_wW1gFWFOEjXk';
    expect(verifierCandidates(verifier)).toEqual({
      given: true,
      s256: 'E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM',
      plain: verifier,
    });
  });

  it('any alphabet and length, as Doorkeeper: standard base64 (git-credential-oauth), short, non-ASCII', () => {
    // 32 bytes in standard base64, padded: what git-credential-oauth 0.4.2 sends.
    const b64 = 'q83vASNFZ4mrze8BI0VniavN7wEjRWeJq83vASNFZ4k=';
    expect(verifierCandidates(b64).s256).toBe('KXbFF0e9QUfpL4W8NVqEk6h2hNA_RYQPbq1ybxO1tsk');
    expect(verifierCandidates('short')).toEqual({
      given: true,
      s256: '-bAHi131ltLqGQEMABu9AJ5lHeLFfo-341XzHrnT9zk',
      plain: 'short',
    });
    expect(verifierCandidates('é').s256).toBe('SplVfkAzw1Od4utlRyAXytX5VX96BiWgnxw_biumnEw');
  });

  it('an empty or missing verifier is none (a code bound to a challenge then refuses it)', () => {
    expect(verifierCandidates(undefined)).toEqual({ given: false, s256: null, plain: null });
    expect(verifierCandidates('')).toEqual({ given: false, s256: null, plain: null });
  });

  it('parses the authorize parameters: a method is required with a challenge', () => {
    const ch = 'E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM';
    expect(parseCodeChallenge(undefined, undefined)).toBeUndefined();
    expect(parseCodeChallenge(ch, 'S256')).toEqual({ codeChallenge: ch, codeChallengeMethod: 'S256' });
    // A plain challenge is the verifier itself, so standard base64 is accepted there too.
    const b64 = 'q83vASNFZ4mrze8BI0VniavN7wEjRWeJq83vASNFZ4k=';
    expect(parseCodeChallenge(b64, 'plain')).toEqual({ codeChallenge: b64, codeChallengeMethod: 'plain' });
    for (const [c, m] of [
      [ch, undefined],
      [ch, 's256'],
      [undefined, 'S256'],
      ['a b'.repeat(20), 'plain'],
      ['x'.repeat(42), 'plain'],
      ['x'.repeat(129), 'plain'],
    ]) {
      expect(() => parseCodeChallenge(c, m)).toThrow(InvalidRequest);
    }
  });
});

describe('client credentials (RFC 6749 §2.3.1)', () => {
  const req = (authorization?: string) =>
    ({ headers: authorization ? { authorization } : {} }) as unknown as FastifyRequest;
  const b64 = (s: string) => Buffer.from(s, 'utf8').toString('base64');

  it('form-decodes Basic credentials after splitting at the first colon', () => {
    expect(readClientCredentials(req(`Basic ${b64('my+client:s%3Acr%C3%A9t+x')}`), {})).toEqual({
      clientId: 'my client',
      clientSecret: 's:crét x',
      method: 'client_secret_basic',
      basic: true,
    });
    expect(readClientCredentials(req(`basic ${b64('id:a:b')}`), {})).toMatchObject({
      clientId: 'id',
      clientSecret: 'a:b',
    });
    expect(readClientCredentials(req(`Basic ${b64('id:')}`), {})).toEqual({
      clientId: 'id',
      method: 'none',
      basic: true,
    });
  });

  it('Basic wins over body credentials; body credentials otherwise; none at all → undefined', () => {
    expect(readClientCredentials(req(`Basic ${b64('a:b')}`), { client_id: 'c', client_secret: 'd' })).toMatchObject({
      clientId: 'a',
      clientSecret: 'b',
    });
    expect(readClientCredentials(req(), { client_id: 'c', client_secret: 'd' })).toEqual({
      clientId: 'c',
      clientSecret: 'd',
      method: 'client_secret_post',
      basic: false,
    });
    expect(readClientCredentials(req(), { client_id: 'c' })).toEqual({ clientId: 'c', method: 'none', basic: false });
    expect(readClientCredentials(req(), {})).toBeUndefined();
    expect(readClientCredentials(req('Bearer abc'), {})).toBeUndefined();
  });

  it('malformed Basic → invalid_client with the Basic challenge', () => {
    for (const h of [
      'Basic !!!',
      `Basic ${b64('no-colon')}`,
      `Basic ${b64(':secret')}`,
      `Basic ${b64('id:%E0%A4%A')}`,
      // PostgreSQL text cannot hold a NUL: refused here, not as a database error (was a 500).
      `Basic ${b64('id:a\u0000b')}`,
      `Basic ${b64('id%00:secret')}`,
    ]) {
      let err: unknown;
      try {
        readClientCredentials(req(h), {});
      } catch (e) {
        err = e;
      }
      expect(err).toBeInstanceOf(InvalidClient);
      expect((err as InvalidClient).headers).toEqual({ 'WWW-Authenticate': 'Basic realm="Doorkeeper"' });
    }
  });
});

describe('scopes (RFC 6749 §3.3)', () => {
  it('omitted or empty = everything allowed; a request may only narrow; canonical order', () => {
    expect(resolveScopes(undefined, ['read_user', 'api'])).toEqual(['api', 'read_user']);
    expect(resolveScopes('  ', ['api'])).toEqual(['api']);
    expect(resolveScopes('read_user api read_user', ['api', 'read_user'])).toEqual(['api', 'read_user']);
    expect(() => resolveScopes('read_api', ['api'])).toThrow(InvalidScope);
    expect(() => resolveScopes('sudo', ['api'])).toThrow(InvalidScope);
  });
});

describe('redirects (RFC 6749 §4.1.2)', () => {
  it('adds parameters to the registered query, custom schemes included', () => {
    expect(redirectWith('https://a.example/cb?x=1', { code: 'c', state: 'a b&c' })).toBe(
      'https://a.example/cb?x=1&code=c&state=a+b%26c',
    );
    expect(redirectWith('com.example.app:/oauth', { code: 'c', state: undefined })).toBe(
      'com.example.app:/oauth?code=c',
    );
  });
});
