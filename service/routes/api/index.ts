// /api/v4: the GitLab-compatible REST API (the REST API issue fills this in).
import type { FastifyPluginAsync } from 'fastify';
import type { AppContext } from '../../app';

export const apiRoutes: FastifyPluginAsync<AppContext> = async () => {};
