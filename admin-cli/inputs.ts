// What the runner gathers before a command runs: a password (never from argv unless the operator
// insists) and, for destructive commands, a confirmation. Both happen on the operator's machine,
// also when the command then runs in the admin Lambda.
import type { CliIo } from './io';
import { PromptAborted } from './io';
import { UsageError, UserError } from './errors';

export interface PasswordArgs {
  password?: string;
  passwordStdin?: boolean;
}

export const PASSWORD_FLAG_WARNING =
  'warning: --password leaves the password in your shell history and the process list; prefer --password-stdin or the prompt';

/** --password (with a warning), --password-stdin, or a hidden prompt asked twice on a terminal. */
export async function readPassword(args: PasswordArgs, io: CliIo): Promise<string> {
  if (typeof args.password === 'string' && args.passwordStdin)
    throw new UsageError('give --password or --password-stdin, not both');
  if (typeof args.password === 'string') {
    io.stderr(`lanyard-admin: ${PASSWORD_FLAG_WARNING}\n`);
    return args.password;
  }
  if (args.passwordStdin) {
    // One trailing newline is the pipe's, not the password's (`echo pw |`, a file with an EOL).
    const text = (await io.readStdin()).replace(/\r?\n$/, '');
    if (!text) throw new UserError('no password on standard input (--password-stdin)');
    if (/[\r\n]/.test(text)) throw new UserError('the password on standard input spans several lines');
    return text;
  }
  if (io.interactive && io.promptHidden) {
    const first = await ask(() => io.promptHidden!('Password: '));
    const second = await ask(() => io.promptHidden!('Confirm password: '));
    if (first !== second) throw new UserError('the passwords do not match; nothing changed');
    return first;
  }
  throw new UserError('a password is required: pipe it to --password-stdin (or run on a terminal to be prompted)');
}

/** Destructive commands: --yes, or "y" at a terminal prompt; refused otherwise. */
export async function confirm(question: string, yes: boolean | undefined, io: CliIo): Promise<void> {
  if (yes) return;
  if (!io.interactive || !io.promptLine) {
    throw new UserError(`${question.replace(/\?.*$/, '')}: refusing without --yes (not on a terminal)`);
  }
  const answer = await ask(() => io.promptLine!(`${question} [y/N] `));
  if (!/^y(es)?$/i.test(answer.trim())) throw new UserError('aborted; nothing changed');
}

async function ask(question: () => Promise<string>): Promise<string> {
  try {
    return await question();
  } catch (err) {
    if (err instanceof PromptAborted) throw new UserError('aborted; nothing changed');
    throw err;
  }
}
