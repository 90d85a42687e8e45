// How results are printed: exactly one JSON document with --json, otherwise aligned
// "key  value" records and aligned tables for lists. Commands build a Result; only cli.ts writes.
import { AsyncLocalStorage } from 'node:async_hooks';

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

/** The width tables are fitted to: the terminal's columns, 80 off a terminal (files, pipes, the
 *  admin Lambda). Held per run in async context, so every command's tables fit without each
 *  command threading the width through (and concurrent runs in one process do not share it). */
const terminal = new AsyncLocalStorage<number>();
const DEFAULT_COLUMNS = 80;
export const withColumns = <T>(columns: number | undefined, fn: () => T): T =>
  terminal.run(columns && columns >= 20 ? columns : DEFAULT_COLUMNS, fn);
const columnsNow = (): number => terminal.getStore() ?? DEFAULT_COLUMNS;

export interface Column<T> {
  header: string;
  value: (row: T) => unknown;
  /** Too wide for its share of the terminal: wrap onto more lines (default), or cut with "…" —
   *  for long identifiers that are also reachable by a shorter one (`apps show ID`). */
  overflow?: 'wrap' | 'truncate';
}

const GAP = 2;

/** An aligned table with a header row, fitted to the terminal width (see withColumns); "(none)"
 *  for an empty list. */
export function table<T>(rows: readonly T[], columns: readonly Column<T>[], empty = '(none)'): string {
  if (!rows.length) return empty;
  const cells = rows.map((r) => columns.map((c) => cell(c.value(r)).replace(/\s*\n\s*/g, ' ')));
  const natural = columns.map((c, i) => Math.max(width(c.header), ...cells.map((row) => width(row[i]))));
  const widths = fitWidths(
    natural,
    columns.map((c) => width(c.header)),
    columnsNow() - GAP * (columns.length - 1),
  );
  const line = (values: string[]) =>
    values
      .map((v, i) => (i === values.length - 1 ? v : pad(v, widths[i])))
      .join(' '.repeat(GAP))
      .trimEnd();
  const row = (values: string[]) => {
    const parts = values.map((v, i) =>
      columns[i].overflow === 'truncate' ? [truncate(v, widths[i])] : wrap(v, widths[i]),
    );
    const height = Math.max(...parts.map((p) => p.length));
    return Array.from({ length: height }, (_, k) => line(parts.map((p) => p[k] ?? ''))).join('\n');
  };
  return [line(columns.map((c) => c.header)), ...cells.map(row)].join('\n');
}

/** Column widths within `available`: the widest columns give way first (each down to at most its
 *  header), so narrow columns keep their natural width. */
function fitWidths(natural: number[], min: number[], available: number): number[] {
  const total = (cap: number) => natural.reduce((sum, w, i) => sum + Math.max(min[i], Math.min(w, cap)), 0);
  if (total(Number.POSITIVE_INFINITY) <= available) return natural;
  let cap = Math.max(...natural);
  while (cap > 1 && total(cap) > available) cap--;
  const widths = natural.map((w, i) => Math.max(min[i], Math.min(w, cap)));
  // Hand what rounding left over to the capped columns, left to right.
  let spare = available - widths.reduce((a, b) => a + b, 0);
  for (let i = 0; i < widths.length && spare > 0; i++) {
    if (widths[i] < natural[i]) {
      const more = Math.min(spare, natural[i] - widths[i]);
      widths[i] += more;
      spare -= more;
    }
  }
  return widths;
}

/** Lines of at most `n` columns, broken at spaces, and inside words only when a word is longer. */
function wrap(text: string, n: number): string[] {
  const lines: string[] = [];
  let current = '';
  for (let word of text.split(' ')) {
    if (current && width(current) + 1 + width(word) <= n) {
      current += ` ${word}`;
      continue;
    }
    if (current) lines.push(current);
    while (width(word) > n) {
      lines.push([...word].slice(0, n).join(''));
      word = [...word].slice(n).join('');
    }
    current = word;
  }
  lines.push(current);
  return lines;
}

const truncate = (text: string, n: number): string =>
  width(text) <= n ? text : `${[...text].slice(0, Math.max(0, n - 1)).join('')}…`;

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
