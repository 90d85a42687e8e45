// What a refused form says to a person, GOV.UK style (design-system.service.gov.uk, "Error
// message"): what happened and how to fix it, in plain words, one message per case — never the
// rule's code, a raw domain string or "is invalid".
//
// The domain names the field of a refusal in `details` with GitLab's field-error phrase
// (ActiveRecord's "can't be blank", "is too long (maximum is 255 characters)", Doorkeeper's "cannot
// contain a fragment.", …). /api/v4 sends those phrases unchanged and its tests pin them, so they
// stay as they are; this module is the one place that reads which case a phrase is (`problemOf`),
// and each form's table says, per case, what the page shows at its field.
import { MIN_PASSWORD_LENGTH } from '../domain/passwords';

/** The cases a form field's refusal can be. */
export type Problem =
  | 'blank'
  | 'too_long'
  | 'too_short'
  | 'too_many'
  | 'taken'
  | 'fragment'
  | 'not_absolute'
  | 'forbidden_scheme'
  | 'not_https'
  | 'user_info'
  | 'not_a_date'
  | 'out_of_range'
  | 'unavailable'
  | 'invalid';

/** Which case a domain detail phrase is: the only reading of those phrases on the pages. */
const PHRASES: readonly (readonly [RegExp, Problem])[] = [
  // \u2019 (a right single quotation mark) escaped: bundles are ASCII (infra/build/bundle.ts).
  [/can[\u2019']t be blank|must not be empty/, 'blank'],
  [/^is too long/, 'too_long'],
  [/^is too short/, 'too_short'],
  [/^at most /, 'too_many'],
  [/^has already been taken/, 'taken'],
  [/fragment/, 'fragment'],
  [/absolute URI/, 'not_absolute'],
  [/forbidden by the server/, 'forbidden_scheme'],
  [/must be an https URI/, 'not_https'],
  [/user information/, 'user_info'],
  [/^is not a date/, 'not_a_date'],
  [/in the past|^must be between|^is not between/, 'out_of_range'],
  [/available scopes|configured on the server/, 'unavailable'],
];

export const problemOf = (detail: string | undefined): Problem =>
  PHRASES.find(([re]) => detail !== undefined && re.test(detail))?.[1] ?? 'invalid';

/** A field's words: one message for every case, or one per case with `otherwise` for the rest. */
export type FieldWords = string | (Partial<Record<Problem, string>> & { otherwise: string });

export const wordsFor = (words: FieldWords, problem: Problem): string =>
  typeof words === 'string' ? words : (words[problem] ?? words.otherwise);

/** The e-mail address inputs (add an address, ask for a password reset link). */
export const EMAIL_WORDS = {
  blank: 'Enter an e-mail address',
  too_long: 'E-mail address must be 254 characters or fewer',
  taken: 'That e-mail address is already used by an account. Enter a different e-mail address',
  otherwise: 'Enter an e-mail address in the correct format, like name@example.com',
} satisfies FieldWords;

/** A new password (change, reset). */
export const NEW_PASSWORD_WORDS = {
  blank: 'Enter a new password',
  too_short: `Password must be ${MIN_PASSWORD_LENGTH} characters or more`,
  too_long: 'Password must be 1024 characters or fewer',
  otherwise: `Enter a new password of ${MIN_PASSWORD_LENGTH} characters or more`,
} satisfies FieldWords;

export const PASSWORD_CONFIRMATION_MISMATCH = 'Enter the same password in both new password fields';

/** The current password a sensitive change asks for: none given, or not the right one. */
export const CURRENT_PASSWORD_WORDS = {
  blank: 'Enter your current password',
  otherwise: 'The current password is not correct. Enter your current password',
} satisfies FieldWords;

/** A TOTP code from the authenticator app (enrolment). */
export const TOTP_CODE_WORDS = {
  blank: 'Enter the 6-digit code from your authenticator app',
  otherwise: 'The code is not correct. Enter the 6-digit code your authenticator app shows now',
} satisfies FieldWords;

/** The sign-in's second step: a TOTP code or a recovery code (`RECOVERY_CODE_WORDS`: no TOTP set up). */
export const SIGN_IN_CODE_WORDS = {
  blank: 'Enter the code from your authenticator app, or one of your recovery codes',
  otherwise: 'The code is not correct. Enter the code your authenticator app shows now, or an unused recovery code',
} satisfies FieldWords;

export const RECOVERY_CODE_WORDS = {
  blank: 'Enter one of your recovery codes',
  otherwise: 'The code is not correct. Enter one of your recovery codes that you have not used yet',
} satisfies FieldWords;
