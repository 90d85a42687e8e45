// How results are printed: exactly one JSON document with --json, otherwise aligned
// "key  value" records and aligned tables for lists. Commands build a Result; only cli.ts writes.

export interface Result {
  /** The --json document (the contract's keys, §5). */
  json: unknown;
  /** The human-readable rendering, ending without a newline. */
  text: string;
}

const cell = (value: unknown): string => {
  if (value === null || value === undefined) return '-';
  if (Array.isArray(value)) return value.length ? value.join(' ') : '-';
  if (typeof value === 'boolean') return value ? 'yes' : 'no';
  return String(value);
};

/** Display width: one column per code point (the values we print are ASCII in practice). */
const width = (s: string): number => [...s].length;
const pad = (s: string, n: number): string => s + ' '.repeat(Math.max(0, n - width(s)));

export interface Column<T> {
  header: string;
  value: (row: T) => unknown;
}

/** An aligned table with a header row; "(none)" for an empty list. */
export function table<T>(rows: readonly T[], columns: readonly Column<T>[], empty = '(none)'): string {
  if (!rows.length) return empty;
  const cells = rows.map((r) => columns.map((c) => cell(c.value(r)).replace(/\s*\n\s*/g, ' ')));
  const widths = columns.map((c, i) => Math.max(width(c.header), ...cells.map((row) => width(row[i]))));
  const line = (values: string[]) =>
    values
      .map((v, i) => (i === values.length - 1 ? v : pad(v, widths[i])))
      .join('  ')
      .trimEnd();
  return [line(columns.map((c) => c.header)), ...cells.map(line)].join('\n');
}

/** "key  value" lines with the values aligned; lists space-separated; multi-line values are
 *  indented under their key. */
export function record(fields: ReadonlyArray<readonly [string, unknown]>): string {
  const w = Math.max(...fields.map(([k]) => width(k)));
  return fields
    .map(([key, value]) => {
      const lines = cell(value).split('\n');
      return lines.map((l, i) => (i === 0 ? `${pad(`${key}:`, w + 1)}  ${l}` : `${' '.repeat(w + 3)}${l}`)).join('\n');
    })
    .join('\n');
}

/** Every key of an object, in order, as a record. */
export const recordOf = (obj: Record<string, unknown>): string => record(Object.entries(obj));

export const json = (value: unknown): string => JSON.stringify(value, null, 2);
