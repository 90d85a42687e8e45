// What Lanyard accepts as an e-mail address: one rule for accounts (users.ts) and the mail outbox.

const EMAIL_RE = /^[^@\s]+@[^@\s]+\.[^@\s]+$/;
/** Characters that would make one address read as several, or as a display name, to a mail client. */
const ADDRESS_LIST_CHARS = /[,;<>"()\\[\]\p{Cc}]/u;

export const isValidEmail = (email: string): boolean => EMAIL_RE.test(email) && email.length <= 254;

/** A valid address that every mail library reads as exactly one mailbox (no list, no display name). */
export const isSingleMailbox = (email: string): boolean => isValidEmail(email) && !ADDRESS_LIST_CHARS.test(email);
