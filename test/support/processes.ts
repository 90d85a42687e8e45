// Run the real entry points as subprocesses (node with tsx's loader), collecting output; always cleaned up.
import { spawn, type ChildProcess } from 'node:child_process';
import path from 'node:path';
import { afterAll } from 'vitest';

export const ROOT = path.resolve(__dirname, '../..');

const children = new Set<ChildProcess>();
afterAll(() => {
  for (const c of children) c.kill('SIGKILL');
});

export interface Running {
  child: ChildProcess;
  output: () => { stdout: string; stderr: string };
  waitFor: (re: RegExp, timeoutMs?: number) => Promise<RegExpMatchArray>;
  exited: Promise<number | null>;
}

/**
 * Run node itself with tsx's CommonJS loader, as `npm start` does, not the tsx wrapper: its own
 * process would stand between a signal and the program, and it relays SIGTERM and SIGINT by
 * waiting 30 ms for the program to report the signal, then SIGKILLs it (exit 143), which on a
 * loaded machine cut the graceful shutdown these tests check.
 */
export function start(script: string, args: string[], env: NodeJS.ProcessEnv): Running {
  const child = spawn(process.execPath, ['--require', 'tsx/cjs', script, ...args], {
    cwd: ROOT,
    env: { ...process.env, ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  children.add(child);
  let stdout = '';
  let stderr = '';
  const listeners = new Set<() => void>();
  child.stdout!.on('data', (d) => {
    stdout += d;
    for (const l of listeners) l();
  });
  child.stderr!.on('data', (d) => {
    stderr += d;
    for (const l of listeners) l();
  });
  const exited = new Promise<number | null>((resolve) =>
    child.on('exit', (code) => {
      children.delete(child);
      for (const l of listeners) l();
      resolve(code);
    }),
  );
  return {
    child,
    exited,
    output: () => ({ stdout, stderr }),
    waitFor: (re, timeoutMs = 30_000) =>
      new Promise((resolve, reject) => {
        const timer = setTimeout(
          () => reject(new Error(`timed out waiting for ${re}; stdout=${stdout} stderr=${stderr}`)),
          timeoutMs,
        );
        const check = () => {
          const m = stdout.match(re);
          if (m) {
            clearTimeout(timer);
            listeners.delete(check);
            resolve(m);
          } else if (child.exitCode !== null) {
            clearTimeout(timer);
            listeners.delete(check);
            reject(new Error(`exited with ${child.exitCode} before ${re}; stdout=${stdout} stderr=${stderr}`));
          }
        };
        listeners.add(check);
        check();
      }),
  };
}

export async function runToEnd(script: string, args: string[], env: NodeJS.ProcessEnv) {
  const r = start(script, args, env);
  const code = await r.exited;
  return { code, ...r.output() };
}
