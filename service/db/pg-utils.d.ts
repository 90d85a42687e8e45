// pg's own conversion of a JavaScript value to a statement parameter (Date, Buffer, array, JSON…),
// used by hot-statements.ts so that a value travels exactly as pg's Query would send it. pg ships
// it (`pg/lib/utils`, in its package exports) without types.
declare module 'pg/lib/utils' {
  export function prepareValue(value: unknown): unknown;
}
