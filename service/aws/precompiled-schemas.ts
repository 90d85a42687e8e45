// Stand-in for the build-time route schema code: none, so unbundled runs compile schemas with ajv.
// infra/build/bundle.ts replaces this module in the API bundle with the generated code.
import type { PrecompiledSchemas } from '../precompiled-schemas';

export const precompiledSchemas: PrecompiledSchemas | undefined = undefined;
