// The one boolean parser: how the contract (and GitLab) read a flag from a form, a query string,
// a JSON body or the environment.

/** true/false/1/0, as strings or JSON values; anything else is undefined (the caller decides). */
export function parseBoolean(v: unknown): boolean | undefined {
  if (v === true || v === 'true' || v === 1 || v === '1') return true;
  if (v === false || v === 'false' || v === 0 || v === '0') return false;
  return undefined;
}
