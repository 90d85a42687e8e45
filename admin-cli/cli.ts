// runCli: parse the arguments with yargs, gather inputs, run one command against the target (or
// send it to the admin Lambda), print its result, and return the exit code. The process entry
// (main.ts), the tests and the admin Lambda all call this; nothing here exits the process.
import os from 'node:os';
import type { Argv } from 'yargs';
import packageJson from '../package.json';
import { migrationStatus } from '../service/db/migrator';
import { rotateSessionKey } from '../service/domain/service-keys';
import { fileKeyRingSource, migrateLocalDatabase, serviceKeyFileStore } from '../service/local/service-key-file';
import { loadConfig, signingKeyPolicy } from '../service/config';
import { createMailTransport } from '../service/mail/transports';
import { fileSigningKeyService } from './function/signing-keys';
import type { AdminCommand, AdminServices, Target } from './command';
import { COMMANDS, GROUPS } from './commands';
import { EXIT_FAILURE, EXIT_OK, EXIT_USER_ERROR, UsageError, UserError, isUserFacing, oneLine } from './errors';
import { confirm, readPassword } from './inputs';
import type { CliIo } from './io';
import { json as toJson, type Result, withColumns } from './output';
import type { RemoteTransport } from './remote';
import { forwardedArgv, wantsRemote } from './remote-args';
import { localTarget } from './target';

export const PROGRAM = 'lanyard-admin';

export interface RunCliOptions {
  io: CliIo;
  /** The environment (DATABASE_URL, LANYARD_HOME); default process.env. */
  env?: NodeJS.ProcessEnv;
  /** Where commands run; default: DATABASE_URL or the local embedded database. */
  target?: Target;
  /** Who is acting (audit trail); default `cli:<os user>`. */
  actor?: string;
  services?: Partial<AdminServices>;
  /** How --function/--stack reach the admin Lambda (main.ts passes lambdaTransport()); absent
   *  inside the admin Lambda itself, where those flags make no sense. */
  remote?: RemoteTransport;
}

type Outcome = { result: Result } | { remote: { exitCode: number; stdout: string; stderr: string } };

/** Local services: the service key ring and the signing key files under LANYARD_HOME. */
const localServices = (env: NodeJS.ProcessEnv): AdminServices => ({
  rotateSessionKey: (db, actor) => rotateSessionKey(db, serviceKeyFileStore(loadConfig(env).home), actor),
  keyRing: () => fileKeyRingSource(loadConfig(env).home).load(),
  migrate: (db) => migrateLocalDatabase(db, loadConfig(env).home, () => undefined),
  rotateSigningKey: (db, actor, activateAfterSeconds) => {
    const config = loadConfig(env);
    return fileSigningKeyService(config.home, signingKeyPolicy(config))(db, actor, activateAfterSeconds);
  },
  mail: () => {
    const config = loadConfig(env);
    const aws = config.aws && { region: config.aws.region, credentials: config.aws.credentials };
    return {
      config: config.mail,
      publicUrl: config.publicUrl,
      transport: () => createMailTransport(config.mail, { aws }),
    };
  },
});

let yargsFactory: Promise<(args?: string[]) => Argv> | undefined;
// yargs 18 is ESM-only; this package is CommonJS.
const loadYargs = () =>
  (yargsFactory ??= import('yargs').then((m) => m.default as unknown as (args?: string[]) => Argv));

