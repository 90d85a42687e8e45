// The direction of every import, and where SQL may be written (ARCHITECTURE.md), over every `.ts`
// and `.tsx` file of service/, admin-cli/, infra/, migrations/ and bench/: parsed from the source
// text, so a violating import fails here before review. No database needed.
import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';

const ROOT = path.resolve(__dirname, '..');

function sourceFiles(dir: string): string[] {
  return readdirSync(path.join(ROOT, dir), { withFileTypes: true, recursive: true })
    .filter((e) => e.isFile() && /\.(ts|tsx|mts|cts)$/.test(e.name))
    .map((e) => path.relative(ROOT, path.join(e.parentPath, e.name)).split(path.sep).join('/'));
}

interface Import {
  file: string;
  /** The specifier as written. */
  specifier: string;
  /** Repository-relative path for relative specifiers ('service/domain/users'), else the package name. */
  target: string;
}

/** Static imports and exports, `import type` included, and dynamic import('…') with a literal. */
const IMPORT_RE =
  /(?:^|[\s;])(?:import|export)\s[^'";]*?\sfrom\s*['"]([^'"]+)['"]|import\s*\(\s*['"]([^'"]+)['"]\s*\)/g;

function importsOf(file: string): Import[] {
  const text = readFileSync(path.join(ROOT, file), 'utf8');
  const out: Import[] = [];
  for (const m of text.matchAll(IMPORT_RE)) {
    const specifier = m[1] ?? m[2];
    const target = specifier.startsWith('.')
      ? path.posix.normalize(path.posix.join(path.posix.dirname(file), specifier)).replace(/\.js$/, '')
      : specifier;
    out.push({ file, specifier, target });
  }
  return out;
}

const FILES = ['service', 'admin-cli', 'infra', 'migrations', 'bench'].flatMap(sourceFiles);
const IMPORTS = FILES.flatMap(importsOf);

const under = (p: string, dir: string) => p === dir || p.startsWith(`${dir}/`);
const from = (dir: string) => IMPORTS.filter((i) => under(i.file, dir));
const show = (imports: Import[]) => imports.map((i) => `${i.file} imports '${i.specifier}'`);

describe('import directions', () => {
  it('finds the imports it checks (the parser is not blind)', () => {
    expect(FILES).toContain('service/domain/users.ts');
    expect(FILES).toContain('service/routes/oauth/device.tsx');
    expect(FILES).toContain('migrations/0001-initial-schema.ts');
    expect(IMPORTS).toContainEqual({
      file: 'service/routes/oauth/device.tsx',
      specifier: '../../pages/layout',
      target: 'service/pages/layout',
    });
    expect(IMPORTS).toContainEqual({
      file: 'service/routes/api/user.ts',
      specifier: '../../domain/access-tokens',
      target: 'service/domain/access-tokens',
    });
  });

  it('domain/ imports only domain/, db/, shared/ and plain libraries: no Fastify, yargs, Pulumi or AWS SDK', () => {
    const bad = from('service/domain').filter((i) =>
      i.specifier.startsWith('.')
        ? !['service/domain', 'service/db', 'service/shared'].some((d) => under(i.target, d))
        : /^(fastify|@fastify\/|yargs|@pulumi\/|@aws-sdk\/)/.test(i.specifier),
    );
    expect(show(bad)).toEqual([]);
  });

  it('domain/ reads no process.env (config.ts parses it once)', () => {
    const bad = sourceFiles('service/domain').filter((f) =>
      /process\.env/.test(readFileSync(path.join(ROOT, f), 'utf8')),
    );
    expect(bad).toEqual([]);
  });

  it('db/ imports nothing above it', () => {
    const bad = from('service/db').filter(
      (i) =>
        i.specifier.startsWith('.') &&
        !under(i.target, 'service/db') &&
        !under(i.target, 'migrations') &&
        !under(i.target, 'service/shared'),
    );
    expect(show(bad)).toEqual([]);
  });

  it('oauth/ and http/ never import each other', () => {
    const bad = [
      ...from('service/oauth').filter((i) => under(i.target, 'service/http')),
      // The error handler is the one place that serialises every error class, OAuth's included.
      ...from('service/http').filter(
        (i) => under(i.target, 'service/oauth') && i.file !== 'service/http/error-handler.ts',
      ),
    ];
    expect(show(bad)).toEqual([]);
  });

  it('nothing below routes/ imports routes/ (routes are the top, registered by app.ts)', () => {
    const bad = IMPORTS.filter(
      (i) => under(i.target, 'service/routes') && !under(i.file, 'service/routes') && i.file !== 'service/app.ts',
    );
    expect(show(bad)).toEqual([]);
  });

  it('routes/oauth and routes/web do not borrow each other’s helpers (shared pages live in pages/)', () => {
    const bad = [
      ...from('service/routes/oauth').filter((i) => under(i.target, 'service/routes/web')),
      ...from('service/routes/web').filter((i) => under(i.target, 'service/routes/oauth')),
      ...from('service/routes/api').filter(
        (i) => under(i.target, 'service/routes/web') || under(i.target, 'service/routes/oauth'),
      ),
    ];
    expect(show(bad)).toEqual([]);
  });

  it('only the entry points import app.ts (route plugins take AppContext from app-context.ts)', () => {
    const importers = IMPORTS.filter((i) => i.target === 'service/app').map((i) => i.file);
    // openapi-document.ts and schema-code.ts: the build-time entries that render the OpenAPI
    // document and the route schemas' compiled code for the Lambda bundle.
    expect([...new Set(importers)].sort()).toEqual([
      'service/lambda.ts',
      'service/openapi-document.ts',
      'service/schema-code.ts',
      'service/server.ts',
    ]);
  });

  it('service/ never imports admin-cli/ or infra/', () => {
    const bad = from('service').filter((i) => under(i.target, 'admin-cli') || under(i.target, 'infra'));
    expect(show(bad)).toEqual([]);
  });

  it('admin-cli commands reach the service through domain/ and db/ only (no routes, http, oauth)', () => {
    const bad = from('admin-cli/commands').filter((i) =>
      ['service/routes', 'service/http', 'service/oauth', 'service/pages'].some((d) => under(i.target, d)),
    );
    expect(show(bad)).toEqual([]);
  });

  it('the Pulumi program imports no service or CLI code (only the bundle script, infra/build/, reads service files)', () => {
    const bad = from('infra').filter(
      (i) => !under(i.file, 'infra/build') && (under(i.target, 'service') || under(i.target, 'admin-cli')),
    );
    expect(show(bad)).toEqual([]);
  });
});

describe('where SQL is written', () => {
  // Production code: SQL only in domain/ (the rules) and db/ (connections, migrator, statements);
  // migrations/ are SQL by nature. bench/ and test/ are not checked: they seed worlds and read the
  // database directly as the witness of what the app did (bench also times plain-SELECT baselines),
  // and nothing in production imports them (see 'service/ never imports …' above).
  const SQL: Array<[string, RegExp]> = [
    ['sql`…`', /\bsql\s*`/],
    ['sql.raw/ref/lit/…', /\bsql\.(raw|ref|lit|id|table|join|val|value)\s*\(/],
    ['.selectFrom(', /\.selectFrom\s*\(/],
    ['.selectNoFrom(', /\.selectNoFrom\s*\(/],
    ['.insertInto(', /\.insertInto\s*\(/],
    ['.replaceInto(', /\.replaceInto\s*\(/],
    ['.updateTable(', /\.updateTable\s*\(/],
    ['.deleteFrom(', /\.deleteFrom\s*\(/],
    ['.mergeInto(', /\.mergeInto\s*\(/],
    // A common table expression on a Kysely handle: db.with('name', …), db.withRecursive(…).
    ['.with(', /\.with(Recursive)?\s*\(\s*['"`]/],
    // pg's own client: client.query('select …'), pool.query({ name, text, values }).
    ['query(', /\.query\s*\(\s*(['"`]|\{\s*(name|text)\s*:)/],
  ];
  const PRODUCTION = FILES.filter((f) => ['service', 'admin-cli', 'infra'].some((d) => under(f, d)));
  const sqlIn = (files: string[]) =>
    files.flatMap((file) => {
      const text = readFileSync(path.join(ROOT, file), 'utf8');
      return SQL.filter(([, re]) => re.test(text)).map(([name]) => `${file}: ${name}`);
    });

  it('finds the SQL it forbids (the patterns are not blind)', () => {
    const found = sqlIn(['service/domain/users.ts', 'service/domain/retention.ts', 'service/db/local-postgres.ts']);
    for (const name of ['sql`…`', '.selectFrom(', '.insertInto(', '.updateTable(', 'query(']) {
      expect(
        found.some((f) => f.endsWith(`: ${name}`)),
        name,
      ).toBe(true);
    }
  });

  it('only domain/ and db/ (and migrations/) write SQL: routes, http, oauth, pages, the CLI and infra call them', () => {
    const bad = sqlIn(PRODUCTION.filter((f) => !under(f, 'service/domain') && !under(f, 'service/db')));
    expect(bad).toEqual([]);
  });
});

describe('migrations and benchmarks', () => {
  it('migrations are frozen in time: they import only each other and plain libraries', () => {
    const bad = from('migrations').filter((i) => i.specifier.startsWith('.') && !under(i.target, 'migrations'));
    expect(show(bad)).toEqual([]);
  });

  it('production code never imports test/ or bench/', () => {
    const bad = IMPORTS.filter(
      (i) =>
        ['service', 'admin-cli', 'infra', 'migrations'].some((d) => under(i.file, d)) &&
        (under(i.target, 'test') || under(i.target, 'bench')),
    );
    expect(show(bad)).toEqual([]);
  });
});

describe('credential tables', () => {
  it('no selectAll()/returningAll() on users, applications or token tables', () => {
    const TABLES = /'(users|oauth_applications|oauth_access_tokens|personal_access_tokens)'/;
    const bad: string[] = [];
    for (const file of FILES) {
      const text = readFileSync(path.join(ROOT, file), 'utf8');
      // Each query chain from its table name to the end of the statement.
      for (const m of text.matchAll(/(?:selectFrom|insertInto|updateTable|deleteFrom)\(\s*('[^']+')[^;]*?;/gs)) {
        if (TABLES.test(m[1]) && /\.(selectAll|returningAll)\(/.test(m[0])) {
          bad.push(`${file}: ${m[1]} …${m[0].match(/\.(selectAll|returningAll)\(/)?.[0]}`);
        }
      }
    }
    expect(bad).toEqual([]);
  });
});
