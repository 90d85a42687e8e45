// Debian's python-gitlab, unmodified, for the client tests: the python that runs it and its version,
// or undefined (the reason printed) where it is not installed, so that those tests skip.
import { execFile, execFileSync } from 'node:child_process';
import { promisify } from 'node:util';

export const PYTHON = '/usr/bin/python3';
export const execFileAsync = promisify(execFile);

function installedVersion(): string | undefined {
  try {
    return execFileSync(PYTHON, ['-c', 'import gitlab; print(gitlab.__version__)'], { encoding: 'utf8' }).trim();
  } catch {
    return undefined;
  }
}

export const pythonGitlabVersion = installedVersion();
if (!pythonGitlabVersion) {
  console.warn(
    `[python-gitlab] skipped: ${PYTHON} cannot import gitlab (install Debian's python3-gitlab; .ci/run does)`,
  );
}
