// GET /version and /metadata: the GitLab version whose API this surface matches (GitLab's
// API::Entities::Metadata; /version is its alias since GitLab 15.5), plus Lanyard's own version.
// Scopes read_user, read_api or api, as GitLab allows read_user here.
import type { FastifyPluginAsync } from 'fastify';
// Read at build time: the Lambda bundle inlines it, no package.json is needed at run time.
import { version as lanyardVersion } from '../../../package.json';
import { authErrorResponses } from './schemas';

/** The GitLab release whose REST API (notification settings with all 19 flags) Lanyard matches. */
export const GITLAB_API_VERSION = '17.11.0';

export const metadataSchema = {
  $id: 'Metadata',
  type: 'object',
  description: "GitLab's metadata entity, plus Lanyard's own version",
  properties: {
    version: { type: 'string', description: 'The GitLab version whose API this surface matches' },
    revision: { type: 'string' },
    kas: {
      type: 'object',
      properties: {
        enabled: { type: 'boolean' },
        externalUrl: { type: 'string', nullable: true },
        externalK8sProxyUrl: { type: 'string', nullable: true },
        version: { type: 'string', nullable: true },
      },
      required: ['enabled', 'externalUrl', 'externalK8sProxyUrl', 'version'],
    },
    enterprise: { type: 'boolean' },
    lanyard: {
      type: 'object',
      description: "Lanyard's own release",
      properties: { version: { type: 'string' } },
      required: ['version'],
    },
  },
  required: ['version', 'revision', 'kas', 'enterprise', 'lanyard'],
} as const;

const body = {
  version: GITLAB_API_VERSION,
  revision: `lanyard-${lanyardVersion}`,
  kas: { enabled: false, externalUrl: null, externalK8sProxyUrl: null, version: null },
  enterprise: false,
  lanyard: { version: lanyardVersion },
};

export const metadataRoutes: FastifyPluginAsync = async (app) => {
  for (const [url, operationId] of [
    ['/metadata', 'getMetadata'],
    ['/version', 'getVersion'],
  ] as const) {
    app.get(
      url,
      {
        config: { allowReadUser: true },
        schema: {
          operationId,
          summary: 'The GitLab API version this surface matches, and the Lanyard version',
          tags: ['metadata'],
          querystring: { type: 'object', properties: {} },
          response: { 200: { $ref: 'Metadata#' }, ...authErrorResponses },
        },
      },
      async () => body,
    );
  }
};
