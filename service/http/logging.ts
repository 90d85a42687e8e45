// Logger options: JSON logs with request ids, and never a token, secret or password — headers
// that carry credentials are redacted, and credential-bearing query parameters are masked.
import type { FastifyServerOptions } from 'fastify';
import { randomUUID } from 'node:crypto';

const SECRET_QUERY =
  /([?&](?:private_token|access_token|refresh_token|code|client_secret|password|token|code_verifier)=)[^&#]*/gi;

export const redactUrl = (url: string): string => url.replace(SECRET_QUERY, '$1[REDACTED]');

export function loggerOptions(level: string): FastifyServerOptions['logger'] {
  return {
    level,
    redact: {
      paths: [
        'req.headers.authorization',
        'req.headers["private-token"]',
        'req.headers.cookie',
        'res.headers["set-cookie"]',
      ],
      censor: '[REDACTED]',
    },
    serializers: {
      req(req: { method: string; url: string; ip: string }) {
        return { method: req.method, url: redactUrl(req.url), remoteAddress: req.ip };
      },
      res(res: { statusCode: number }) {
        return { statusCode: res.statusCode };
      },
    },
  };
}

export const genReqId = (): string => randomUUID();
