// CPU time spent by a benchmark's own PostgreSQL server: the postmaster and every process it started
// (backends, autovacuum, WAL writer, checkpointer), read from /proc (Linux). Only for a server this
// process started (embedded PostgreSQL): an external server's processes are not ours to count, and
// may serve other databases, so there the figure is unavailable.
import { readdirSync, readFileSync } from 'node:fs';
import { sql } from 'kysely';
import type { Db } from '../../service/db/schema';

const TICKS_PER_SECOND = 100; // USER_HZ on Linux

/** utime + stime (ms) and the parent pid of one process, or undefined when it is gone. */
function stat(pid: number): { ppid: number; cpuMs: number } | undefined {
  try {
    const text = readFileSync(`/proc/${pid}/stat`, 'utf8');
    // After the command name in parentheses (which may hold spaces): state, ppid, … utime (14), stime (15).
    const fields = text.slice(text.lastIndexOf(')') + 2).split(' ');
    return { ppid: Number(fields[1]), cpuMs: ((Number(fields[11]) + Number(fields[12])) * 1000) / TICKS_PER_SECOND };
  } catch {
    return undefined;
  }
}

export interface PostgresCpu {
  /**
   * A meter started now: each call of what it returns answers the CPU ms the server's processes
   * have used since. A process is counted from where it stood at the start (a new one from zero),
   * so one that exits in between takes only its own share of the window with it, not its life:
   * a pool's idle connection closing during a run (another scenario's, ten seconds after its last
   * use) made the total fall by all that connection had ever spent.
   */
  start(): () => number;
}

/** The server's CPU meter, or undefined when the server is not a local one this process may read. */
export async function postgresCpu(db: Db): Promise<PostgresCpu | undefined> {
  const { rows } = await sql<{ pid: number }>`
    select pid from pg_stat_activity where backend_type = 'checkpointer'`.execute(db);
  const postmaster = rows[0] && stat(rows[0].pid)?.ppid;
  if (!postmaster || !stat(postmaster)) return undefined;
  /** CPU ms so far of the postmaster and each process it started, by pid. */
  const read = (): Map<number, number> => {
    const byPid = new Map<number, number>([[postmaster, stat(postmaster)?.cpuMs ?? 0]]);
    for (const name of readdirSync('/proc')) {
      const pid = Number(name);
      if (!pid) continue;
      const s = stat(pid);
      if (s?.ppid === postmaster) byPid.set(pid, s.cpuMs);
    }
    return byPid;
  };
  return {
    start() {
      const before = read();
      return () => {
        let used = 0;
        for (const [pid, cpuMs] of read()) used += cpuMs - (before.get(pid) ?? 0);
        return used;
      };
    },
  };
}
