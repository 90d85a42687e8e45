// Quoted-printable bodies (RFC 2045 §6.7) for the renderer: text in, CRLF lines of at most 76
// characters out. One pass over the UTF-8 bytes into one buffer (no regular expressions, no
// per-line strings): the renderer runs once per message on the sender's hot path. Line breaks of
// the text (LF or CRLF) become CRLF; a lone CR is escaped (=0D), never sent bare; a space or tab at
// the end of a line is escaped; a soft break ("=" at the end of a line) never splits an =XX.

const MAX_LINE = 76;
const HEX = Buffer.from('0123456789ABCDEF', 'latin1');
const CR = 13;
const LF = 10;
const EQUALS = 61;

/**
 * Scratch buffers reused by every call (the encoder is synchronous): a message's bodies are a few
 * kilobytes, and fresh buffers of that size per message kept the garbage collector busy.
 */
let input = Buffer.allocUnsafe(16 * 1024);
let output = Buffer.allocUnsafe(64 * 1024);

/** `text` as a quoted-printable body, CRLF line ends. */
export function quotedPrintable(text: string): string {
  const size = Buffer.byteLength(text, 'utf8');
  if (size > input.length) input = Buffer.allocUnsafe(size);
  const n = input.write(text, 0, 'utf8');
  const src = input;
  // Worst case: every byte escaped (3), plus a soft break (3) per 25 escaped bytes.
  const room = n * 3 + Math.ceil(n / 24) * 3 + 3;
  if (room > output.length) output = Buffer.allocUnsafe(room);
  const out = output;
  let pos = 0;
  let col = 0;
  for (let i = 0; i < n; i++) {
    const b = src[i];
    if (b >= 33 && b <= 126 && b !== EQUALS) {
      // Printable (most bytes): one column. The 76th only for the last byte of a line; else a
      // soft break first. Only near the end of a line does it matter what follows (written out
      // here and below rather than called: this loop is the renderer's hottest).
      if (col >= MAX_LINE - 1) {
        const j = i + 1;
        const lineEnds = j >= n || src[j] === LF || (src[j] === CR && j + 1 < n && src[j + 1] === LF);
        if (col >= MAX_LINE || !lineEnds) {
          out[pos++] = EQUALS;
          out[pos++] = CR;
          out[pos++] = LF;
          col = 0;
        }
      }
      out[pos++] = b;
      col++;
      continue;
    }
    if (b === LF || (b === CR && i + 1 < n && src[i + 1] === LF)) {
      if (b === CR) i++;
      out[pos++] = CR;
      out[pos++] = LF;
      col = 0;
      continue;
    }
    // A space or tab (escaped at the end of a line), or a byte that is always escaped.
    const j = i + 1;
    const lineEnds = j >= n || src[j] === LF || (src[j] === CR && j + 1 < n && src[j + 1] === LF);
    const plain = (b === 32 || b === 9) && !lineEnds;
    const width = plain ? 1 : 3;
    // Room for this token and, unless the line ends with it, the soft break after it.
    if (col + width > (lineEnds ? MAX_LINE : MAX_LINE - 1)) {
      out[pos++] = EQUALS;
      out[pos++] = CR;
      out[pos++] = LF;
      col = 0;
    }
    if (plain) {
      out[pos++] = b;
    } else {
      out[pos++] = EQUALS;
      out[pos++] = HEX[b >> 4];
      out[pos++] = HEX[b & 15];
    }
    col += width;
  }
  return out.toString('latin1', 0, pos);
}
