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
    const fn = compiled[kind][schemaKey(site)];
    if (typeof fn !== 'function') {
      throw new Error(`no build-time ${kind.slice(0, -1)} for ${schemaKey(site)}: rebuild the bundle`);
    }
    return fn;
  };
  return {
    compilersFactory: {
      buildValidator: restore('validators') as never,
      buildSerializer: restore('serializers') as never,
    },
  };
}