export async function runCli(argv: readonly string[], options: RunCliOptions): Promise<number> {
  const { io } = options;
  const env = options.env ?? process.env;
  const target = options.target ?? localTarget(env, (line) => io.stderr(`${line}\n`));
  const services = { ...localServices(env), ...options.services };
  const actor = options.actor ?? `cli:${osUser()}`;
  const wantsJson = argv.some((a) => a === '--json' || a === '--json=true');
  let outcome: Outcome | undefined;

  const execute = async (command: AdminCommand, args: Record<string, unknown>): Promise<Outcome> => {
    const remote = wantsRemote(args);
    if (remote && !options.remote)
      throw new UsageError('--function and --stack cannot be used here (inside the admin function)');
    const password = command.password ? await readPassword(args, io) : undefined;
    if (command.confirm) await confirm(command.confirm(args), args.yes === true, io);
    if (remote) {
      const transport = options.remote!;
      const fn = await transport.resolve(args, env);
      const payload = {
        argv: forwardedArgv(argv, { password: password !== undefined, confirmed: !!command.confirm }),
        stdin: password,
        actor: await transport.identity(fn),
      };
      return { remote: await transport.invoke(fn, payload) };
    }
    const db = await target.db();
    if (command.needsSchema !== false) await requireSchema(db);
    const context = {
      actor,
      password,
      services,
      terminal: io.columns !== undefined,
      progress: (line: string) => io.stderr(`${line}\n`),
      // Read when a command mails (a security alert, a confirmation link), not before.
      mailSettings: () => {
        const config = loadConfig(env);
        return { publicUrl: config.publicUrl, from: config.mail.from };
      },
    };
    // One transaction per command: a command that fails changes nothing.
    // Tables are fitted to the terminal's width (80 off a terminal).
    const result = await withColumns(io.columns, () =>
      command.transaction === false
        ? command.run(args, { ...context, db })
        : db.transaction().execute((trx) => command.run(args, { ...context, db: trx })),
    );
    return { result };
  };

  let helpOutput = '';
  try {
    const parser = buildParser(
      await loadYargs(),
      async (command, args) => {
        outcome = await execute(command, args);
      },
      io.columns,
    );
    await parser.parseAsync([...argv], {}, (_err: unknown, _args: unknown, output: string) => {
      helpOutput = output ?? '';
    });
  } catch (err) {
    return report(err, io, wantsJson, helpCommand(argv), Boolean(env.LANYARD_DEBUG));
  } finally {
    await target.close().catch(() => undefined);
  }
  if (!outcome) {
    // --help (or --version): yargs rendered it instead of running a command.
    if (helpOutput) io.stdout(helpOutput.endsWith('\n') ? helpOutput : `${helpOutput}\n`);
    return EXIT_OK;
  }
  if ('remote' in outcome) {
    io.stderr(outcome.remote.stderr);
    io.stdout(outcome.remote.stdout);
    return outcome.remote.exitCode;
  }
  io.stdout(`${wantsJson ? toJson(outcome.result.json) : outcome.result.text}\n`);
  return EXIT_OK;
}

/** Exit 1 with one line for what the operator can fix; exit 2 for anything else (a bug). */
function report(err: unknown, io: CliIo, wantsJson: boolean, helpFor: string, debug: boolean): number {
  const userFacing = isUserFacing(err);
  const message = userFacing
    ? oneLine(err.message)
    : `unexpected error: ${oneLine((err as Error)?.message ?? String(err))}`;
  const hint = err instanceof UsageError ? ` (see ${helpFor} --help)` : '';
  io.stderr(`${PROGRAM}: ${message}${hint}\n`);
  if (!userFacing && debug && (err as Error)?.stack) io.stderr(`${(err as Error).stack}\n`);
  // --json promises one JSON document on stdout, failures included.
  if (wantsJson) io.stdout(`${toJson({ error: message })}\n`);
  return userFacing ? EXIT_USER_ERROR : EXIT_FAILURE;
}

/** The deepest known command named by argv's leading words ("lanyard-admin users create"). */
function helpCommand(argv: readonly string[]): string {
  const words: string[] = [];
  for (const arg of argv) {
    if (arg.startsWith('-')) break;
    const next = [...words, arg];
    if (!COMMANDS.some((c) => next.every((w, i) => c.path[i]?.split(' ')[0] === w))) break;
    words.push(arg);
  }
  return [PROGRAM, ...words].join(' ');
}

async function requireSchema(db: Parameters<typeof migrationStatus>[0]): Promise<void> {
  const { pending } = await migrationStatus(db);
  if (pending.length) {
    throw new UserError(`the database has ${pending.length} pending migration(s): run \`${PROGRAM} db migrate\` first`);
  }
}

function osUser(): string {
  try {
    return os.userInfo().username;
  } catch {
    return 'unknown';
  }
}

type Run = (command: AdminCommand, args: Record<string, unknown>) => Promise<void>;

/** Mount the command table on a fresh yargs instance (one per run: the Lambda runs many). */
export function buildParser(yargs: (args?: string[]) => Argv, run: Run, columns?: number): Argv {
  const helpWidth = Math.min(100, columns ?? DEFAULT_HELP_COLUMNS);
  const y = yargs()
    .scriptName(PROGRAM)
    .usage(
      `$0 <command> [options]\n\nAdminister Lanyard: users, OAuth applications, tokens, groups, projects, members, secrets.`,
    )
    .option('json', { type: 'boolean', global: true, describe: 'Print exactly one JSON document on stdout' })
    .option('function', {
      type: 'string',
      global: true,
      describe: "Run in a deployed stack's admin Lambda (name or ARN)",
    })
    .option('stack', { type: 'string', global: true, describe: 'Run in the admin Lambda of this Pulumi stack' })
    .option('region', { type: 'string', global: true, describe: 'AWS region of --function/--stack' })
    .epilogue(
      'Target: DATABASE_URL, else the local embedded PostgreSQL that `npm start` uses (started on demand).\n' +
        'Exit codes: 0 success, 1 user error (nothing changed), 2 unexpected failure.',
    )
    .strict()
    .demandCommand(1, 'give a command')
    .recommendCommands()
    .exitProcess(false)
    .fail((message, err) => {
      throw err ?? new UsageError(message ?? 'invalid arguments');
    })
    .help()
    .alias('help', 'h')
    .version(packageJson.version)
    .wrap(helpWidth);
  examples(
    y,
    [
      ['users create --username alice --email alice@example.com', 'create a user (prompts for the password)'],
      ['apps list --stack prod', "list the applications of the deployed stack 'prod'"],
    ],
    helpWidth,
  );
  mount(y, [], 0, run, helpWidth);
  return y;
}

