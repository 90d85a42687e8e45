// The database connection budget. RDS PostgreSQL's default max_connections is
// LEAST({DBInstanceClassMemory/9531392}, 5000), DBInstanceClassMemory being the class's memory
// less what RDS keeps for itself (roughly: we use 90%). Every Lambda instance holds one
// connection, so the API's reserved concurrency must stay below that, with room for the
// migration (1) and admin (2) functions, RDS's superuser slots (3) and an operator session or two.

/** Memory (GiB) of the classes a Lanyard stack plausibly runs on. */
const CLASS_MEMORY_GIB: Record<string, number> = {
  'db.t4g.micro': 1,
  'db.t4g.small': 2,
  'db.t4g.medium': 4,
  'db.t4g.large': 8,
  'db.t4g.xlarge': 16,
  'db.t3.micro': 1,
  'db.t3.small': 2,
  'db.t3.medium': 4,
  'db.m7g.large': 8,
  'db.m7g.xlarge': 16,
  'db.m6g.large': 8,
  'db.r7g.large': 16,
  'db.r6g.large': 16,
};

/** Connections kept for everything that is not the API function. */
export const RESERVED_FOR_OTHERS =
  1 /* migrate */ + 2 /* admin */ + 3 /* rds superuser */ + 4 /* operators, monitoring */;

export interface ConnectionBudget {
  maxConnections: number;
  /** The most API instances the database can serve. */
  forApi: number;
}

/** undefined for a class not in the table (no check; the operator owns the arithmetic). */
export function connectionBudget(instanceClass: string): ConnectionBudget | undefined {
  const gib = CLASS_MEMORY_GIB[instanceClass];
  if (!gib) return undefined;
  const maxConnections = Math.min(Math.floor((gib * 0.9 * 1024 ** 3) / 9531392), 5000);
  return { maxConnections, forApi: maxConnections - RESERVED_FOR_OTHERS };
}

/** With lanyard:rdsProxy: the share of max_connections the proxy may open (the rest: superuser, operators). */
export const PROXY_MAX_CONNECTIONS_PERCENT = 90;
/**
 * API instances per database connection through the proxy. A warm instance holds its database
 * session only while a statement runs (the proxy multiplexes between transactions), and the
 * service's requests are 1–3 short statements out of several milliseconds of work, so three
 * instances per connection keeps the proxy's borrow queue short. Sessions the proxy pins (session
 * state, named prepared statements) lower this: watch DatabaseConnectionsCurrentlySessionPinned.
 */
export const PROXY_CLIENTS_PER_CONNECTION = 3;

/** The API's reserved-concurrency ceiling when every function connects through RDS Proxy. */
export function proxyConnectionBudget(
  instanceClass: string,
): (ConnectionBudget & { proxyConnections: number }) | undefined {
  const direct = connectionBudget(instanceClass);
  if (!direct) return undefined;
  const proxyConnections = Math.floor((direct.maxConnections * PROXY_MAX_CONNECTIONS_PERCENT) / 100);
  const forOtherFunctions = 1 /* migrate */ + 2; /* admin */
  return {
    maxConnections: direct.maxConnections,
    proxyConnections,
    forApi: (proxyConnections - forOtherFunctions) * PROXY_CLIENTS_PER_CONNECTION,
  };
}

/**
 * MAIL_SEND_RATE of each mail sender instance: the SES account's maximum send rate shared by the
 * queue's maximum concurrency (each instance paces itself with a token bucket), rounded down so the
 * sum never exceeds the account's rate.
 */
export function senderInstanceRate(sendRate: number, maxConcurrency: number): string {
  return String(Math.floor((sendRate / maxConcurrency) * 1000) / 1000);
}
