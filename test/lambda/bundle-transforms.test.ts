// Three of the API bundle's build-time changes, on their own: pg's SCRAM helpers over node:crypto
// (the same bytes as pg's Web Crypto ones), the module wrappers V8 compiles once instead of twice
// (the same behaviour as esbuild's arrows), and Fastify's route set-up queued once for a run of
// routes (the same contexts as stock Fastify's). The built bundle itself is tested in bundle.test.ts.
import { createHash } from 'node:crypto';
import { createRequire } from 'node:module';
import path from 'node:path';
import vm from 'node:vm';
import * as esbuild from 'esbuild';
import { describe, expect, it } from 'vitest';
import { fastifyRoutePreReadyPlugin, PG_NODE_CRYPTO } from '../../infra/build/bundle';
import { eagerModuleWrappers } from '../../infra/build/eager-wrappers';

const nodeRequire = createRequire(__filename);

/** A CommonJS module's exports from its source text, with Node's require. */
function evaluate(source: string): Record<string, (...args: any[]) => any> {
  const module = { exports: {} as Record<string, (...args: any[]) => any> };
  vm.runInThisContext(`(function (module, exports, require) {${source}\n})`)(module, module.exports, nodeRequire);
  return module.exports;
}

describe("the API bundle's pg crypto helpers (pg/lib/crypto/utils.js over node:crypto)", () => {
  const ours = evaluate(PG_NODE_CRYPTO);
  const pgs = nodeRequire('pg/lib/crypto/utils.js');
  const bytes = (b: ArrayBuffer | Uint8Array) => Buffer.from(b as Uint8Array).toString('hex');

  it("derive the same SCRAM keys and signatures as pg's own", async () => {
    const salt = Buffer.from('W22ZaJ0SNY7soEsUEjb6gQ==', 'base64');
    for (const password of ['pencil', 'p\u00e4ssw\u00f6rd \u2603']) {
      const key = await ours.deriveKey(password, salt, 4096);
      expect(bytes(key)).toBe(bytes(await pgs.deriveKey(password, salt, 4096)));
      expect(key.length).toBe(32);
      for (const message of ['Client Key', 'n=*,r=abc,r=abcdef,s=W22ZaJ0SNY7soEsUEjb6gQ==,i=4096,c=biws,r=abcdef']) {
        expect(bytes(await ours.hmacSha256(key, message))).toBe(bytes(await pgs.hmacSha256(key, message)));
      }
      expect(bytes(await ours.sha256(key))).toBe(bytes(await pgs.sha256(key)));
    }
  });

  it('hash a certificate by the names channel binding uses, and MD5 passwords as pg does', async () => {
    const data = Buffer.from('a certificate, DER-encoded');
    for (const name of ['SHA-256', 'SHA-384', 'SHA-512']) {
      expect(bytes(await ours.hashByName(name, data))).toBe(bytes(await pgs.hashByName(name, data)));
    }
    // (Web Crypto knows no SHA-224, so pg's own fail there; RFC 5929 asks for the certificate's hash.)
    expect(bytes(await ours.hashByName('SHA-224', data))).toBe(createHash('sha224').update(data).digest('hex'));
    const salt = Buffer.from([1, 2, 3, 4]);
    expect(await ours.postgresMd5PasswordHash('alice', 'secret', salt)).toBe(
      await pgs.postgresMd5PasswordHash('alice', 'secret', salt),
    );
    expect(ours.randomBytes(18).length).toBe(18);
    expect(ours.randomBytes(18).equals(ours.randomBytes(18))).toBe(false);
  });

  it('reports a failed derivation as a rejection', async () => {
    await expect(ours.deriveKey('pencil', Buffer.from('salt'), -1)).rejects.toThrow();
  });
});