function mount(y: Argv, prefix: string[], depth: number, run: Run, helpWidth: number): void {
  const below = COMMANDS.filter(
    (c) => prefix.every((word, i) => c.path[i].split(' ')[0] === word) && c.path.length > depth,
  );
  const seen = new Set<string>();
  for (const command of below) {
    const word = command.path[depth].split(' ')[0];
    if (seen.has(word)) continue;
    seen.add(word);
    if (command.path.length === depth + 1) {
      y.command(
        command.path[depth],
        command.describe,
        (cy) => leafBuilder(cy, command, helpWidth),
        (args) => run(command, args),
      );
    } else {
      const group = [...prefix, word];
      y.command(word, GROUPS[group.join(' ')] ?? word, (gy) => {
        mount(gy, group, depth + 1, run, helpWidth);
        return gy.usage(`$0 ${group.join(' ')} <command>`).demandCommand(1, `give a ${group.join(' ')} command`);
      });
    }
  }
}

const DEFAULT_HELP_COLUMNS = 80;

/** Examples as whole lines: what it does as a comment, then the command on lines of its own,
 *  continued with ` \` before an option when it is longer than the help's width. yargs' two-column
 *  layout would squeeze the command into half the width and break it mid-word. */
function examples(y: Argv, list: ReadonlyArray<readonly [string, string]>, wrap: number): Argv {
  for (const [line, what] of list)
    y.example(comment(what, wrap - 4), '').example(shellLines(`$0 ${line}`, wrap - 4), '');
  return y;
}

/** "# " lines of at most `width`, broken at spaces. */
function comment(text: string, width: number): string {
  const lines: string[] = [];
  for (const word of text.split(' ')) {
    const last = lines.length - 1;
    if (last >= 0 && lines[last].length + 1 + word.length <= width) lines[last] += ` ${word}`;
    else lines.push(`# ${word}`);
  }
  return lines.join('\n');
}

/** A command broken before its `--options` (an option stays with its value) into lines of at most
 *  `width`, each but the last ending in ` \` — still one command when pasted into a shell. */
function shellLines(command: string, width: number): string {
  const words = command.match(/(?:[^\s"']+|"[^"]*"|'[^']*')+/g) ?? [command];
  const parts: string[] = [];
  for (const word of words) {
    if (word.startsWith('-') || !parts.length) parts.push(word);
    else parts[parts.length - 1] += ` ${word}`;
  }
  // `$0` is replaced by the program name after this: count it at its real length.
  const len = (s: string) => s.replace('$0', PROGRAM).length;
  const lines: string[] = [];
  for (const part of parts) {
    const last = lines.length - 1;
    if (last >= 0 && len(`${lines[last]} ${part} \\`) <= width) lines[last] += ` ${part}`;
    else lines.push(part);
  }
  return lines.join(' \\\n');
}

const GLOBAL_OPTIONS = ['json', 'function', 'stack', 'region', 'help', 'version'];
/** yargs' getOptions(), which @types/yargs 17 does not declare. */
const optionKeys = (y: Argv): string[] =>
  Object.keys((y as Argv & { getOptions(): { key: Record<string, unknown> } }).getOptions().key);

function leafBuilder(y: Argv, command: AdminCommand, helpWidth: number): Argv {
  const known = new Set(optionKeys(y));
  let cy = command.options ? command.options(y) : y;
  if (command.password) {
    cy = cy
      .option('password', {
        type: 'string',
        describe: 'The password (lands in shell history: prefer --password-stdin or the prompt)',
      })
      .option('password-stdin', { type: 'boolean', describe: 'Read the password from standard input' })
      .conflicts('password', 'password-stdin');
  }
  if (command.confirm)
    cy = cy.option('yes', {
      alias: 'y',
      type: 'boolean',
      describe: 'Do not ask for confirmation (required when not on a terminal)',
    });
  examples(cy, command.examples, helpWidth);
  // --help lists the command's own options first, then the global ones.
  const positionals = [...command.path[command.path.length - 1].matchAll(/<([^>]+)>/g)].map((m) => m[1]);
  const own = optionKeys(cy).filter(
    (k) => !known.has(k) && /^[a-z-]+$/.test(k) && k !== 'y' && !positionals.includes(k),
  );
  if (own.length) cy = cy.group(own, 'Options:');
  return cy.group(GLOBAL_OPTIONS, 'Global options:');
}
