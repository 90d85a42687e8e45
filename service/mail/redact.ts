// Credentials out of error text. A library's error may quote what it sent or was told (an AUTH
// line, a URL): every form a secret can take on the wire is replaced before the text reaches a
// log, the outbox's last_error or the CLI.

/** The forms `secret` can appear in: as is, percent-encoded, and base64 (AUTH LOGIN/PLAIN send it so). */
export function secretForms(user: string, secret: string): string[] {
  if (!secret) return [];
  const b64 = (s: string) => Buffer.from(s, 'utf8').toString('base64');
  const forms = [
    secret,
    encodeURIComponent(secret),
    b64(secret),
    b64(`\0${user}\0${secret}`),
    b64(`${user}\0${secret}`),
    b64(`${user}:${secret}`),
    Buffer.from(secret, 'utf8').toString('hex'),
  ];
  // A base64 form without its padding, as some logs trim it.
  for (const f of [...forms]) if (/=+$/.test(f)) forms.push(f.replace(/=+$/, ''));
  return [...new Set(forms.filter((f) => f.length >= 3))].sort((a, b) => b.length - a.length);
}

/** `text` with every form of every secret replaced by "[redacted]". */
export function redact(text: string, forms: readonly string[]): string {
  let out = text;
  for (const form of forms) out = out.split(form).join('[redacted]');
  return out;
}
