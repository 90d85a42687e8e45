// GitLab (Grape) refuses an array where a route declares a scalar: `level[]=custom`, a repeated
// `level=a&level=b` or a JSON `{"level":["custom"]}` is a 400 `{"error":"level is invalid"}` and
// changes nothing. Fastify would instead ignore the `level[]` key, and its Ajv would unwrap a
// one-element array (coerceTypes: 'array'); this hook runs before validation to stop both.
import type { onRouteHookHandler, preValidationHookHandler } from 'fastify';
import { ApiError } from './errors';

type Schema = { properties?: Record<string, { type?: string; items?: unknown }> } | undefined;

/** The scalar parameters a route declares in its querystring and body schemas. */
function scalarNames(schema: { querystring?: Schema; body?: Schema } | undefined): Set<string> {
  const names = new Set<string>();
  for (const part of [schema?.querystring, schema?.body]) {
    for (const [name, prop] of Object.entries(part?.properties ?? {})) {
      if (prop.type !== 'array' && prop.type !== 'object') names.add(name);
    }
  }
  return names;
}

function check(values: unknown, scalars: Set<string>): void {
  if (!values || typeof values !== 'object' || Array.isArray(values)) return;
  for (const [key, value] of Object.entries(values as Record<string, unknown>)) {
    const bracket = key.indexOf('[');
    const name = bracket > 0 ? key.slice(0, bracket) : key;
    if (!scalars.has(name)) continue;
    if (bracket > 0 || Array.isArray(value) || (value !== null && typeof value === 'object')) {
      throw new ApiError(400, { error: `${name} is invalid` });
    }
  }
}

/**
 * An onRoute hook: each route that declares scalar parameters gets a preValidation hook checking
 * them (a callback hook: it awaits nothing); a route that declares none gets no hook at all.
 */
export const rejectArraysForScalars: onRouteHookHandler = (route) => {
  const scalars = scalarNames(route.schema as { querystring?: Schema; body?: Schema } | undefined);
  if (scalars.size === 0) return;
  const hook: preValidationHookHandler = (request, _reply, done) => {
    try {
      check(request.query, scalars);
      check(request.body, scalars);
    } catch (err) {
      done(err as Error);
      return;
    }
    done();
  };
  route.preValidation = [...(route.preValidation ? [route.preValidation].flat() : []), hook];
};
