// The one boolean parser, as GitLab's API (Grape, dry-types Params::Bool) coerces booleans: JSON true/false, and the
// strings (or numbers) 1/0, true/false, t/f, yes/no, y/n, on/off in Grape's casings. The contract's
// true/false/1/0 are among them. Anything else (2, "maybe", "", null, an array) is undefined (the caller decides). Used by the
// API, the web forms and TRUST_PROXY.

const TRUE_VALUES = ['1', 'on', 'On', 'ON', 't', 'true', 'True', 'TRUE', 'T', 'y', 'yes', 'Yes', 'YES', 'Y'];
const FALSE_VALUES = ['0', 'off', 'Off', 'OFF', 'f', 'false', 'False', 'FALSE', 'F', 'n', 'no', 'No', 'NO', 'N'];

/** Every accepted value, for schemas (an enum: no Ajv type coercion ever applies). */
export const BOOLEAN_PARAM_VALUES: ReadonlyArray<string | number | boolean> = [
  true,
  false,
  1,
  0,
  ...TRUE_VALUES,
  ...FALSE_VALUES,
];

export function parseBoolean(v: unknown): boolean | undefined {
  if (v === true || v === false) return v;
  if (v === 1 || v === 0) return v === 1;
  if (typeof v !== 'string') return undefined;
  if (TRUE_VALUES.includes(v)) return true;
  if (FALSE_VALUES.includes(v)) return false;
  return undefined;
}
