/** Text helpers every layer uses: a string order, a line number, one line of an error, a text cut short. */

/** Orders strings by UTF-16 code unit, which for the ASCII keys Kubernetes allows is Go's byte order (not the locale's). */
export const compareCodeUnits = (a: string, b: string): number => (a < b ? -1 : a > b ? 1 : 0);

/** The line (1-based) where `offset` falls in `text`, to say where something is without echoing it. */
export function lineAt(text: string, offset: number): number {
  let line = 1;
  for (let i = text.indexOf('\n'); i !== -1 && i < offset; i = text.indexOf('\n', i + 1)) line++;
  return line;
}

/** `text`, or its start and `...` in at most `max` characters: a message quotes what it was given, however long. */
export const clip = (text: string, max: number): string => (text.length > max ? `${text.slice(0, max - 3)}...` : text);

/** An error's text on one line (OpenSSL's, and parsers', can span several): log readers and HTTP reasons need one. */
export function oneLine(err: unknown): string {
  const text = err instanceof Error ? err.message : String(err);
  return text.replace(/\s+/g, ' ').trim();
}
