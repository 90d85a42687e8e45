// Request parameter readers, shared by oauth/ and the routes (neutral: neither oauth/ nor http/ owns them).
// Parameters from the query string and a form or JSON body, merged (body wins), as GitLab and
// Doorkeeper read them. Values are strings except where a JSON body sends other types.
import type { FastifyRequest } from 'fastify';

export function mergedParams(request: FastifyRequest): Record<string, unknown> {
  const query = (request.query ?? {}) as Record<string, unknown>;
  const body =
    request.body && typeof request.body === 'object' && !Array.isArray(request.body)
      ? (request.body as Record<string, unknown>)
      : {};
  return { ...query, ...body };
}

/** A parameter as a single string: arrays (repeated parameters) are refused as undefined. */
export function stringParam(params: Record<string, unknown>, name: string): string | undefined {
  const v = params[name];
  if (typeof v === 'string') return v;
  if (typeof v === 'number' || typeof v === 'boolean') return String(v);
  return undefined;
}
