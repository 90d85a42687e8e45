// The /api/v4 OpenAPI document, generated at build time (infra/build/bundle.ts) by the real
// @fastify/swagger from the real route schemas, so the API bundle carries the document instead of
// the generator. An entry point like server.ts: it builds the app, without touching a database.
import { buildApp } from './app';
import { loadConfig } from './config';
import { createDb } from './db/create-db';

/** Stands for the public URL in the build-time document; the function puts its own in. */
export const OPENAPI_URL_PLACEHOLDER = 'https://lanyard-public-url.invalid';

/**
 * The /api/v4 OpenAPI document, generated at build time by the real @fastify/swagger from the
 * real route schemas (still the one source of truth), so the API bundle carries the document
 * instead of the generator: @fastify/swagger and json-schema-resolver are ~50 KB of the 1 MB
 * budget. The app is built without touching a database (nothing queries during boot).
 */
export async function generateOpenApiDocument(): Promise<string> {
  const handle = createDb({ connectionString: 'postgres://build@127.0.0.1:1/none' });
  const app = await buildApp({
    db: handle.db,
    config: loadConfig({ LOG_LEVEL: 'silent', PUBLIC_URL: OPENAPI_URL_PLACEHOLDER }),
    logger: false,
  });
  try {
    // Through the route that serves it: the decoration lives in the /api/v4 plugin's scope.
    const res = await app.inject({ url: '/api/v4/openapi.json' });
    if (res.statusCode !== 200) throw new Error(`OpenAPI document: ${res.statusCode} ${res.body.slice(0, 200)}`);
    return JSON.stringify(res.json());
  } finally {
    await app.close();
    await handle.destroy();
  }
}
