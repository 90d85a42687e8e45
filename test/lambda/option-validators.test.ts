// The API bundle's fast paths for Fastify's and light-my-request's ajv-generated option validators
// (infra/build/option-validators.ts) answer exactly as the real validators do: the same result,
// the same errors, and the options left in the same state (defaults, dropped keys, key order),
// for the options the Lambda function passes and for generated ones of every shape.
import http from 'node:http';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { injectMethodEnum } from '../../infra/build/bundle';
import {
  FASTIFY_OPTION_NAMES,
  fastifyOptionsValidator,
  lightMyRequestOptionsValidator,
  type OptionsValidator,
} from '../../infra/build/option-validators';

const realFastify: OptionsValidator = require('fastify/lib/config-validator.js');
const realInject: OptionsValidator = require('light-my-request/lib/config-validator.js');

/** Counts how often the fast path fell back to the real validator. */
function counted(real: OptionsValidator) {
  const calls = { n: 0 };
  const load = () => {
    calls.n++;
    return real;
  };
  return { calls, load };
}

/** The value and every nested object's keys in order (toEqual ignores key order). */
const shape = (v: unknown): unknown =>
  v !== null && typeof v === 'object' && !Array.isArray(v)
    ? Object.entries(v).map(([k, x]) => [k, typeof x === 'function' ? 'fn' : shape(x)])
    : v;

function expectSame(fast: OptionsValidator, real: OptionsValidator, input: () => unknown) {
  const a = input();
  const b = input();
  const fastAnswer = fast(a);
  const realAnswer = real(b);
  expect({ answer: fastAnswer, errors: fast.errors ?? null, options: shape(a) }).toEqual({
    answer: realAnswer,
    errors: real.errors ?? null,
    options: shape(b),
  });
  return fastAnswer;
}

const anyValue = fc.oneof(
  fc.integer({ min: -5, max: 200_000 }),
  fc.double({ noNaN: false }),
  fc.boolean(),
  fc.constantFrom('', 'idle', 'error', '12', 'true', 'false', 'GET', 'get', 'x'),
  fc.constant(null),
  fc.constant(undefined),
  fc.constant(() => 1),
  fc.constant([]),
  fc.constant([1, 'a']),
  fc.dictionary(
    fc.constantFrom('pathname', 'compile', 'maxParamLength', 'a', 'allowHTTP1'),
    fc.oneof(fc.boolean(), fc.integer(), fc.string()),
  ),
);

describe('Fastify server options', () => {
  it("the function's own options (and every Fastify() of the app) take the fast path, as the real validator answers them", () => {
    const { calls, load } = counted(realFastify);
    const fast = fastifyOptionsValidator(load);
    const options = () => ({
      logger: false,
      genReqId: () => 'id',
      trustProxy: false,
      schemaController: { compilersFactory: {} },
      routerOptions: { ignoreTrailingSlash: true, maxParamLength: 16384 },
      frameworkErrors: () => undefined,
      bodyLimit: 1048576,
      exposeHeadRoutes: false,
      rewriteUrl: () => '/',
      requestTimeout: 30000,
      http: { headersTimeout: 10000, requestTimeout: 30000, connectionsCheckingInterval: 1000 },
    });
    expect(expectSame(fast, realFastify, options)).toBe(true);
    expect(expectSame(fast, realFastify, () => ({}))).toBe(true);
    expect(calls.n).toBe(0);
  });

  it('answers generated options as the real validator does, falling back for values it would coerce or refuse', () => {
    const { calls, load } = counted(realFastify);
    const fast = fastifyOptionsValidator(load);
    const keys = fc.constantFrom(...FASTIFY_OPTION_NAMES, 'logger', 'http', 'trustProxy', 'x');
    fc.assert(
      fc.property(fc.dictionary(keys, anyValue, { maxKeys: 8 }), (generated) => {
        expectSame(fast, realFastify, () => structuredCloneWithFunctions(generated));
      }),
      { numRuns: 2000 },
    );
    expect(calls.n).toBeGreaterThan(0);
    // Not an object at all.
    for (const v of [null, 1, 'x', []]) expectSame(fast, realFastify, () => v);
  });

  it('declares the option names of the generated schema', () => {
    const source = require('node:fs').readFileSync(require.resolve('fastify/lib/config-validator.js'), 'utf8');
    const schema = JSON.parse(/const schema11 = (\{.*\});\n/.exec(source)![1]);
    expect(FASTIFY_OPTION_NAMES).toEqual(Object.keys(schema.properties));
  });
});

describe('light-my-request inject options', () => {
  const methods = injectMethodEnum();

  it('every method and the Lambda adapter’s options take the fast path, as the real validator answers them', () => {
    const { calls, load } = counted(realInject);
    const fast = lightMyRequestOptionsValidator(load, methods);
    for (const method of [...http.METHODS, ...http.METHODS.map((m) => m.toLowerCase())]) {
      const options = () => ({
        method,
        url: '/api/v4/user?x=1',
        query: { x: '1' },
        payload: undefined,
        headers: { host: 'h', 'x-forwarded-proto': 'https' },
        remoteAddress: '203.0.113.7',
        payloadAsStream: undefined,
      });
      expect(expectSame(fast, realInject, options)).toBe(true);
    }
    expect(calls.n).toBe(0);
  });

  it('answers generated options as the real validator does', () => {
    const { calls, load } = counted(realInject);
    const fast = lightMyRequestOptionsValidator(load, methods);
    const keys = fc.constantFrom(
      'url',
      'path',
      'method',
      'headers',
      'query',
      'payload',
      'cookies',
      'simulate',
      'authority',
      'remoteAddress',
      'validate',
      'server',
    );
    fc.assert(
      fc.property(
        fc.dictionary(keys, anyValue, { maxKeys: 7 }),
        fc.constantFrom(undefined, '/p', 'GET'),
        (generated, url) => {
          expectSame(fast, realInject, () => ({
            ...(url === undefined ? {} : { url }),
            ...structuredCloneWithFunctions(generated),
          }));
        },
      ),
      { numRuns: 2000 },
    );
    expect(calls.n).toBeGreaterThan(0);
    for (const v of [null, 1, 'x', []]) expectSame(fast, realInject, () => v);
  });
});

/** A deep copy that keeps functions (structuredClone refuses them) and undefined values. */
function structuredCloneWithFunctions<T>(v: T): T {
  if (Array.isArray(v)) return v.map(structuredCloneWithFunctions) as T;
  if (v !== null && typeof v === 'object')
    return Object.fromEntries(Object.entries(v).map(([k, x]) => [k, structuredCloneWithFunctions(x)])) as T;
  return v;
}
