// Route options for every server-rendered form (sign-in, sign-out, consent, device, the account
// pages): the one Origin rule of form posts (crossOrigin, below), and a body schema that is an
// allow-list of the flat form keys each route reads (`user[login]`, `authenticity_token`).
//
// Fastify's Ajv drops undeclared keys (removeAdditional) and coerces scalars to strings, so a
// handler only ever sees declared fields. A declared single-valued field sent more than once is
// refused with a 400 HTML page (scalars only where the form says scalar: issue 11), never
// Fastify's 400 JSON. Any other misfit (an empty body, a JSON array) is left to the handler, whose
// own rules cover it (a missing CSRF token is its 422 page). The consent form opts out of the
// 400 page: a repeated authorization parameter is an OAuth error sent back to the client.
import type { FastifyReply, FastifyRequest, RouteShorthandOptions } from 'fastify';
import { backToReferer, sendErrorPage } from '../pages/error-page';
import { ownOrigins } from './origin';
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

/**
 * The one Origin rule of form posts, defence in depth behind SameSite=Lax and the CSRF token
 * (every form route gets it through formRouteOptions): a post that names its origin (Origin, else
 * Referer) must come from this site, the public URL's origin or the one the browser used (Host).
 * `Origin: null` is refused (OWASP's advice): browsers send it from sandboxed frames, data: and
 * file: documents and after cross-origin redirects, never for our own forms, whose pages send
 * `Referrer-Policy: same-origin` (the Fetch standard sends null only under `no-referrer`). No
 * header at all is allowed: some clients and privacy settings send neither, and the token decides.
 */
export function crossOrigin(request: FastifyRequest): boolean {
  let origin = request.headers.origin;
  if (origin === undefined) {
    const referer = request.headers.referer;
    if (!referer) return false;
    try {
      origin = new URL(referer).origin;
    } catch {
      return true;
    }
  }
  return !ownOrigins(request).includes(origin);
}

function rethrowUnlessBody(rejectRepeated: boolean) {
  return async (request: FastifyRequest, reply: FastifyReply): Promise<void> => {
    if (crossOrigin(request)) {
      await sendErrorPage(reply, {
        status: 403,
        title: 'Forbidden',
        message: 'This form was sent from another site. Nothing was changed: use the form on this site’s own page.',
      });
      return;
    }
    const err = request.validationError as (Error & { validationContext?: string; validation?: unknown[] }) | undefined;
    if (!err) return;
    if (err.validationContext !== 'body') throw err;
    const fieldErrors = (err.validation ?? []) as Array<{ instancePath: string; keyword: string }>;
    if (rejectRepeated && fieldErrors.some((e) => e.instancePath !== '' && e.keyword === 'type')) {
      await sendErrorPage(reply, {
        status: 400,
        title: 'Bad request',
        message: 'A field of this form was sent more than once. Nothing was changed: reload the page and try again.',
        back: backToReferer(request),
      });
    }
  };
}

/**
 * Route options for a form post: the body schema (plus any other schema parts), the body's
 * validation error attached rather than answered (see above).
 */
export function formRouteOptions(
  fields: FormFields,
  schema: Omit<NonNullable<RouteShorthandOptions['schema']>, 'body'> = {},
  { rejectRepeated = true }: { rejectRepeated?: boolean } = {},
): RouteShorthandOptions {
  return {
    schema: { ...schema, body: formBodySchema(fields) },
    attachValidation: true,
    preHandler: rethrowUnlessBody(rejectRepeated),
  };
}
