// Fast paths for two option validators the API function runs at every cold start: Fastify's
// check of its server options (fastify/lib/config-validator.js, once, in Fastify()) and
// light-my-request's check of each injected request (light-my-request/lib/config-validator.js,
// the Lambda adapter's every event). Both are ajv-generated functions of 50–80 KB of source, which
// V8 parses at start-up and compiles in full on their first call for the handful of options the
// function passes (~12 M instructions of a cold start's first answer, callgrind). Each fast path
// decides only options whose every value already has the schema's type (so ajv would coerce
// nothing) and then does exactly what ajv's code does — Fastify's: set the defaults in the
// schema's order, then drop the keys the schema does not name; light-my-request's: nothing. Any
// other input goes to the real validator, loaded from its own file beside index.js on first use
// (infra/build/bundle.ts), with its answer and errors as they are. test/lambda/option-validators
// compares both with the real validators on generated options.

/** An ajv standalone validator: true or false, and its errors on the function. */
export interface OptionsValidator {
  (data: unknown): boolean;
  errors?: unknown;
}

type Data = Record<string, unknown>;

const isObject = (v: unknown): v is Data => v !== null && typeof v === 'object' && !Array.isArray(v);
/** ajv's `integer`: a finite number without a fraction. */
const isInteger = (v: unknown): boolean => typeof v === 'number' && Number.isInteger(v);
const isBoolean = (v: unknown): boolean => typeof v === 'boolean';
const isString = (v: unknown): boolean => typeof v === 'string';

/** Fastify 5's server options schema (fastify/build/build-validation.js): each key's check and default, in its order. */
const FASTIFY_OPTIONS: ReadonlyArray<[string, (v: unknown) => boolean, unknown]> = [
  ['connectionTimeout', isInteger, 0],
  ['keepAliveTimeout', isInteger, 72000],
  ['forceCloseConnections', () => false, undefined],
  ['maxRequestsPerSocket', (v) => v === null || isInteger(v), 0],
  ['requestTimeout', isInteger, 0],
  ['handlerTimeout', isInteger, 0],
  ['bodyLimit', isInteger, 1048576],
  ['caseSensitive', isBoolean, true],
  ['allowUnsafeRegex', isBoolean, false],
  ['http2', isBoolean, undefined],
  ['https', () => false, undefined],
  ['ignoreTrailingSlash', isBoolean, false],
  ['ignoreDuplicateSlashes', isBoolean, false],
  ['disableRequestLogging', () => true, false],
  ['maxParamLength', isInteger, 100],
  ['onProtoPoisoning', isString, 'error'],
  ['onConstructorPoisoning', isString, 'error'],
  ['pluginTimeout', isInteger, 10000],
  // A string could be coerced to the boolean branch ("false"): the real validator decides strings.
  ['requestIdHeader', isBoolean, false],
  ['requestIdLogLabel', isString, 'reqId'],
  ['http2SessionTimeout', isInteger, 72000],
  ['exposeHeadRoutes', isBoolean, true],
  ['useSemicolonDelimiter', isBoolean, false],
  ['routerOptions', (v) => isObject(v) && ROUTER_OPTIONS.every(([k, ok]) => v[k] === undefined || ok(v[k])), undefined],
  ['constraints', () => false, undefined],
];
const ROUTER_OPTIONS: ReadonlyArray<[string, (v: unknown) => boolean, unknown]> = [
  ['compile', isBoolean, false],
  ['ignoreTrailingSlash', isBoolean, false],
  ['ignoreDuplicateSlashes', isBoolean, false],
  ['maxParamLength', isInteger, 100],
  ['allowUnsafeRegex', isBoolean, false],
  ['useSemicolonDelimiter', isBoolean, false],
];
/** The option names the schema declares (the rest are dropped: removeAdditional). */
export const FASTIFY_OPTION_NAMES: readonly string[] = FASTIFY_OPTIONS.map(([name]) => name);
const FASTIFY_NAMES = new Set(FASTIFY_OPTION_NAMES);

function setDefaults(data: Data, table: ReadonlyArray<[string, unknown, unknown]>): void {
  for (const [name, , value] of table) if (value !== undefined && data[name] === undefined) data[name] = value;
}

/**
 * A validator that decides itself what `fast` accepts (no errors) and hands anything else to the
 * real one, loaded on first use.
 */
function fastPathOr(loadReal: () => OptionsValidator, fast: (data: unknown) => boolean): OptionsValidator {
  const validate: OptionsValidator = (data) => {
    if (fast(data)) {
      validate.errors = null;
      return true;
    }
    const real = loadReal();
    const valid = real(data);
    validate.errors = real.errors;
    return valid;
  };
  return validate;
}

/** Fastify's server options validator (it sets defaults and drops unknown keys, as ajv's does). */
export function fastifyOptionsValidator(loadReal: () => OptionsValidator): OptionsValidator {
  return fastPathOr(loadReal, (data) => {
    if (!isObject(data) || !FASTIFY_OPTIONS.every(([name, ok]) => data[name] === undefined || ok(data[name]))) {
      return false;
    }
    setDefaults(data, FASTIFY_OPTIONS);
    for (const key in data) if (!FASTIFY_NAMES.has(key)) delete data[key];
    if (data.routerOptions !== undefined) setDefaults(data.routerOptions as Data, ROUTER_OPTIONS);
    return true;
  });
}

/**
 * light-my-request's inject options validator (ajv's changes nothing for options already of the
 * right types). `methods`: its schema's `method` enum, as generated (not this Node's http.METHODS).
 */
export function lightMyRequestOptionsValidator(
  loadReal: () => OptionsValidator,
  methods: readonly string[],
): OptionsValidator {
  const allowed = new Set(methods);
  return fastPathOr(
    loadReal,
    (data) =>
      isObject(data) &&
      typeof data.url === 'string' &&
      data.path === undefined &&
      data.cookies === undefined &&
      data.simulate === undefined &&
      (data.method === undefined || (typeof data.method === 'string' && allowed.has(data.method))) &&
      (data.headers === undefined || isObject(data.headers)) &&
      (data.query === undefined || isObject(data.query) || isString(data.query)) &&
      (data.authority === undefined || isString(data.authority)) &&
      (data.remoteAddress === undefined || isString(data.remoteAddress)) &&
      (data.validate === undefined || isBoolean(data.validate)),
  );
}