describe('eagerModuleWrappers', () => {
  /** A minified CommonJS bundle of these CommonJS modules, as the Lambda build writes one. */
  async function bundle(files: Record<string, string>): Promise<string> {
    const result = await esbuild.build({
      stdin: { contents: files['entry.js'], loader: 'js', resolveDir: '/' },
      bundle: true,
      write: false,
      format: 'cjs',
      platform: 'node',
      minify: true,
      plugins: [
        {
          name: 'virtual',
          setup(build) {
            build.onResolve({ filter: /^\.\// }, (args) => ({ path: args.path.slice(2), namespace: 'virtual' }));
            build.onLoad({ filter: /.*/, namespace: 'virtual' }, (args) => ({
              contents: files[args.path],
              loader: 'js',
            }));
          },
        },
      ],
    });
    return result.outputFiles[0].text;
  }

  const run = (code: string) => {
    const module = { exports: {} as Record<string, unknown> };
    vm.runInThisContext(`(function (module, exports, require) {${code}\n})`).call(
      module.exports,
      module,
      module.exports,
      nodeRequire,
    );
    return module.exports;
  };

  it('writes each module wrapper as (function …), and the bundle behaves as before', async () => {
    const code = await bundle({
      'entry.js': `const a = require('./a.js'); const b = require('./b.js');
        module.exports = { sum: a.add(2, 3), label: b.label, lazy: () => require('./c.js').late };`,
      'a.js': 'exports.add = (x, y) => x + y; const inner = () => arguments.length; exports.n = inner();',
      // Braces in a string, a template literal and a regular expression (the rewrite must parse them).
      'b.js': `const s = "}) => { not a wrapper" + \`\${"}"}\` + String(/re}/); module.exports = { label: s.length + ":" + typeof module };`,
      'c.js': 'exports.late = 42;',
    });
    const result = eagerModuleWrappers(code);
    // a.js reads the wrapper's `arguments` (through an arrow), so it stays an arrow.
    expect(result).toMatchObject({ rewritten: 2, kept: 1 });
    expect(result.code.match(/\(\(function\(/g)).toHaveLength(2);
    const before = run(code) as { sum: number; label: string; lazy: () => number };
    const after = run(result.code) as typeof before;
    expect(after.sum).toBe(5);
    expect(after.label).toBe(before.label);
    expect(after.lazy()).toBe(42);
    // Idempotent: nothing is left to rewrite.
    expect(eagerModuleWrappers(result.code)).toMatchObject({ rewritten: 0, kept: 1 });
  });

  it("keeps the wrapper of a module that reads `this` at its top level (CommonJS's exports)", async () => {
    const code = await bundle({
      'entry.js': "module.exports = require('./t.js');",
      't.js': 'this.viaThis = true; exports.plain = 1;',
    });
    const result = eagerModuleWrappers(code);
    expect(run(result.code)).toEqual(run(code));
    expect(result.rewritten + result.kept).toBe(1);
  });

  it('leaves code without esbuild wrappers as it is', () => {
    const code = 'var x=(a,b)=>{return a+b};module.exports=x(1,2);';
    expect(eagerModuleWrappers(code)).toEqual({ code, rewritten: 0, kept: 0 });
  });
});

describe("Fastify's route set-up in the bundle (one avvio `after` for a run of routes)", () => {
  type Fastify = typeof import('fastify').default;
  type Fp = typeof import('fastify-plugin').default;

  /** Fastify and fastify-plugin bundled with the API function's route.js changes. */
  async function bundledFastify(): Promise<{ fastify: Fastify; fp: Fp }> {
    const result = await esbuild.build({
      stdin: {
        contents: "module.exports = { fastify: require('fastify'), fp: require('fastify-plugin') };",
        loader: 'js',
        resolveDir: path.resolve(__dirname, '..', '..'),
      },
      bundle: true,
      write: false,
      format: 'cjs',
      platform: 'node',
      target: 'node20',
      logLevel: 'silent',
      plugins: [fastifyRoutePreReadyPlugin],
    });
    const exports = run(result.outputFiles[0].text) as { fastify: Fastify; fp: Fp };
    return exports;
  }

  const run = (code: string) => {
    const module = { exports: {} as Record<string, unknown> };
    vm.runInThisContext(`(function (module, exports, require, __filename, __dirname) {${code}\n})`)(
      module,
      module.exports,
      nodeRequire,
      __filename,
      __dirname,
    );
    return module.exports;
  };

  /**
   * Routes between which the instance's error handler, reply serializer and schema error formatter
   * change, with plugins (encapsulated and not), `after` and awaited registrations between them:
   * each route must get what its own `after` would have given it.
   */
  async function build(fastify: Fastify, fp: Fp) {
    const app = fastify();
    const boom = (name: string) => async () => {
      throw Object.assign(new Error(name), { statusCode: 418 });
    };
    const handlerNamed = (name: string) => async (err: Error, _req: unknown, reply: any) =>
      reply.code(500).send({ by: name, err: err.message });
    const schema = { querystring: { type: 'object', properties: { n: { type: 'integer' } } } };
    // A HEAD route of its own before its GET: no twin for that GET (Fastify looks it up).
    app.head('/h1', async (_req, reply) => reply.header('x-own-head', 'yes').send());
    app.get('/h1', async () => ({ get: true }));
    app.post('/h1', async () => ({ post: true }));
    app.get('/r1', boom('r1'));
    app.get('/r2', { schema }, boom('r2'));
    app.register(
      fp(async (instance) => {
        instance.setErrorHandler(handlerNamed('fp'));
      }),
    );
    app.get('/r3', boom('r3'));
    app.register(async (child) => {
      child.get('/c1', boom('c1'));
      child.setErrorHandler(handlerNamed('child'));
      child.get('/c2', boom('c2'));
      await child.register(async (grandchild) => {
        grandchild.get('/g1', boom('g1'));
      });
      child.get('/c3', { schema }, boom('c3'));
      child.setSchemaErrorFormatter((errors) => new Error(`child formatter: ${errors.length}`));
      child.after(() => child.setErrorHandler(handlerNamed('child after')));
      child.get('/c4', { schema }, boom('c4'));
    });
    app.after(() => app.setErrorHandler(handlerNamed('root after')));
    app.register(
      fp(async (instance) => {
        instance.get('/f1', boom('f1'));
        instance.setErrorHandler(handlerNamed('fp later'));
      }),
    );
    app.get('/r4', boom('r4'));
    await app.ready();
    return app;
  }

  it('gives every route the same error handler, formatter and answers as stock Fastify', async () => {
    const { fastify, fp } = await bundledFastify();
    const stock = await build((await import('fastify')).default, (await import('fastify-plugin')).default);
    const bundled = await build(fastify, fp);
    const urls = ['/h1', '/r1', '/r2', '/r3', '/c1', '/c2', '/g1', '/c3', '/c4', '/f1', '/r4', '/c3?n=x', '/c4?n=x'];
    const answers = async (app: typeof stock) =>
      Promise.all(
        [...urls, '/r2?n=x'].flatMap((url) => [
          app.inject({ url }).then((r) => `GET ${url} ${r.statusCode} ${r.body}`),
          app
            .inject({ method: 'HEAD', url })
            .then((r) => `HEAD ${url} ${r.statusCode} ${r.headers['content-length']} ${r.headers['x-own-head']}`),
        ]),
      );
    const expected = await answers(stock);
    expect(await answers(bundled)).toEqual(expected);
    // Not vacuous: the handlers differ from route to route.
    expect(expected).toEqual(
      expect.arrayContaining([
        `GET /r1 418 {"statusCode":418,"error":"I'm a Teapot","message":"r1"}`,
        'GET /r3 500 {"by":"fp","err":"r3"}',
        'GET /c2 500 {"by":"child","err":"c2"}',
        'GET /c4 500 {"by":"child after","err":"c4"}',
        'GET /c3?n=x 500 {"by":"child","err":"child formatter: 1"}',
        'GET /r4 500 {"by":"fp later","err":"r4"}',
        'HEAD /h1 200 undefined yes',
        'HEAD /r1 418 56 undefined',
      ]),
    );
    // And the runs are batched: fewer avvio `after` plugins than routes.
    const afters = (app: typeof stock) =>
      app
        .printPlugins()
        .split('\n')
        .filter((l) => l.includes('_after')).length;
    expect(afters(bundled)).toBeLessThan(afters(stock));
    await Promise.all([stock.close(), bundled.close()]);
  });
});
