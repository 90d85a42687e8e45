// The name rule of applications and personal access tokens: trimmed, 1 to 255 characters (the
// schema's check constraint on both tables; GitLab's limit), checked here once for every caller.
import { invalidField } from './errors';

export const MAX_NAME_LENGTH = 255;

/** The trimmed name, or a 400-class error naming the rule. */
export function requireName(raw: string | undefined): string {
  const name = raw?.trim();
  if (!name) throw invalidField('name', 'name must not be empty');
  if (name.length > MAX_NAME_LENGTH)
    throw invalidField('name', `name is too long (maximum is ${MAX_NAME_LENGTH} characters)`);
  return name;
}
