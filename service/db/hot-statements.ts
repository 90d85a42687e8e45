// The hot statements (the API's token look-ups, the project notification settings, each a
// statement template: statement-templates.ts) run straight on the pg pool as named prepared
// statements, with the least protocol traffic and client work an execution needs, instead of
// through Kysely's executor and pg's general Query:
// - a connection that has parsed a statement, whose result columns are known, executes it with
//   Bind, Execute, Sync alone: no Describe, so PostgreSQL sends no RowDescription and pg builds no
//   per-query table of column parsers (pg's Result.addFields was the largest single cost of
//   GET /api/v4/user in the profile: bench/http.ts, docs/benchmarks.md);
// - rows are built by a function made once per statement from its columns (an object literal with
//   the column names, each value through pg's parser for its type: the parsers createDb
//   configures), so a row is the same as Kysely's, in about 0.1 µs rather than the 1–3 µs of
//   adding 25 properties one by one (or of pg's own copy of a template row) on Node 20.
// Why skipping Describe is safe: a prepared statement's result columns cannot change under it
// (PostgreSQL refuses with "cached plan must not change result type"; the text then gets a fresh
// name and is parsed and described again, as in prepared-statements.ts), and every connection that
// parses a statement also describes it, so a schema changed between two connections is seen.
// Only a Kysely made by createDb with prepared statements on runs them so; inside a transaction
// (a Kysely Transaction), behind RDS Proxy, or on any other Kysely, a statement runs through
// Kysely as every other one does.
import type { CompiledQuery, Kysely } from 'kysely';
import pg from 'pg';
import { prepareValue } from 'pg/lib/utils';
import { isStalePlan, PROCESS_NAMES, type StatementNames } from './prepared-statements';

// biome-ignore lint/suspicious/noExplicitAny: any database's Kysely (a transaction too).
type AnyDb = Kysely<any>;

/** The rows of a statement, as Kysely's executeQuery gives them. */
export interface StatementResult<R> {
  rows: R[];
}

type Parser = (text: string) => unknown;
type Row = Record<string, unknown>;
/** A statement's result columns, as the function that makes a row of a DataRow's values. */
interface Shape {
  row: (values: Array<string | null>) => Row;
}
/** Result columns per statement name (a name stands for one text for the whole process). */
const shapes = new Map<string, Shape>();

interface FieldDescription {
  name: string;
  dataTypeID: number;
  format?: string;
}

/** The part of pg's connection (pg/lib/connection.js) a statement is sent through. */
interface PgConnection {
  parsedStatements: Record<string, string>;
  submittedNamedStatements: Record<string, string>;
  stream: { cork?(): void; uncork?(): void };
  parse(message: { text: string; name: string }): void;
  bind(message: { statement: string; values: readonly unknown[]; valueMapper: (value: unknown) => unknown }): void;
  describe(message: { type: 'P'; name: string }): void;
  execute(message: { portal: string }): void;
  close(message: { type: 'S'; name: string }): void;
  sync(): void;
  sendCopyFail(message: string): void;
}

/**
 * One execution of a named statement, as a pg "submittable" (the interface pg's Query, pg-cursor
 * and pg-query-stream implement): pg's client sends it when the connection is ready and hands it
 * the backend's messages until ReadyForQuery.
 */
class DirectQuery {
  readonly rows: unknown[] = [];
  private shape: Shape | undefined;
  private describing = false;
  private failure: unknown;
  private finished = false;

  constructor(
    /** pg's client reads `name` and `text` to track which statements a connection has parsed. */
    readonly name: string,
    readonly text: string,
    private readonly values: readonly unknown[],
    private readonly done: (err: unknown, rows: unknown[]) => void,
  ) {}

  submit(connection: PgConnection): null {
    const parsed =
      connection.parsedStatements[this.name] === this.text ||
      connection.submittedNamedStatements[this.name] === this.text;
    this.shape = shapes.get(this.name);
    this.describing = !parsed || this.shape === undefined;
    // One write for the whole exchange (as pg's Query does).
    connection.stream.cork?.();
    try {
      if (!parsed) {
        connection.parse({ text: this.text, name: this.name });
        connection.submittedNamedStatements[this.name] = this.text;
      }
      try {
        connection.bind({ statement: this.name, values: this.values, valueMapper: prepareValue });
      } catch (err) {
        // A value pg cannot send (a circular object): nothing runs; the sync's ReadyForQuery ends it.
        this.failure = err;
        connection.close({ type: 'S', name: this.name });
        connection.sync();
        return null;
      }
      if (this.describing) connection.describe({ type: 'P', name: '' });
      connection.execute({ portal: '' });
      connection.sync();
    } finally {
      connection.stream.uncork?.();
    }
    return null;
  }

  handleRowDescription(message: { fields: FieldDescription[] }): void {
    this.shape = shapeOf(message.fields);
    shapes.set(this.name, this.shape);
  }

  handleDataRow(message: { fields: Array<string | null> }): void {
    const shape = this.shape;
    if (!shape) {
      this.failure ??= new Error(`statement ${this.name}: a row without a row description`);
      return;
    }
    try {
      this.rows.push(shape.row(message.fields));
    } catch (err) {
      this.failure ??= err;
    }
  }

  handleCommandComplete(): void {
    // Described and no RowDescription came (NoData): a statement without result columns.
    if (this.describing && this.shape === undefined) shapes.set(this.name, shapeOf([]));
  }

  handleEmptyQuery(): void {}

