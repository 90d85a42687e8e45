// The route schemas' validation and serialization code, generated at build time
// (infra/build/bundle.ts) by Fastify's own compilers in standalone write mode, so the API bundle
// restores it (precompiled-schemas.ts) instead of carrying ajv. An entry point like
// openapi-document.ts: it builds the app, without touching a database.
import { StandaloneSerializer } from '@fastify/fast-json-stringify-compiler';
import { StandaloneValidator } from '@fastify/ajv-compiler';
import type { FastifyServerOptions } from 'fastify';
import { buildApp } from './app';
import { loadConfig } from './config';
import { createDb } from './db/create-db';
import { type SchemaSite, schemaKey } from './precompiled-schemas';

type Factory = (externalSchemas: unknown, opts: object) => (site: SchemaSite & { schema: unknown }) => unknown;

/** The directory beside index.js that carries the generated code, one file per piece. */
export const LAZY_SCHEMAS_DIR = 'schemas';

/**
 * CommonJS module texts. `module` exports { validators, serializers }, each keyed by schemaKey():
 * it goes into index.js, and holds only which piece of code serves each route part. Each of
 * `pieces` (LAZY_SCHEMAS_DIR/<index>.js beside index.js) is one validator or serializer (ajv
 * standalone / fast-json-stringify standalone code), required and evaluated on the first request
 * of a route it serves, so a cold start reads only the code its first request runs. Their
 * requires (ajv's and fast-json-stringify's small runtime helpers) come from `runtime`
 * (LAZY_SCHEMAS_DIR/runtime.js), which lists them literally so that its build bundles them.
 * The compilers are Fastify's defaults with their default options (the app sets no ajv or
 * serializer options), only switched to emit their code, so validation behaves identically.
 */
export async function generateSchemaModule(): Promise<{ module: string; runtime: string; pieces: string[] }> {
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
  // Each distinct piece of code once (the many `:id` params share theirs).
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
  // literally in runtime.js so that its own build bundles them; the pieces get them from it.
  const requires = [
    ...new Set(pieces.flatMap((c) => [...c.matchAll(/require\((['"])([^'"]+)\1\)/g)].map((m) => m[2]))),
  ].sort();
  const runtime = `'use strict';
const modules = {
${requires.map((r) => `  ${JSON.stringify(r)}: () => require(${JSON.stringify(r)}),`).join('\n')}
};
exports.load = (name) => {
  if (!modules[name]) throw new Error('build-time schema code requires ' + name + ', which the bundle lacks');
  return modules[name]();
};
`;
  // In index.js only the table of route parts (Fastify checks at boot that each has its code);
  // each piece of code is a file of its own, required on its route's first request.
  const module = `'use strict';
let runtime;
const load = (name) => (runtime ??= require('./${LAZY_SCHEMAS_DIR}/runtime.js')).load(name);
const dir = __dirname + '/${LAZY_SCHEMAS_DIR}/';
const code = [];
const piece = (i) => {
  if (!code[i]) {
    const module = { exports: {} };
    require(dir + i + '.js')(module, module.exports, load);
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
  return {
    module,
    runtime,
    pieces: pieces.map((c) => `module.exports = function (module, exports, require) {\n${c}\n};\n`),
  };
}
