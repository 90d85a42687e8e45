// Logger options: JSON logs with request ids, and never a token, secret or password. The query
// string is parsed the way the server parses it (names percent-decoded, `+` as a space) and every
// parameter whose decoded name, or any bracketed part of it (`user[password]`), names a credential
// is masked; headers that carry credentials are redacted. Request bodies are never logged.
import type { FastifyServerOptions } from 'fastify';
import { randomUUID } from 'node:crypto';
import { requestMethod } from './head-requests';

/**
 * A decoded parameter name part that names a credential: passwords and OTPs, client secrets,
 * every token (private/access/refresh/id_token_hint/authenticity_token/device tokens), codes and
 * PKCE verifiers, CSRF fields. Generous on purpose: masking a harmless value costs nothing.
 */
const CREDENTIAL_PART = /pass|secret|token|otp|code|csrf|verifier|credential|^key$|api[_-]?key|session|signature/i;

/** Headers that carry credentials (lowercase, as Node gives them). */
export const CREDENTIAL_HEADERS = [
  'authorization',
  'proxy-authorization',
  'private-token',
  'job-token',
  'x-gitlab-token',
  'x-csrf-token',
  // RFC 9449: a proof is a credential for its jti window (with the token it was made for).
  'dpop',
  'cookie',
  'set-cookie',
];

const REDACTED = '[REDACTED]';

function decodeComponent(text: string): string {
  const plus = text.replace(/\+/g, ' ');
  try {
    return decodeURIComponent(plus);
  } catch {
    // A malformed escape: decode what can be decoded, so `passw%6Frd%zz` still reads "password".
    return plus.replace(/%([0-9a-f]{2})/gi, (_, h: string) => String.fromCharCode(Number.parseInt(h, 16)));
  }
}

/** Does this (raw or decoded) parameter name name a credential, in any position of `a[b][c]`? */
export function isCredentialName(name: string): boolean {
  const decoded = decodeComponent(name);
  return decoded.split(/[[\].]+/).some((part) => part !== '' && CREDENTIAL_PART.test(part));
}

/** The URL with every credential parameter's value masked (the path is kept as is). */
export function redactUrl(url: string): string {
  const q = url.indexOf('?');
  if (q < 0) return url;
  const hash = url.indexOf('#', q);
  const query = url.slice(q + 1, hash < 0 ? undefined : hash);
  const masked = query
    .split('&')
    .map((pair) => {
      const eq = pair.indexOf('=');
      const name = eq < 0 ? pair : pair.slice(0, eq);
      if (!isCredentialName(name)) return pair;
      return `${name}=${REDACTED}`;
    })
    .join('&');
  return `${url.slice(0, q + 1)}${masked}`;
}

/** A parsed parameter object (query, form or JSON body) with credential values masked, at any depth. */
export function redactParams(value: unknown, depth = 0): unknown {
  if (depth > 8 || value === null || typeof value !== 'object') return value;
  if (Array.isArray(value)) return value.map((v) => redactParams(v, depth + 1));
  const out: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(value as Record<string, unknown>)) {
    out[k] = isCredentialName(k) ? REDACTED : redactParams(v, depth + 1);
  }
  return out;
}

export function loggerOptions(level: string): FastifyServerOptions['logger'] {
  // Silent: no logger at all. A pino logger at level silent writes nothing either, but Fastify
  // still makes a child logger and response listeners for every request (about 5 µs of a hot
  // API request's CPU: docs/benchmarks.md).
  if (level === 'silent') return false;
  return {
    level,
    // Belt and braces: whatever else gets logged with a request or reply keeps these masked.
    redact: {
      paths: [
        ...CREDENTIAL_HEADERS.map((h) => `req.headers["${h}"]`),
        'res.headers["set-cookie"]',
        'req.body',
        'req.query',
      ],
      censor: REDACTED,
    },
    serializers: {
      req(req: { method: string; url: string; ip: string }) {
        return { method: requestMethod(req), url: redactUrl(String(req.url ?? '')), remoteAddress: req.ip };
      },
      res(res: { statusCode: number }) {
        return { statusCode: res.statusCode };
      },
    },
  };
}

export const genReqId = (): string => randomUUID();
