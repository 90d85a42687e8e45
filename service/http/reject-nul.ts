// PostgreSQL text cannot hold a NUL byte, so a NUL in any input would surface as a database error
// (a 500) wherever it reaches a query. No legitimate parameter contains one: refuse it at the edge
// with a 400 in the surface's own format (the root error handler's client-error branch).
import type { FastifyInstance, FastifyRequest } from 'fastify';

/** The name of the first parameter holding a NUL (form-style: user[login]), or undefined. */
function findNul(value: unknown, name: string, depth = 0): string | undefined {
  if (typeof value === 'string') return value.includes('\u0000') ? name : undefined;
  if (depth > 8 || value === null || typeof value !== 'object') return undefined;
  if (Array.isArray(value)) {
    for (const item of value) {
      const hit = findNul(item, name, depth + 1);
      if (hit !== undefined) return hit;
    }
    return undefined;
  }
  for (const [key, item] of Object.entries(value as Record<string, unknown>)) {
    const child = name ? `${name}[${key}]` : key;
    if (key.includes('\u0000')) return child;
    const hit = findNul(item, child, depth + 1);
    if (hit !== undefined) return hit;
  }
  return undefined;
}

export class NulInInputError extends Error {
  readonly statusCode = 400;
  constructor(readonly param: string) {
    super(`${param} is invalid`);
  }
}

export function rejectNulBytes(app: FastifyInstance): void {
  // A callback hook, not an async one: it runs on every request and awaits nothing.
  app.addHook('preValidation', (request: FastifyRequest, _reply, done) => {
    // /api/v4 path ids are resolved by the API itself (a NUL there is "not found", as in GitLab).
    const checkParams = !request.url.startsWith('/api/v4/');
    const param =
      findNul(request.query, '') ??
      findNul(request.body, '') ??
      (checkParams ? findNul(request.params, '') : undefined);
    done(param === undefined ? undefined : new NulInInputError(param));
  });
}