  handlePortalSuspended(): void {}

  handleCopyInResponse(connection: PgConnection): void {
    connection.sendCopyFail('No source stream defined');
  }

  handleCopyData(): void {}

  /** A backend error (before its ReadyForQuery), or the connection's failure. */
  handleError(err: unknown): void {
    this.finish(err);
  }

  handleReadyForQuery(): void {
    this.finish(this.failure);
  }

  private finish(err: unknown): void {
    if (this.finished) return;
    this.finished = true;
    this.done(err, this.rows);
  }
}

/**
 * The row maker of a statement's columns: `(v) => ({ "id": v[0] === null ? null : p[0](v[0]), … })`,
 * its keys written as JSON strings (column names are our own SQL's, and quoted they cannot break
 * out of the literal). A repeated name keeps its first place and its last value, as in pg's rows.
 * `__proto__` (which a literal would take as the prototype) gets the plain loop instead.
 */
function shapeOf(fields: FieldDescription[]): Shape {
  const names = fields.map((f) => f.name);
  const parsers = fields.map((f) => pg.types.getTypeParser(f.dataTypeID, 'text') as Parser);
  if (names.includes('__proto__')) {
    return {
      row: (values) => {
        const row: Row = {};
        for (let i = 0; i < values.length; i++) {
          const value = values[i];
          Object.defineProperty(row, names[i], {
            value: value === null ? null : parsers[i](value),
            enumerable: true,
            writable: true,
            configurable: true,
          });
        }
        return row;
      },
    };
  }
  const properties = names.map((name, i) => `${JSON.stringify(name)}: v[${i}] === null ? null : p[${i}](v[${i}])`);
  // Made once per statement, from its column names (see above).
  const make = new Function('p', `return (v) => ({ ${properties.join(', ')} });`) as (p: Parser[]) => Shape['row'];
  return { row: make(parsers) };
}

/** The pools of the Kysely instances whose hot statements run directly. */
const pools = new WeakMap<AnyDb, pg.Pool>();

/** createDb: run `db`'s hot statements straight on `pool` (only with named prepared statements). */
export function runHotStatementsOnPool(db: AnyDb, pool: pg.Pool): void {
  pools.set(db, pool);
}

/** Execute a compiled statement: directly when `db` allows it, else through Kysely. */
export function runStatement<R>(db: AnyDb, query: CompiledQuery<R>): Promise<StatementResult<R>> {
  const pool = pools.get(db);
  if (!pool) return db.executeQuery(query);
  return new Promise((resolve, reject) => {
    execute(pool, PROCESS_NAMES, query.sql, query.parameters, true, (err, rows) =>
      err ? reject(err) : resolve({ rows: rows as R[] }),
    );
  });
}

/**
 * runStatement, with the statement bound only once it holds its connection (`bind` is called
 * then, not while the statement queues for one): for a value that must be read at that moment,
 * such as the clock the refresh rotation stamps with. Outside the pool, on a connection of its
 * own (or the caller's transaction).
 */
export function runStatementHolding<R>(db: AnyDb, bind: (on: AnyDb) => CompiledQuery<R>): Promise<StatementResult<R>> {
  const pool = pools.get(db);
  if (!pool) {
    return db.isTransaction
      ? db.executeQuery(bind(db))
      : db.connection().execute((connection) => connection.executeQuery(bind(connection)));
  }
  return new Promise((resolve, reject) => {
    pool.connect((err, client, release) => {
      if (err || !client) return reject(err);
      let query: CompiledQuery<R>;
      try {
        query = bind(db);
      } catch (failure) {
        release();
        return reject(failure);
      }
      const done = (failure: unknown, rows?: unknown[]) => (failure ? reject(failure) : resolve({ rows: rows as R[] }));
      const name = PROCESS_NAMES.nameOf(query.sql);
      if (name === undefined) {
        // Beyond the cap of named texts: an unnamed statement, on the connection it holds.
        client.query(query.sql, query.parameters as unknown[]).then(
          (r) => {
            release();
            done(null, r.rows);
          },
          (failure) => {
            release();
            done(failure);
          },
        );
        return;
      }
      client.query(
        new DirectQuery(name, query.sql, query.parameters, (failure, rows) => {
          release();
          if (failure && isStalePlan(failure)) {
            // Its result changed under it (a migration): parsed and described again under a new name.
            PROCESS_NAMES.forget(query.sql);
            return execute(pool, PROCESS_NAMES, query.sql, query.parameters, false, done);
          }
          done(failure, rows);
        }) as never,
      );
    });
  });
}

function execute(
  pool: pg.Pool,
  names: StatementNames,
  text: string,
  values: readonly unknown[],
  retry: boolean,
  done: (err: unknown, rows?: unknown[]) => void,
): void {
  const name = names.nameOf(text);
  if (name === undefined) {
    // Beyond the cap of named texts: an unnamed statement, as prepared-statements.ts sends it.
    pool.query(text, values as unknown[]).then((r) => done(null, r.rows), done);
    return;
  }
  pool.connect((err, client, release) => {
    if (err || !client) return done(err);
    client.query(
      new DirectQuery(name, text, values, (failure, rows) => {
        release();
        if (failure && retry && isStalePlan(failure)) {
          // Its result changed under it (a migration): parsed and described again under a new name.
          names.forget(text);
          return execute(pool, names, text, values, false, done);
        }
        done(failure, rows);
      }) as never,
    );
  });
}
