// The admin function's logic: run one CLI command in-process — the same yargs table and command
// modules as `lanyard-admin` — against the stack's database, capture what it prints, and record
// one audit event per invocation. Built by a factory so tests drive it with a test database.
import { runCli } from '../cli';
import type { AdminServices } from '../command';
import { bufferedIo } from '../io';
import { databaseTarget } from '../target';
import type { Db } from '../../service/db/schema';
import { recordAudit } from '../../service/domain/audit';
import { invocationProblem, type AdminInvocation, type AdminInvocationResult } from './protocol';

export interface AdminHandlerOptions {
  /** The database (or how to get it once it is ready). */
  db: Db | (() => Promise<Db>);
  /** Where the deployed service keeps what it does not keep in the database (the session key ring). */
  services?: Partial<AdminServices>;
  /** The function's log (CloudWatch): one JSON line per invocation, never a secret. */
  log?: (level: 'info' | 'error', entry: Record<string, unknown>) => void;
}

export interface AdminContext {
  awsRequestId?: string;
}

/** Invoked directly through IAM (lambda:InvokeFunction); there is no HTTP route to this function. */
export function createAdminHandler(options: AdminHandlerOptions) {
  const getDb = typeof options.db === 'function' ? options.db : async () => options.db as Db;
  const log = options.log ?? ((level, entry) => console.log(JSON.stringify({ level, ...entry })));
  return async (event: unknown, context?: AdminContext): Promise<AdminInvocationResult> => {
    const problem = invocationProblem(event);
    if (problem) return { exitCode: 1, stdout: '', stderr: `lanyard-admin: invalid admin payload: ${problem}\n` };
    const { argv, stdin, actor: claimed } = event as AdminInvocation;
    // Who invoked us is not knowable here: a direct Invoke's context carries no caller identity
    // (context.identity is Cognito's), so the CLI's actor is only a claim, and is recorded as one.
    // The verified IAM caller is CloudTrail's record of this Invoke (the stack's admin-audit
    // trail), whose requestID is this invocation's request_id.
    const actor = claimed?.trim() || 'admin-function';
    const io = bufferedIo({ stdin });
    const startedAt = Date.now();
    const exitCode = await runCli(argv, { io, target: databaseTarget(getDb), actor, services: options.services });
    const details = {
      argv: redactArgv(argv),
      exit_code: exitCode,
      request_id: context?.awsRequestId ?? null,
      via: 'admin-function',
      claimed_actor: claimed?.trim() || null,
      actor_verified: false,
      verified_by: 'cloudtrail-invoke-record',
    };
    try {
      await recordAudit(await getDb(), {
        actor,
        action: 'admin.command',
        targetType: 'admin_command',
        targetId: commandName(argv),
        details,
      });
    } catch (err) {
      // The command's own outcome stands; the log keeps the trail.
      log('error', { msg: 'could not record the admin audit event', error: (err as Error).message, ...details, actor });
    }
    log('info', {
      msg: 'admin command',
      actor,
      command: commandName(argv),
      exit_code: exitCode,
      ms: Date.now() - startedAt,
    });
    return { exitCode, stdout: io.out, stderr: io.err };
  };
}

/** The command words, e.g. "users create" (the words before the first option). */
export function commandName(argv: readonly string[]): string {
  const words: string[] = [];
  for (const a of argv) {
    if (a.startsWith('-')) break;
    words.push(a);
    if (words.length === 3) break;
  }
  return words.join(' ') || '(none)';
}

/** A password must never reach the audit trail, even if an invoker put it in argv. */
export function redactArgv(argv: readonly string[]): string[] {
  const out: string[] = [];
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i];
    if (a === '--password') {
      out.push(a);
      if (i + 1 < argv.length) out.push('[redacted]');
      i++;
    } else if (a.startsWith('--password=')) {
      out.push('--password=[redacted]');
    } else {
      out.push(a);
    }
  }
  return out;
}
