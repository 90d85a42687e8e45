// Some of a row's columns as a new object, made by one function per column list: an object literal
// whose keys are the list (`(r) => ({ "id": r["app_id"] ?? null, … })`). On Node 20 copying 15–25
// properties one by one (a loop of keyed stores, Object.fromEntries, or a rest pattern that leaves
// a few out) cost 5–20 µs a row on the token endpoint's hot paths; the literal costs about 0.1.
// Column lists are our own constants (keys written as JSON strings); `__proto__` is refused.

/**
 * The picker of `columns`, each read from `prefix` + its name (absent or undefined: null); a row
 * that is undefined answers every column null.
 */
export function rowPicker<T>(columns: readonly string[], prefix = ''): (row: object | undefined) => T {
  if (columns.includes('__proto__')) throw new Error('rowPicker: a column named __proto__');
  const properties = columns.map(
    (c) => `${JSON.stringify(c)}: r === undefined ? null : (r[${JSON.stringify(prefix + c)}] ?? null)`,
  );
  // Made once per column list, from constant names (see above).
  return new Function('r', `return { ${properties.join(', ')} };`) as (row: object | undefined) => T;
}
