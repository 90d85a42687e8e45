// The name rule of applications and personal access tokens: trimmed, 1 to 255 characters (the
// schema's check constraint on both tables; GitLab's limit), checked here once for every caller.
import { invalid } from './errors';

export const MAX_NAME_LENGTH = 255;

/**
 * The trimmed name, or a 400-class error naming the rule; its details are GitLab's field error
 * (ActiveRecord's messages), which the API sends as `{"message":{"name":[…]}}`.
 */
export function requireName(raw: string | undefined): string {
  const name = raw?.trim();
  if (!name) throw invalid('name must not be empty', { name: ["can't be blank"] });
  const tooLong = `is too long (maximum is ${MAX_NAME_LENGTH} characters)`;
  if (name.length > MAX_NAME_LENGTH) throw invalid(`name ${tooLong}`, { name: [tooLong] });
  return name;
}
