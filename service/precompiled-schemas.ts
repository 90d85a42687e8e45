// The route schema compilers of the API bundle: validators and serializers generated at build
// time (infra/build/bundle.ts, from service/schema-code.ts) and restored here, so the Lambda
// carries the generated code instead of the ajv compiler. Unbundled runs compile at runtime.
import type { FastifyServerOptions } from 'fastify';

/** What the generated module exports: each route part's compiled function, by schemaKey(). */
export interface PrecompiledSchemas {
  validators: Record<string, unknown>;
  serializers: Record<string, unknown>;
}

/** The options Fastify passes a validator or serializer compiler, as far as they name a route part. */
export interface SchemaSite {
  method: string;
  url: string;
  httpPart?: string;
  httpStatus?: string;
  contentType?: string;
}

/** One key per route part (a body, querystring… or one status's response, per content type). */
export function schemaKey(site: SchemaSite): string {
  return JSON.stringify([site.method, site.url, site.httpPart ?? site.httpStatus ?? null, site.contentType ?? null]);
}

type SchemaController = NonNullable<FastifyServerOptions['schemaController']>;

/**
 * Fastify's schema controller over pre-generated code (StandaloneValidator's read mode, without
 * loading @fastify/ajv-compiler or fast-json-stringify, which would pull ajv back in). A route
 * part that was not generated fails the boot loudly, never validating nothing.
 */
export function restoredSchemaController(compiled: PrecompiledSchemas): SchemaController {
  const restore = (kind: keyof PrecompiledSchemas) => () => (site: SchemaSite) => {
    const table = compiled[kind];
    // `in`, not a read: the generated module compiles each function on first read (new Function).
    const key = schemaKey(site);
    if (!(key in table)) {
      throw new Error(`no build-time ${kind.slice(0, -1)} for ${schemaKey(site)}: rebuild the bundle`);
    }
    return lazily(table, key);
  };
  return {
    compilersFactory: {
      buildValidator: restore('validators') as never,
      buildSerializer: restore('serializers') as never,
    },
  };
}

type Compiled = ((...args: unknown[]) => unknown) & { errors?: unknown };

/**
 * The function at `table[key]`, compiled on its route's first request rather than at boot: Fastify
 * asks for every route's compilers while it starts, and compiling the ~200 of them then cost the
 * cold start ~12 ms for routes a given instance may never serve. A validator's `errors` (which
 * Fastify reads after a failed call, as ajv sets them) is passed through.
 */
function lazily(table: Record<string, unknown>, key: string): Compiled {
  let fn: Compiled | undefined;
  const call: Compiled = function (this: unknown, ...args: unknown[]) {
    fn ??= table[key] as Compiled;
    const result = fn.apply(this, args);
    call.errors = fn.errors;
    return result;
  };
  return call;
}
