// Names of the stack's resources, in one place: AWS names have length limits and the CLI and the
// docs refer to some of them (the admin function).
export const PROJECT = 'lanyard';

/** `lanyard-<stack>-<suffix>`, e.g. lanyard-prod-api. */
export function physicalName(stack: string, suffix: string): string {
  const name = `${PROJECT}-${stack}-${suffix}`.toLowerCase().replace(/[^a-z0-9-]/g, '-');
  if (name.length > 63) throw new Error(`resource name too long (63 max): ${name}`);
  return name;
}

export const functionName = (
  stack: string,
  fn: 'api' | 'migrate' | 'admin' | 'prune' | 'mail-relay' | 'mail-sender' | 'mail-events',
) => physicalName(stack, fn);

/** The log group Lambda writes to for a function name. */
export const functionLogGroupName = (name: string) => `/aws/lambda/${name}`;

export const commonTags = (stack: string): Record<string, string> => ({
  project: PROJECT,
  stack,
  'managed-by': 'pulumi',
});
