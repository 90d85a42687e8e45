// Body schemas for the server-rendered forms (sign-in, sign-out, consent, /profile/applications):
// an allow-list of the flat form keys each route reads (`user[login]`, `authenticity_token`).
//
// Fastify's Ajv drops undeclared keys (removeAdditional) and coerces scalars to strings, so a
// handler only ever sees declared fields. A body that does not fit (a repeated field, a JSON
// array) is not answered with Fastify's 400 JSON: these routes answer in HTML, and their own
// rules already cover it (a non-string value reads as absent, so a repeated CSRF token is the
// same 422 page as a missing one). The body's validation error is therefore attached and left to
// the handler; a params error still goes to the root error handler as before.
import type { FastifyRequest, RouteShorthandOptions } from 'fastify';
import { CSRF_FIELD } from './session';

const STRING = { type: 'string' } as const;
/** A checkbox group (`name[]`): one value arrives as a string, which Ajv wraps in an array. */
const STRINGS = { type: 'array', items: STRING } as const;

export interface FormFields {
  /** Single-valued fields, besides the CSRF token every form carries. */
  strings: readonly string[];
  /** Multi-valued fields (checkbox groups). */
  arrays?: readonly string[];
}

export function formBodySchema({ strings, arrays = [] }: FormFields) {
  return {
    type: 'object',
    properties: Object.fromEntries([
      [CSRF_FIELD, STRING],
      ...strings.map((name) => [name, STRING]),
      ...arrays.map((name) => [name, STRINGS]),
    ]),
    additionalProperties: false,
  } as const;
}

async function rethrowUnlessBody(request: FastifyRequest): Promise<void> {
  const err = request.validationError;
  if (err && err.validationContext !== 'body') throw err;
}

/**
 * Route options for a form post: the body schema (plus any other schema parts), the body's
 * validation error attached rather than answered (see above).
 */
export function formRouteOptions(
  fields: FormFields,
  schema: Omit<NonNullable<RouteShorthandOptions['schema']>, 'body'> = {},
): RouteShorthandOptions {
  return {
    schema: { ...schema, body: formBodySchema(fields) },
    attachValidation: true,
    preHandler: rethrowUnlessBody,
  };
}
