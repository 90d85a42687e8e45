// Statements built once per shape and bound per call. Building a Kysely statement out of sql``
// fragments and compiling it costs tens of microseconds for the larger ones (the notification
// settings upsert with its visibility check and audit insert: more than PostgreSQL's own work on
// a hot path), although only the parameters change from one request to the next. A template is
// built once per shape key with a named placeholder (a slot) wherever a value goes; each call then
// copies the compiled text (the same string each time, which also makes the prepared-statement
// name look-up cheap) and puts the values in the slots' places.
//
// Every parameter of a template must be a slot: a value computed while building would be frozen
// into every later call, so it is refused when the template is first built (the caller's tests
// fail at once). Constants go in the SQL text (sql`null`) or in a slot of their own.
import type { CompiledQuery, Kysely } from 'kysely';
import { runStatement, runStatementHolding, type StatementResult } from './hot-statements';

// biome-ignore lint/suspicious/noExplicitAny: any database's Kysely (a transaction too).
type AnyDb = Kysely<any>;
/** sql`` (compiled against the database) or a query builder. */
type Buildable<R> = { compile(db: AnyDb): CompiledQuery<R> };

/** A named placeholder, replaced by the call's value of that name. */
class Slot {
  constructor(readonly name: string) {}
}

/** Declares a slot while building; typed as whatever the fragment takes (it is only a placeholder). */
export type SlotOf<N extends string> = <T = unknown>(name: N) => T;

export interface StatementTemplates<N extends string> {
  /**
   * The statement of shape `key`, bound to `values`: `build` runs on the first call of each shape
   * only (the shape must decide everything but the slots' values).
   */
  bind<R>(
    db: AnyDb,
    key: string,
    values: Record<N, unknown>,
    build: (slot: SlotOf<N>) => Buildable<R>,
  ): CompiledQuery<R>;
  /**
   * `bind`, then execute: straight on the pool as a named prepared statement where `db` allows it
   * (hot-statements.ts), else through Kysely.
   */
  run<R>(
    db: AnyDb,
    key: string,
    values: Record<N, unknown>,
    build: (slot: SlotOf<N>) => Buildable<R>,
  ): Promise<StatementResult<R>>;
  /**
   * `run`, with the values read once the statement holds its connection (a clock that must not
   * count the wait for one): hot-statements.ts's runStatementHolding.
   */
  runHolding<R>(
    db: AnyDb,
    key: string,
    values: () => Record<N, unknown>,
    build: (slot: SlotOf<N>) => Buildable<R>,
  ): Promise<StatementResult<R>>;
  /** How many shapes are kept (tests). */
  readonly size: number;
}

/**
 * A set of templates for one statement family. At most `max` shapes are kept (shapes come from a
 * bounded set of choices, e.g. which columns an update sets; beyond the cap a shape is built on
 * each call, as without templates).
 */
export function statementTemplates<N extends string>(max = 256): StatementTemplates<N> {
  const shapes = new Map<string, { compiled: CompiledQuery; names: N[] }>();
  const templates: StatementTemplates<N> = {
    run: (db, key, values, build) => runStatement(db, templates.bind(db, key, values, build)),
    runHolding: (db, key, values, build) => runStatementHolding(db, (on) => templates.bind(on, key, values(), build)),
    bind(db, key, values, build) {
      let shape = shapes.get(key);
      if (!shape) {
        const slots = new Map<string, Slot>();
        const slot = (name: N) => {
          let s = slots.get(name);
          if (!s) {
            s = new Slot(name);
            slots.set(name, s);
          }
          return s as never;
        };
        const compiled: CompiledQuery = build(slot).compile(db);
        const names = compiled.parameters.map((p) => {
          if (!(p instanceof Slot)) throw new Error(`statement template "${key}": a parameter that is not a slot`);
          return p.name as N;
        });
        shape = { compiled, names };
        if (shapes.size < max) shapes.set(key, shape);
      }
      const parameters = new Array(shape.names.length);
      for (let i = 0; i < parameters.length; i++) parameters[i] = values[shape.names[i]];
      // Named, not `{ ...compiled, parameters }`: spreading Kysely's frozen object costs more.
      const { query, queryId, sql } = shape.compiled;
      return { query, queryId, sql, parameters } as CompiledQuery<never>;
    },
    get size() {
      return shapes.size;
    },
  };
  return templates;
}
