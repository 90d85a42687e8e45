// The `resource` parameter (RFC 8707 §2): read from a request (it may be repeated) and checked
// against what the client may ask for (domain/resources.ts); every refusal is `invalid_target`.
import { allowedResources } from '../domain/resources';
import { repeatedParam } from '../shared/params';
import { InvalidTarget } from './errors';

/**
 * The resources a request names, each allowed to the application (`allowed`: its
 * allowed_resources), or InvalidTarget.
 */
export function requestedResources(
  params: Record<string, unknown>,
  allowed: readonly string[] | null,
  publicUrl: string,
): string[] {
  const values = repeatedParam(params, 'resource');
  const resources = values && allowedResources(allowed, values, publicUrl);
  if (!resources) throw new InvalidTarget();
  return resources;
}
