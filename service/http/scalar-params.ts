// GitLab (Grape) refuses an array where a route declares a scalar: `level[]=custom`, a repeated
// `level=a&level=b` or a JSON `{"level":["custom"]}` is a 400 `{"error":"level is invalid"}` and
// changes nothing. Fastify would instead ignore the `level[]` key, and its Ajv would unwrap a
// one-element array (coerceTypes: 'array'); this hook runs before validation to stop both.
import type { FastifyRequest, preValidationHookHandler } from 'fastify';
import { ApiError } from './errors';

type Schema = { properties?: Record<string, { type?: string; items?: unknown }> } | undefined;

const namesBySchema = new WeakMap<object, Set<string>>();
const NONE = new Set<string>();

/** The scalar parameters a route declares in its querystring and body schemas (once per route). */
function scalarNames(request: FastifyRequest): Set<string> {
  const schema = request.routeOptions.schema as { querystring?: Schema; body?: Schema } | undefined;
  if (!schema) return NONE;
  let names = namesBySchema.get(schema);
  if (names) return names;
  names = new Set<string>();
  namesBySchema.set(schema, names);
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

// A callback hook, not an async one: it runs on every authenticated request and awaits nothing.
export const rejectArraysForScalars: preValidationHookHandler = (request, _reply, done) => {
  const scalars = scalarNames(request);
  try {
    if (scalars.size > 0) {
      check(request.query, scalars);
      check(request.body, scalars);
    }
  } catch (err) {
    done(err as Error);
    return;
  }
  done();
};
