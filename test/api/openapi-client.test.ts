// A real generator over the served OpenAPI document: swagger-typescript-api (pinned) generates a
// typed fetch client from /api/v4/openapi.json, the TypeScript compiler type-checks code written
// against its named types and operationIds, and that code then runs against the real server.
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import { build } from 'esbuild';
import { generateApi } from 'swagger-typescript-api';
import ts from 'typescript';
import { beforeAll, describe, expect, it } from 'vitest';
import type { Db, Group, User } from '../../service/db/schema';
import { addMember, createGroup, createProject, makePat, makeUser, serveOnOwnUrl } from '../support/api-fixtures';
import { createTestDatabase } from '../support/db';

let db: Db;
let url: string;
let alice: User;
let team: Group;
let dir: string;

/** Written against the generated client: its class, operationIds and component types by name. */
const USAGE = `
import { Api, type Group, type Project, type NotificationSettings, type GlobalNotificationSettings, type CurrentUser, type Metadata } from './lanyard-api';

export async function run(baseUrl: string, token: string, groupId: number) {
  const client = new Api({ baseUrl, baseApiParams: { headers: { 'PRIVATE-TOKEN': token } } });
  const me: CurrentUser = (await client.api.getCurrentUser()).data;
  const meta: Metadata = (await client.api.getVersion()).data;
  const groups: Group[] = (await client.api.listGroups({ per_page: 1, page: 2 })).data;
  const group: Group = (await client.api.getGroup(String(groupId))).data;
  const projects: Project[] = (await client.api.listProjects({ search: 'api' })).data;
  const updated: NotificationSettings = (
    await client.api.updateGroupNotificationSettings(String(groupId), { level: 'custom', moved_project: true })
  ).data;
  const global: GlobalNotificationSettings = (await client.api.getGlobalNotificationSettings()).data;
  const fullName: string = group.full_name;
  const namespacePath: string = projects[0].namespace.full_path;
  const moved: boolean | undefined = updated.events?.moved_project;
  return {
    username: me.username,
    version: meta.version,
    secondGroup: groups.map((g) => g.full_path),
    fullName,
    namespacePath,
    moved,
    email: global.notification_email,
  };
}
`;

beforeAll(async () => {
  db = (await createTestDatabase()).db;
  ({ url } = await serveOnOwnUrl(db));
  alice = await makeUser(db, 'alice');
  await createGroup(db, { path: 'acme', name: 'Acme', visibility: 'public' });
  team = await createGroup(db, { path: 'team', name: 'Team', parent: 'acme', visibility: 'private' });
  await createProject(db, { path: 'acme/team/api', name: 'API', visibility: 'private' });
  await addMember(db, { group: 'acme/team', username: 'alice', access: 'developer' });
  dir = mkdtempSync(join(tmpdir(), 'lanyard-openapi-client-'));
});

describe('a client generated from /api/v4/openapi.json (swagger-typescript-api)', () => {
  it('generates, type-checks against the named types and operationIds, and works against the server', async () => {
    const spec = await (await fetch(`${url}/api/v4/openapi.json`)).json();
    const { files } = await generateApi({
      spec,
      output: false,
      fileName: 'lanyard-api.ts',
      httpClientType: 'fetch',
      silent: true,
    });
    expect(files).toHaveLength(1);
    writeFileSync(join(dir, 'lanyard-api.ts'), files[0].fileContent);
    writeFileSync(join(dir, 'usage.ts'), USAGE);

    const program = ts.createProgram([join(dir, 'usage.ts')], {
      strict: true,
      noEmit: true,
      target: ts.ScriptTarget.ES2022,
      module: ts.ModuleKind.ESNext,
      moduleResolution: ts.ModuleResolutionKind.Bundler,
      lib: ['lib.es2023.d.ts', 'lib.dom.d.ts'],
      types: [],
      skipLibCheck: true,
    });
    const diagnostics = ts
      .getPreEmitDiagnostics(program)
      .map((d) => ts.flattenDiagnosticMessageText(d.messageText, '\n'));
    expect(diagnostics).toEqual([]);

    const out = join(dir, 'usage.mjs');
    await build({
      entryPoints: [join(dir, 'usage.ts')],
      bundle: true,
      format: 'esm',
      platform: 'node',
      outfile: out,
      logLevel: 'silent',
    });
    const { run } = await import(pathToFileURL(resolve(out)).href);
    expect(await run(url, await makePat(db, alice, ['api']), team.id)).toEqual({
      username: 'alice',
      version: '17.11.0',
      secondGroup: ['acme/team'],
      fullName: 'Acme / Team',
      namespacePath: 'acme/team',
      moved: true,
      email: 'alice@example.com',
    });
  });

  it('every operation has a unique operationId; bodies are named component schemas', async () => {
    const doc = (await (await fetch(`${url}/api/v4/openapi.json`)).json()) as {
      paths: Record<
        string,
        Record<
          string,
          { operationId?: string; responses: Record<string, { content: Record<string, { schema: unknown }> }> }
        >
      >;
      components: { schemas: Record<string, unknown> };
    };
    const operations = Object.values(doc.paths).flatMap((ops) => Object.values(ops));
    const ids = operations.map((op) => op.operationId);
    expect(ids.every((id) => typeof id === 'string' && /^[a-z][A-Za-z]+$/.test(id))).toBe(true);
    expect(new Set(ids).size).toBe(ids.length);
    expect(Object.keys(doc.components.schemas).sort()).toEqual([
      'Application',
      'ApplicationWithSecret',
      'AuditEvent',
      'CurrentUser',
      'EffectiveNotificationSettings',
      'GlobalNotificationSettings',
      'Group',
      'GroupNotificationSettings',
      'Metadata',
      'Namespace',
      'NotificationEventBody',
      'NotificationEventReceipt',
      'NotificationEvents',
      'NotificationRecipients',
      'NotificationSettings',
      'NotificationSource',
      'PersonalAccessToken',
      'PersonalAccessTokenWithLastUsedIps',
      'PersonalAccessTokenWithToken',
      'Project',
      'User',
      'UserBasic',
      'UserDetailsWithAdmin',
      'UserWithAdmin',
    ]);
    expect(doc.paths['/api/v4/groups/{id}'].get.responses['200'].content['application/json'].schema).toEqual({
      $ref: '#/components/schemas/Group',
    });
    expect(doc.paths['/api/v4/applications'].post.responses['201'].content['application/json'].schema).toEqual({
      $ref: '#/components/schemas/ApplicationWithSecret',
    });
    expect(doc.paths['/api/v4/applications/{id}'].put.operationId).toBe('updateApplication');
  });
});
