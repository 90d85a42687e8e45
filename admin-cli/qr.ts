// A QR code drawn with Unicode half blocks (two modules per character row), for enrolling an
// authenticator app from the terminal. Quiet zone included: phone cameras need the margin.
import { renderUnicodeCompact } from 'uqr';

export function terminalQrCode(text: string): string {
  // Medium error correction: the otpauth URI stays small enough for a terminal (≈ 45 columns).
  return renderUnicodeCompact(text, { ecc: 'M', border: 2 }).replace(/\n+$/, '');
}
