// The CLI's streams, behind an interface so the same command code runs in a terminal, in tests
// and inside the admin Lambda (where stdout/stderr are captured and returned to the caller).
import { Writable } from 'node:stream';

export interface CliIo {
  stdout(text: string): void;
  stderr(text: string): void;
  /** All of standard input (for --password-stdin). */
  readStdin(): Promise<string>;
  /** A person at a terminal: hidden prompts and confirmations are possible. */
  interactive: boolean;
  /** The terminal's width when stdout is a terminal (tables are fitted to it, QR codes drawn);
   *  undefined for files, pipes and the admin Lambda. */
  columns?: number;
  /** Ask without echoing the answer (passwords). Only when `interactive`. */
  promptHidden?(question: string): Promise<string>;
  /** Ask for a line (confirmations). Only when `interactive`. */
  promptLine?(question: string): Promise<string>;
}

/** Captured output, for tests and the admin Lambda. */
export interface BufferedIo extends CliIo {
  readonly out: string;
  readonly err: string;
}

export function bufferedIo(options: { stdin?: string; answers?: string[]; columns?: number } = {}): BufferedIo {
  let out = '';
  let err = '';
  const answers = options.answers ? [...options.answers] : undefined;
  const ask = async (question: string) => {
    err += question;
    const answer = answers!.shift();
    if (answer === undefined) throw new Error(`no scripted answer for "${question}"`);
    err += '\n'; // where the operator's Enter would be
    return answer;
  };
  return {
    get out() {
      return out;
    },
    get err() {
      return err;
    },
    stdout: (text) => {
      out += text;
    },
    stderr: (text) => {
      err += text;
    },
    readStdin: async () => options.stdin ?? '',
    interactive: answers !== undefined,
    columns: options.columns,
    promptHidden: answers && ask,
    promptLine: answers && ask,
  };
}

/** The real terminal. Prompts go to stderr, so stdout stays clean for --json. */
export function processIo(): CliIo {
  const interactive = Boolean(process.stdin.isTTY && process.stderr.isTTY);
  return {
    stdout: (text) => void process.stdout.write(text),
    stderr: (text) => void process.stderr.write(text),
    readStdin,
    interactive,
    columns: process.stdout.isTTY ? process.stdout.columns : undefined,
    promptHidden: interactive ? (q) => prompt(q, true) : undefined,
    promptLine: interactive ? (q) => prompt(q, false) : undefined,
  };
}

async function readStdin(): Promise<string> {
  const chunks: Buffer[] = [];
  for await (const chunk of process.stdin) chunks.push(Buffer.isBuffer(chunk) ? chunk : Buffer.from(chunk));
  return Buffer.concat(chunks).toString('utf8');
}

/** Interrupted at a prompt (Ctrl-C / Ctrl-D): treated as the operator declining. */
export class PromptAborted extends Error {}

async function prompt(question: string, hidden: boolean): Promise<string> {
  const readline = await import('node:readline');
  // A muted output stream hides the typed characters while readline still handles editing keys.
  let muted = false;
  const output = new Writable({
    write(chunk, _encoding, done) {
      if (!muted) process.stderr.write(chunk);
      done();
    },
  });
  const rl = readline.createInterface({ input: process.stdin, output, terminal: true });
  let answered = false;
  try {
    return await new Promise<string>((resolve, reject) => {
      rl.on('SIGINT', () => reject(new PromptAborted('interrupted')));
      rl.on('close', () => reject(new PromptAborted('no answer')));
      rl.question(question, (answer) => {
        answered = true;
        resolve(answer);
      });
      muted = hidden;
    });
  } finally {
    // The Enter the operator typed was not echoed (hidden), or never came (Ctrl-C, Ctrl-D).
    if (hidden || !answered) process.stderr.write('\n');
    rl.removeAllListeners('close');
    rl.close();
  }
}
