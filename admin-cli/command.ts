// What a command module is: its place in the command tree, its options, its --help examples,
// the inputs the runner gathers for it (a password, a confirmation) and `run`, a thin adapter
// from parsed arguments to the shared domain functions. `run` never prints: it returns a Result.
import type { Argv } from 'yargs';
import type { Db, DbOrTrx } from '../service/db/schema';
import type { MailConfig } from '../service/config';
import type { MailSettings } from '../service/domain/mail/account-messages';
import type { KeyRing } from '../service/domain/service-keys';
import type { MailTransport } from '../service/mail/transport';
import type { Result } from './output';

/** What a command needs beyond the database, swapped where it runs (the admin Lambda keeps the
 *  service key ring in Secrets Manager, a local run in a file under LANYARD_HOME). */
export interface AdminServices {
  rotateSessionKey(db: DbOrTrx, actor: string): Promise<{ rotated: true }>;
  /** The OpenID Connect signing key: a file under LANYARD_HOME locally, Secrets Manager deployed. */
  rotateSigningKey(
    db: DbOrTrx,
    actor: string,
    /** Seconds until a newly staged key signs; default: the JWKS cache age plus the key cache. */
    activateAfterSeconds?: number,
  ): Promise<{ rotated: true; kid: string; step: 'staged' | 'activated'; activates_at: string }>;
  /** The service key ring (it seals TOTP secrets): LANYARD_HOME's file locally, Secrets Manager's deployed. */
  keyRing(db: DbOrTrx): Promise<KeyRing>;
  /** `db migrate`: locally the service keys move out of the database first (migrateLocalDatabase). */
  migrate(db: Db): Promise<{ applied: string[]; pending: string[]; newlyApplied: string[] }>;
  /** The mail configuration (MAIL_URL, MAIL_FROM, …) and its transport, for `mail …` and `db prune`. */
  mail(): MailServices;
}

export interface MailServices {
  config: MailConfig;
  /** PUBLIC_URL: links in messages. */
  publicUrl: string;
  /** A new transport (the caller closes it). */
  transport(): MailTransport;
}

export interface CommandContext {
  /** A transaction for this one command (committed only if `run` returns), or the plain
   *  handle for commands that manage their own transactions (`transaction: false`). */
  db: DbOrTrx;
  /** Who is acting, for the audit trail: `cli:<os user>` locally, the IAM caller remotely. */
  actor: string;
  /** The password gathered by the runner (commands declaring `password: true`). */
  password?: string;
  services: AdminServices;
  /** stdout is a terminal (not a file, a pipe or the admin Lambda): worth drawing a QR code on. */
  terminal: boolean;
  /** One line of progress for the operator, on stderr (stdout stays the result, one JSON with --json). */
  progress(line: string): void;
  /** What account e-mails (security alerts, confirmation links) need: PUBLIC_URL and MAIL_FROM. */
  mailSettings(): MailSettings;
}

export interface AdminCommand<A = unknown> {
  /** The words leading to it, the last with its positionals: ['users', 'show <username>']. */
  path: readonly string[];
  describe: string;
  /** At least one, shown by --help: [command line without the program name, what it does]. */
  examples: ReadonlyArray<readonly [string, string]>;
  options?: (y: Argv) => Argv;
  /** Reads a password: --password (warns), --password-stdin, or a hidden prompt on a terminal. */
  password?: boolean;
  /** Destructive: the question asked on a terminal; elsewhere --yes is required. */
  confirm?(args: A): string;
  /** false: run outside a per-command transaction (migrations take their own locks). */
  transaction?: boolean;
  /** false: may run against a database whose migrations are pending (db migrate/status). */
  needsSchema?: boolean;
  run(args: A, ctx: CommandContext): Promise<Result>;
}

export const defineCommand = <A>(command: AdminCommand<A>): AdminCommand<A> => command;

/** Where commands run: a database opened on first use and closed when the CLI is done. */
export interface Target {
  db(): Promise<Db>;
  close(): Promise<void>;
}
