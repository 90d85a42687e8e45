// The route schemas' validation and serialization code, generated at build time
// (infra/build/bundle.ts) by Fastify's own compilers in standalone write mode, so the API bundle
// restores it (precompiled-schemas.ts) instead of carrying ajv. An entry point like
// openapi-document.ts: it builds the app, without touching a database.
import { StandaloneSerializer } from '@fastify/fast-json-stringify-compiler';
import { StandaloneValidator } from '@fastify/ajv-compiler';
import { deflateRawSync } from 'node:zlib';
import type { FastifyServerOptions } from 'fastify';
import { buildApp } from './app';
import { loadConfig } from './config';
import { createDb } from './db/create-db';
import { type SchemaSite, schemaKey } from './precompiled-schemas';

type Factory = (externalSchemas: unknown, opts: object) => (site: SchemaSite & { schema: unknown }) => unknown;

/**
 * A CommonJS module exporting { validators, serializers }, each keyed by schemaKey(). Each piece of
 * generated code is itself a CommonJS module text (ajv standalone / fast-json-stringify
 * standalone), carried deflated and evaluated in its own scope when Fastify asks for it at boot;
 * its requires (ajv's and fast-json-stringify's small runtime helpers) are listed literally, so
 * they are bundled.
 * The compilers are Fastify's defaults with their default options (the app sets no ajv or
 * serializer options), only switched to emit their code, so validation behaves identically.
 */
export async function generateSchemaModule(): Promise<string> {
  const validators = new Map<string, string>();
  const serializers = new Map<string, string>();
  const store = (into: Map<string, string>) => (site: SchemaSite, code: string) => {
    // With custom compilers Fastify no longer lower-cases a headers schema's names (unbundled it
    // does), so such a schema would validate differently in the bundle: refuse to build.
    if (site.httpPart === 'headers') throw new Error(`headers schema on ${site.method} ${site.url}: not precompiled`);
    const key = schemaKey(site);
    if (into.has(key) && into.get(key) !== code) throw new Error(`two different schemas for ${key}`);
    into.set(key, code);
  };
  const buildSerializer = StandaloneSerializer({ readMode: false, storeFunction: store(serializers) }) as Factory;
  const schemaController: FastifyServerOptions['schemaController'] = {
    compilersFactory: {
      buildValidator: StandaloneValidator({ readMode: false, storeFunction: store(validators) }) as never,
      // anyOf/oneOf in a response schema: fast-json-stringify's own ajv checks, inlined as code too.
      buildSerializer: ((externalSchemas: unknown, opts: object = {}) =>
        buildSerializer(externalSchemas, { ...opts, inlineValidators: true })) as never,
    },
  };
  const handle = createDb({ connectionString: 'postgres://build@127.0.0.1:1/none' });
  const app = await buildApp({
    db: handle.db,
    config: loadConfig({ LOG_LEVEL: 'silent', PUBLIC_URL: 'https://lanyard-public-url.invalid' }),
    logger: false,
    schemaController,
  });
  try {
    await app.ready(); // every route's schemas are compiled by now
  } finally {
    await app.close();
    await handle.destroy();
  }
  // Each distinct piece of code once (a GET and its HEAD, the many `:id` params share theirs).
  const pieces: string[] = [];
  const index = new Map<string, number>();
  const table = (codes: Map<string, string>) =>
    [...codes.entries()]
      .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))
      .map(([key, code]) => {
        let i = index.get(code);
        if (i === undefined) {
          i = pieces.push(code) - 1;
          index.set(code, i);
        }
        return `    [${JSON.stringify(key)}, ${i}],`;
      })
      .join('\n');
  const validatorTable = table(validators);
  const serializerTable = table(serializers);
  // The code's own requires (ajv's runtime helpers, fast-json-stringify's Serializer), named
  // literally here so the bundler includes them.
  const requires = [
    ...new Set(pieces.flatMap((c) => [...c.matchAll(/require\((['"])([^'"]+)\1\)/g)].map((m) => m[2]))),
  ].sort();
  // Carried deflated (~490 KB of generated code is a few dozen KB this way) and evaluated once,
  // at boot, as ajv itself would have after compiling: still no compiler in the bundle.
  const deflated = deflateRawSync(JSON.stringify(pieces), { level: 9 }).toString('base64');
  return `'use strict';
const modules = {
${requires.map((r) => `  ${JSON.stringify(r)}: () => require(${JSON.stringify(r)}),`).join('\n')}
};
const load = (name) => {
  if (!modules[name]) throw new Error('build-time schema code requires ' + name + ', which the bundle lacks');
  return modules[name]();
};
const pieces = JSON.parse(require('node:zlib').inflateRawSync(Buffer.from(${JSON.stringify(deflated)}, 'base64')).toString('utf8'));
const code = [];
const piece = (i) => {
  if (!code[i]) {
    const module = { exports: {} };
    new Function('module', 'exports', 'require', pieces[i])(module, module.exports, load);
    code[i] = module.exports;
  }
  return code[i];
};
const table = (entries) => {
  const out = {};
  for (const [key, i] of entries) Object.defineProperty(out, key, { enumerable: true, get: () => piece(i) });
  return out;
};
exports.precompiledSchemas = {
  validators: table([
${validatorTable}
  ]),
  serializers: table([
${serializerTable}
  ]),
};
`;
}
