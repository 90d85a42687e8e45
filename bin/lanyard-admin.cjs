#!/usr/bin/env node
// `lanyard-admin` (package bin; `npx lanyard-admin` in the repository): runs admin-cli/main.ts
// through tsx's CommonJS loader, so the CLI is always the checked-out source, never a stale build.
'use strict';
const path = require('node:path');

let api;
try {
  api = require('tsx/cjs/api');
} catch {
  process.stderr.write('lanyard-admin: cannot load tsx (run `npm install` in the Lanyard repository)\n');
  process.exitCode = 2;
}
if (api) {
  api.register();
  require(path.join(__dirname, '..', 'admin-cli', 'main.ts'));
}
