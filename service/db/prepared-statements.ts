// Named prepared statements for every parameterised query. Kysely hands node-postgres a text and
// its values, which pg sends as an unnamed statement: PostgreSQL parses and plans it again on
// every execution. Named, each connection parses a statement once and then only binds and
// executes it, which on GET /api/v4/user roughly halves the database's work per request (the
// benchmark in bench/http.ts measures it).
//
// Names are given per SQL text, one name per text for the whole process (node-postgres refuses one
// name for two texts on a connection, and two wrappers may share a pool), and at most MAX_NAMED
// texts get one, so a stream of distinct texts (an
// IN-list of every length) cannot grow each connection's statement cache without bound; beyond the
// cap queries go unnamed, as before. The columns are named in every query (no `select *`), so an
// additive migration does not change a prepared statement's result; should a statement's result
// change under it anyway (PostgreSQL's "cached plan must not change result type"), the text gets
// a fresh name and is parsed again: at once outside a transaction, on its next use inside one.
//
// Off behind RDS Proxy: a named prepared statement pins the client's session to one database
// connection, which would undo the proxy's multiplexing (DB_PREPARED_STATEMENTS=false, which the
// stack sets with lanyard:rdsProxy).
import type { PostgresPool, PostgresPoolClient } from 'kysely';

/** At most this many distinct texts are prepared (per process; each connection parses its own). */
export const MAX_NAMED = 1000;

export class StatementNames {
  readonly #names = new Map<string, string>();
  #next = 1;

  constructor(private readonly max = MAX_NAMED) {}

  /** The name for `text`, or undefined once `max` texts have one. */
  nameOf(text: string): string | undefined {
    let name = this.#names.get(text);
    if (name === undefined && this.#names.size < this.max) {
      name = `lanyard_${this.#next++}`;
      this.#names.set(text, name);
    }
    return name;
  }

  /** Give `text` a new name on its next use (its prepared statement went stale). */
  forget(text: string): void {
    this.#names.delete(text);
  }

  get size(): number {
    return this.#names.size;
  }
}

/** PostgreSQL's feature_not_supported (0A000), as raised for a prepared statement whose result changed. */
export const isStalePlan = (err: unknown): boolean =>
  (err as { code?: string })?.code === '0A000' && /cached plan/.test((err as Error).message ?? '');

/**
 * One naming for the whole process: two wrappers over the same pg pool (or connections handed
 * between them) then can never give one name to two texts on a connection.
 */
export const PROCESS_NAMES = new StatementNames();

/** `pool` with every parameterised query of its clients sent as a named prepared statement. */
export function preparingPool(pool: PostgresPool, names = PROCESS_NAMES): PostgresPool {
  // One wrapper per pg client, made at its first checkout (Kysely checks a client out per query).
  const wrappers = new WeakMap<PostgresPoolClient, PostgresPoolClient>();
  return {
    async connect(): Promise<PostgresPoolClient> {
      const client = await pool.connect();
      let wrapper = wrappers.get(client);
      if (!wrapper) {
        wrapper = preparingClient(client, names);
        wrappers.set(client, wrapper);
      }
      return wrapper;
    },
    end: () => pool.end(),
  };
}

function preparingClient(client: PostgresPoolClient, names: StatementNames): PostgresPoolClient {
  const send = client.query as unknown as (text: unknown, values?: unknown) => Promise<unknown>;
  // Kysely begins and ends transactions with plain statements on this client.
  let inTransaction = false;
  const query = (text: unknown, values?: readonly unknown[]): Promise<unknown> => {
    if (typeof text !== 'string' || !values || values.length === 0) {
      if (typeof text === 'string') {
        if (/^\s*(begin|start transaction)\b/i.test(text)) inTransaction = true;
        else if (/^\s*(commit|rollback|end)\s*$/i.test(text)) inTransaction = false;
      }
      // A cursor, or a statement without parameters (BEGIN, COMMIT): the simple protocol.
      return send.call(client, text, values);
    }
    const name = names.nameOf(text);
    if (name === undefined) return send.call(client, text, values);
    return send.call(client, { name, text, values }).catch((err: unknown) => {
      if (!isStalePlan(err)) throw err;
      names.forget(text);
      // Failed at planning, before doing anything: outside a transaction, run it again under
      // a fresh name (inside one, the transaction is aborted and the caller sees the error).
      if (inTransaction) throw err;
      const fresh = names.nameOf(text);
      return fresh === undefined ? send.call(client, text, values) : send.call(client, { name: fresh, text, values });
    });
  };
  return {
    query: query as PostgresPoolClient['query'],
    // pg's release(err) discards the connection when given a truthy argument.
    release: (destroy?: boolean) => (client.release as (destroy?: boolean) => void)(destroy),
  };
}
