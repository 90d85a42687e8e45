// Typed /api/v4 parameters as GitLab's Grape coerces them, with its 400 bodies: a DateTime or Date
// that does not parse is {"error":"<name> is invalid"}, a value outside a list is
// {"error":"<name> does not have a valid value"}, a required one absent is "<name> is missing".
import { parseBoolean } from '../domain/booleans';
import { ApiError } from './errors';

export const invalidParam = (name: string) => new ApiError(400, { error: `${name} is invalid` });
export const notAValidValue = (name: string) => new ApiError(400, { error: `${name} does not have a valid value` });

const present = (v: unknown) => v !== undefined && v !== null && v !== '';

/** ISO 8601: a date, or a date and time with an optional offset (none means UTC, as Ruby's DateTime). */
const DATE_TIME_RE =
  /^(\d{4})-(\d{2})-(\d{2})(?:[T ](\d{2}):(\d{2})(?::(\d{2})(?:\.(\d{1,9}))?)?)?\s*(Z|[+-]\d{2}(?::?\d{2})?)?$/i;

/** A DateTime parameter (created_after=2026-01-01T00:00:00Z, or just a date): a Date, or undefined when absent. */
export function dateTimeParam(params: Record<string, unknown>, name: string): Date | undefined {
  const value = params[name];
  if (!present(value)) return undefined;
  const m = typeof value === 'string' ? DATE_TIME_RE.exec(value.trim()) : null;
  if (!m) throw invalidParam(name);
  const [, y, mo, d, h = '00', mi = '00', sec = '00', frac = '', zone = 'Z'] = m;
  const offset =
    zone.toUpperCase() === 'Z' ? 'Z' : zone.length === 3 ? `${zone}:00` : zone.replace(/^([+-]\d{2})(\d{2})$/, '$1:$2');
  const date = new Date(`${y}-${mo}-${d}T${h}:${mi}:${sec}.${`${frac}000`.slice(0, 3)}${offset}`);
  // Reject what JavaScript would roll over (2026-02-30) as Ruby's Date does.
  if (Number.isNaN(date.getTime()) || Number(mo) > 12 || Number(d) > 31 || Number(h) > 23 || Number(mi) > 59)
    throw invalidParam(name);
  const day = new Date(`${y}-${mo}-${d}T00:00:00Z`);
  if (Number.isNaN(day.getTime()) || day.toISOString().slice(0, 10) !== `${y}-${mo}-${d}`) throw invalidParam(name);
  return date;
}

/** A Date parameter (expires_at=2026-12-31): the YYYY-MM-DD string, or undefined when absent. */
export function dateParam(params: Record<string, unknown>, name: string): string | undefined {
  const value = params[name];
  if (!present(value)) return undefined;
  if (typeof value !== 'string') throw invalidParam(name);
  const m = /^(\d{4})-(\d{1,2})-(\d{1,2})$/.exec(value.trim());
  if (!m) throw invalidParam(name);
  const iso = `${m[1]}-${m[2].padStart(2, '0')}-${m[3].padStart(2, '0')}`;
  const parsed = new Date(`${iso}T00:00:00Z`);
  if (Number.isNaN(parsed.getTime()) || parsed.toISOString().slice(0, 10) !== iso) throw invalidParam(name);
  return iso;
}

/** A Boolean parameter: true/false, or undefined when absent; anything else is "<name> is invalid". */
export function booleanQueryParam(params: Record<string, unknown>, name: string): boolean | undefined {
  const value = params[name];
  if (value === undefined) return undefined;
  const parsed = parseBoolean(value);
  if (parsed === undefined) throw invalidParam(name);
  return parsed;
}

/** An Integer parameter (a decimal string or JSON integer), or undefined when absent. */
export function integerParam(params: Record<string, unknown>, name: string): number | undefined {
  const value = params[name];
  if (value === undefined) return undefined;
  if (typeof value === 'number' && Number.isSafeInteger(value)) return value;
  if (typeof value === 'string' && /^[+-]?\d{1,15}$/.test(value.trim())) return Number(value.trim());
  throw invalidParam(name);
}
