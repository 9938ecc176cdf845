/** Parsers that accept and reject annotation values exactly as Linkerd's Go code (stdlib strconv/time, apimachinery Quantity) does. */

const INT64_MAX = (1n << 63n) - 1n;
const TWO_POW_63 = 1n << 63n;
const UINT64_MAX = (1n << 64n) - 1n;
const NANOS_PER_SECOND = 1_000_000_000n;

const CHAR_0 = 0x30;
const CHAR_9 = 0x39;
const CHAR_DOT = 0x2e;
const CHAR_PLUS = 0x2b;
const CHAR_MINUS = 0x2d;

/** A leading "+" or "-", as Go's number parsers accept it: whether it was "-", and where the rest begins (0 or 1). */
function leadingSign(text: string): { negative: boolean; rest: number } {
  const sign = text.charCodeAt(0);
  return sign === CHAR_PLUS || sign === CHAR_MINUS ? { negative: sign === CHAR_MINUS, rest: 1 } : { negative: false, rest: 0 };
}

function isDigit(code: number): boolean {
  return code >= CHAR_0 && code <= CHAR_9;
}

function isAllDigits(text: string): boolean {
  if (text === '') return false;
  for (let i = 0; i < text.length; i++) {
    if (!isDigit(text.charCodeAt(i))) return false;
  }
  return true;
}

/**
 * Magnitude of a non-empty run of ASCII digits, or undefined when it is not one or has more significant digits
 * than any 64-bit value; the length cut keeps hostile, very long inputs from costing a big-integer parse.
 */
function parseDigits64(digits: string): bigint | undefined {
  if (!isAllDigits(digits)) return undefined;
  let start = 0;
  while (start < digits.length - 1 && digits.charCodeAt(start) === CHAR_0) start++;
  if (digits.length - start > 20) return undefined;
  return BigInt(digits.slice(start));
}

/**
 * An optionally signed run of at most 15 ASCII digits as a number (never -0), or undefined for any other text. Such a
 * number is exact in a double and within 64 bits, so the common short texts (ports, ids) need no big integers; every
 * other text takes the exact path.
 */
function shortInt(text: string): number | undefined {
  const sign = text.charCodeAt(0);
  const start = sign === CHAR_PLUS || sign === CHAR_MINUS ? 1 : 0;
  const length = text.length - start;
  if (length < 1 || length > 15) return undefined;
  let n = 0;
  for (let i = start; i < text.length; i++) {
    const code = text.charCodeAt(i);
    if (!isDigit(code)) return undefined;
    n = n * 10 + (code - CHAR_0);
  }
  return sign === CHAR_MINUS && n !== 0 ? -n : n;
}

/** Go strconv.ParseInt(text, 10, bits) as an exact bigint. */
function parseGoIntBig(text: string, bits: number): bigint | undefined {
  const { negative, rest } = leadingSign(text);
  const magnitude = parseDigits64(text.slice(rest));
  if (magnitude === undefined) return undefined;
  const limit = 1n << BigInt(bits - 1);
  if (negative) return magnitude > limit ? undefined : -magnitude;
  return magnitude >= limit ? undefined : magnitude;
}

function toSafeNumber(value: bigint): number | undefined {
  const n = Number(value);
  return Number.isSafeInteger(n) ? n : undefined;
}

// ---------------------------------------------------------------------------------------------------------------
// Durations

const DURATION_UNITS: ReadonlyMap<string, bigint> = new Map([
  ['ns', 1n],
  ['us', 1_000n],
  ['\u00b5s', 1_000n],
  ['\u03bcs', 1_000n],
  ['ms', 1_000_000n],
  ['s', NANOS_PER_SECOND],
  ['m', 60n * NANOS_PER_SECOND],
  ['h', 3600n * NANOS_PER_SECOND],
]);

/** Go time.ParseDuration semantics. Returns nanoseconds, or undefined when Go would return an error. */
export function parseGoDuration(text: string): bigint | undefined {
  const { negative, rest } = leadingSign(text);
  let s = text.slice(rest);
  if (s === '0') return 0n;
  if (s === '') return undefined;

  // Magnitudes are accumulated unsigned up to 2^63 because Go allows exactly -2^63ns.
  let total = 0n;
  let i = 0;
  while (i < s.length) {
    const lead = s.charCodeAt(i);
    if (lead !== CHAR_DOT && !isDigit(lead)) return undefined;

    const intStart = i;
    let whole = 0n;
    for (; i < s.length && isDigit(s.charCodeAt(i)); i++) {
      if (whole > TWO_POW_63 / 10n) return undefined;
      whole = whole * 10n + BigInt(s.charCodeAt(i) - CHAR_0);
      if (whole > TWO_POW_63) return undefined;
    }
    const sawIntDigits = i > intStart;

    // Go keeps fraction digits only while they fit in 63 bits and silently drops the rest, so do the same.
    let fraction = 0n;
    let scale = 1;
    let sawFracDigits = false;
    if (i < s.length && s.charCodeAt(i) === CHAR_DOT) {
      i++;
      const fracStart = i;
      let saturated = false;
      for (; i < s.length && isDigit(s.charCodeAt(i)); i++) {
        if (saturated) continue;
        if (fraction > INT64_MAX / 10n) {
          saturated = true;
          continue;
        }
        const next = fraction * 10n + BigInt(s.charCodeAt(i) - CHAR_0);
        if (next > TWO_POW_63) {
          saturated = true;
          continue;
        }
        fraction = next;
        scale *= 10;
      }
      sawFracDigits = i > fracStart;
    }
    if (!sawIntDigits && !sawFracDigits) return undefined;

    const unitStart = i;
    for (; i < s.length; i++) {
      const c = s.charCodeAt(i);
      if (c === CHAR_DOT || isDigit(c)) break;
    }
    if (i === unitStart) return undefined;
    const unit = DURATION_UNITS.get(s.slice(unitStart, i));
    if (unit === undefined) return undefined;

    if (whole > TWO_POW_63 / unit) return undefined;
    let value = whole * unit;
    if (fraction > 0n) {
      // Go computes the fractional part in float64 and truncates; repeating the same IEEE operations yields
      // bit-identical nanoseconds, including Go's own rounding on fractions that are not exact in binary.
      value += BigInt(Math.trunc(Number(fraction) * (Number(unit) / scale)));
      if (value > TWO_POW_63) return undefined;
    }
    total += value;
    if (total > TWO_POW_63) return undefined;
  }
  if (negative) return -total;
  return total > INT64_MAX ? undefined : total;
}

/** Go's Duration.Seconds(): whole seconds plus the nanosecond remainder, both as float64. */
function goSeconds(ns: bigint): number {
  return Number(ns / NANOS_PER_SECOND) + Number(ns % NANOS_PER_SECOND) / 1e9;
}

function formatTruncated(value: number): string {
  // Math.trunc can produce -0 for small negative values, which Go's int() renders as plain 0.
  const truncated = Math.trunc(value);
  return truncated === 0 ? '0' : String(truncated);
}

/** Linkerd's connect-timeout / shutdown-grace-period rendering: `${Math.trunc(seconds*1000)}ms`. */
export function durationToMillis(ns: bigint): string {
  return `${formatTruncated(goSeconds(ns) * 1000)}ms`;
}

/** Linkerd's discovery-cache timeout rendering: `${Math.trunc(seconds)}s` (truncating). */
export function durationToSeconds(ns: bigint): string {
  return `${formatTruncated(goSeconds(ns))}s`;
}

// ---------------------------------------------------------------------------------------------------------------
// strconv

const GO_BOOLS: ReadonlyMap<string, boolean> = new Map([
  ['1', true],
  ['t', true],
  ['T', true],
  ['TRUE', true],
  ['true', true],
  ['True', true],
  ['0', false],
  ['f', false],
  ['F', false],
  ['FALSE', false],
  ['false', false],
  ['False', false],
]);

/** The texts Go's strconv.ParseBool accepts. */
export const GO_BOOL_TEXTS: readonly string[] = [...GO_BOOLS.keys()];

/** Go strconv.ParseBool: accepts exactly 1,t,T,TRUE,true,True,0,f,F,FALSE,false,False. */
export function parseGoBool(text: string): boolean | undefined {
  return GO_BOOLS.get(text);
}

/** Go strconv.ParseInt(text, 10, bits); undefined on any error or when the value is not a safe integer. */
export function parseGoInt(text: string, bits: 32 | 64): number | undefined {
  const short = shortInt(text);
  if (short !== undefined) {
    const limit = 2 ** (bits - 1);
    return short < -limit || short >= limit ? undefined : short;
  }
  const value = parseGoIntBig(text, bits);
  return value === undefined ? undefined : toSafeNumber(value);
}

/** Go strconv.ParseUint(text, 10, 64) then a bound: undefined on error, if > max, or if not a safe integer. */
export function parseGoUint(text: string, max: number): number | undefined {
  const first = text.charCodeAt(0);
  const short = first === CHAR_PLUS || first === CHAR_MINUS ? undefined : shortInt(text);
  if (short !== undefined) return short <= max ? short : undefined;
  const value = parseDigits64(text);
  if (value === undefined || value > UINT64_MAX) return undefined;
  // A NaN bound compares false, which rejects rather than accepts.
  if (!(value <= max)) return undefined;
  return toSafeNumber(value);
}

// ---------------------------------------------------------------------------------------------------------------
// Kubernetes quantities

/** A Kubernetes resource.Quantity parsed per k8s.io/apimachinery ParseQuantity grammar. */
export interface Quantity {
  /** exact value as a rational: numerator/denominator (bigint), sign included in numerator */
  num: bigint;
  den: bigint;
}

/** a < b, exactly: the denominators parseQuantity gives are positive. */
export const quantityLess = (a: Quantity, b: Quantity): boolean => a.num * b.den < b.num * a.den;

const DECIMAL_SUFFIXES: ReadonlyMap<string, number> = new Map([
  ['n', -9],
  ['u', -6],
  ['m', -3],
  ['', 0],
  ['k', 3],
  ['M', 6],
  ['G', 9],
  ['T', 12],
  ['P', 15],
  ['E', 18],
]);

const BINARY_SUFFIXES: ReadonlyMap<string, number> = new Map([
  ['Ki', 10],
  ['Mi', 20],
  ['Gi', 30],
  ['Ti', 40],
  ['Pi', 50],
  ['Ei', 60],
]);

/** Letters apimachinery's scanner lets into a suffix before it validates the suffix as a whole. */
const SUFFIX_LETTERS = 'eEinumkKMGTP';

/** apimachinery's int64 fast path holds at most this many decimal digits. */
const MAX_INT64_FACTORS = 18;

/**
 * Beyond this many powers of ten a decimal quantity is astronomically outside anything Kubernetes can use, so its
 * exponent is clamped (keeping sign, "exceeds int64" and "finer than a nanounit") instead of building a bigint
 * with billions of digits from an input like "1e2000000000".
 */
const MAX_DECIMAL_POWER = 1024;

/** Removes up to `limit` factors of `p` from `m`; squares the divisor so adversarially long inputs stay cheap. */
function removeFactor(m: bigint, p: bigint, limit: number): [bigint, number] {
  let rest = m;
  let removed = 0;
  while (removed < limit && rest % p === 0n) {
    let power = p;
    let count = 1;
    while (removed + count * 2 <= limit && rest % (power * power) === 0n) {
      power *= power;
      count *= 2;
    }
    rest /= power;
    removed += count;
  }
  return [rest, removed];
}

function trailingZeroBits(m: bigint): number {
  return (m & -m).toString(2).length - 1;
}

/** The rational mantissa * 2^pow2 * 5^pow5 in lowest terms with a positive denominator. */
function reduceRational(mantissa: bigint, pow2: number, pow5: number, negative: boolean): Quantity {
  if (mantissa === 0n) return { num: 0n, den: 1n };
  let m = mantissa;
  let twos = pow2;
  let fives = pow5;
  if (twos < 0) {
    const removed = Math.min(trailingZeroBits(m), -twos);
    m >>= BigInt(removed);
    twos += removed;
  }
  if (fives < 0) {
    const [rest, removed] = removeFactor(m, 5n, -fives);
    m = rest;
    fives += removed;
  }
  const num = m * (1n << BigInt(Math.max(twos, 0))) * 5n ** BigInt(Math.max(fives, 0));
  const den = (1n << BigInt(Math.max(-twos, 0))) * 5n ** BigInt(Math.max(-fives, 0));
  return { num: negative ? -num : num, den };
}

type Suffix = { kind: 'decimal'; exponent: number } | { kind: 'binary'; exponent: number };

function interpretSuffix(suffix: string): Suffix | undefined {
  const decimal = DECIMAL_SUFFIXES.get(suffix);
  if (decimal !== undefined) return { kind: 'decimal', exponent: decimal };
  const binary = BINARY_SUFFIXES.get(suffix);
  if (binary !== undefined) return { kind: 'binary', exponent: binary };
  if (suffix.length > 1 && (suffix[0] === 'e' || suffix[0] === 'E')) {
    const parsed = parseGoIntBig(suffix.slice(1), 64);
    if (parsed === undefined) return undefined;
    // apimachinery narrows the 64-bit exponent to int32 without a range check, so "1e4294967296" means 1e0.
    return { kind: 'decimal', exponent: Number(BigInt.asIntN(32, parsed)) };
  }
  return undefined;
}

/**
 * Longer quantity texts are refused unread: no quantity a pod needs is near it, and reading the digits of a longer one
 * takes time growing faster than their number.
 */
const MAX_QUANTITY_LENGTH = 128;

/** A Kubernetes resource.Quantity parsed per k8s.io/apimachinery ParseQuantity grammar. */
export function parseQuantity(text: string): Quantity | undefined {
  if (text === '' || text.length > MAX_QUANTITY_LENGTH) return undefined;
  const end = text.length;
  const { negative, rest } = leadingSign(text);
  let pos = rest;
  const afterSign = pos;
  while (pos < end && text.charCodeAt(pos) === CHAR_0) pos++;
  const intStart = pos;
  while (pos < end && isDigit(text.charCodeAt(pos))) pos++;
  const intDigits = text.slice(intStart, pos);
  let fracDigits = '';
  if (pos < end && text.charCodeAt(pos) === CHAR_DOT) {
    pos++;
    const fracStart = pos;
    while (pos < end && isDigit(text.charCodeAt(pos))) pos++;
    fracDigits = text.slice(fracStart, pos);
  }
  const hasDigits = intStart > afterSign || intDigits !== '' || fracDigits !== '';

  const suffixStart = pos;
  while (pos < end && SUFFIX_LETTERS.includes(text.charAt(pos))) pos++;
  const signCode = text.charCodeAt(pos);
  if (signCode === CHAR_PLUS || signCode === CHAR_MINUS) pos++;
  while (pos < end && isDigit(text.charCodeAt(pos))) pos++;
  if (pos < end) return undefined;

  const suffix = interpretSuffix(text.slice(suffixStart));
  if (suffix === undefined) return undefined;

  // apimachinery accepts digit-less numbers such as "", ".", "+" or "m" as zero, except when they miss its
  // int64 fast path: the fallback decimal parser then finds no digits and reports an error.
  const significantLength = Math.max(intDigits.length, 1) + fracDigits.length;
  let fastPath: boolean;
  if (suffix.kind === 'decimal') {
    fastPath =
      MAX_INT64_FACTORS - significantLength >= 0 && suffix.exponent - fracDigits.length >= -9;
  } else {
    const precision = 15 - Math.max(intDigits.length, 1) - Math.trunc((suffix.exponent * 3) / 10) - 1;
    fastPath = fracDigits === '' && precision >= 0;
  }
  if (!hasDigits && !fastPath) return undefined;

  const mantissa = BigInt(`0${intDigits}${fracDigits}`);
  if (suffix.kind === 'binary') {
    return reduceRational(mantissa, suffix.exponent - fracDigits.length, -fracDigits.length, negative);
  }
  const mantissaDigits = mantissa.toString().length;
  const power = Math.min(
    Math.max(suffix.exponent - fracDigits.length, -(mantissaDigits + MAX_DECIMAL_POWER)),
    MAX_DECIMAL_POWER,
  );
  return reduceRational(mantissa, power, power, negative);
}

/**
 * Whole CPU cores as Linkerd's ToWholeCPUCores computes them: Quantity.RoundUp(0) (away from zero, so "1.5" -> 2
 * and "-1.5" -> -2) then AsInt64, with 0 wherever AsInt64 fails (Linkerd logs and keeps the zero).
 */
export function quantityToWholeCores(q: Quantity): number {
  if (q.den === 0n) return 0;
  const num = q.den < 0n ? -q.num : q.num;
  const den = q.den < 0n ? -q.den : q.den;
  // Values finer than a nanounit are held by apimachinery as inf.Dec, whose AsInt64 always fails.
  if ((num * NANOS_PER_SECOND) % den !== 0n) return 0;
  const negative = num < 0n;
  const magnitude = negative ? -num : num;
  let whole = magnitude / den;
  if (whole * den !== magnitude) whole += 1n;
  if (whole > (negative ? TWO_POW_63 : INT64_MAX)) return 0;
  return Number(negative ? -whole : whole);
}

// ---------------------------------------------------------------------------------------------------------------
// Port ranges

/** A port or an inclusive port range as Linkerd's util.ParsePortRange accepts it. */
export interface PortRange {
  lo: number;
  hi: number;
}

/** One bound as Linkerd reads it: strconv.Atoi (so an optional '+' is allowed) then 0..65535. */
function parsePortBound(text: string): number | undefined {
  const short = shortInt(text);
  if (short !== undefined) return short < 0 || short > 65535 ? undefined : short;
  const value = parseGoIntBig(text, 64);
  if (value === undefined || value < 0n || value > 65535n) return undefined;
  return Number(value);
}

/** "8080" or "4000-5000"; each bound 0..65535, lo <= hi. Whitespace is NOT trimmed here (callers trim). */
export function parsePortRange(text: string): PortRange | undefined {
  const bounds = text.split('-');
  if (bounds.length > 2) return undefined;
  const lo = parsePortBound(bounds[0] ?? '');
  const hi = bounds.length === 2 ? parsePortBound(bounds[1] ?? '') : lo;
  if (lo === undefined || hi === undefined || hi < lo) return undefined;
  return { lo, hi };
}

/** Renders a port range back: "8080" when lo===hi else "lo-hi". */
export function formatPortRange(r: PortRange): string {
  return r.lo === r.hi ? String(r.lo) : `${r.lo}-${r.hi}`;
}

// ---------------------------------------------------------------------------------------------------------------
// CIDRs

/** A network as Go's net.ParseCIDR reads it: the address's family (as written), its bytes and the prefix length. */
export interface Cidr {
  /** 6 for any address written with a colon, `::ffff:192.0.2.1` included, whose prefix length counts to 128. */
  family: 4 | 6;
  /** 4 or 16 bytes, not masked. */
  bytes: number[];
  bits: number;
  /** The prefix length as written, leading zeros included. */
  prefix: string;
}

/**
 * Go's net.ParseCIDR, which Linkerd's injector applies to `clusterNetworks` and proxy-init to each skipped subnet: a
 * dotted quad without leading zeros or an IPv6 address without a zone, '/', and a prefix length of ASCII digits (any
 * leading zeros) at most 32 or 128. Nothing is trimmed.
 */
export function parseCidr(text: string): Cidr | undefined {
  const slash = text.indexOf('/');
  if (slash < 0) return undefined;
  const addr = text.slice(0, slash);
  const prefix = text.slice(slash + 1);
  if (!/^[0-9]+$/.test(prefix)) return undefined;
  const significant = prefix.replace(/^0+(?=.)/, '');
  const bits = significant.length > 3 ? Infinity : Number(significant);
  if (addr.includes(':')) {
    const bytes = parseIpv6(addr);
    return bytes && bits <= 128 ? { family: 6, bytes, bits, prefix } : undefined;
  }
  const bytes = parseIpv4(addr);
  return bytes && bits <= 32 ? { family: 4, bytes, bits, prefix } : undefined;
}

/** Four decimal octets, no leading zeros (Go refuses them as ambiguous octal). */
function parseIpv4(text: string): number[] | undefined {
  const parts = text.split('.');
  if (parts.length !== 4) return undefined;
  const bytes: number[] = [];
  for (const part of parts) {
    if (!/^(0|[1-9][0-9]{0,2})$/.test(part) || Number(part) > 255) return undefined;
    bytes.push(Number(part));
  }
  return bytes;
}

/**
 * Eight groups of one to four hex digits, one `::` standing for at least one group of zeros, the last two groups
 * possibly a dotted quad; no zone.
 */
function parseIpv6(text: string): number[] | undefined {
  const halves = text.split('::');
  if (halves.length > 2) return undefined;
  const groups = (part: string, last: boolean): number[] | undefined => {
    if (part === '') return [];
    const out: number[] = [];
    const fields = part.split(':');
    for (let i = 0; i < fields.length; i++) {
      const field = fields[i] as string;
      if (last && i === fields.length - 1 && field.includes('.')) {
        const v4 = parseIpv4(field);
        if (!v4) return undefined;
        out.push(((v4[0] as number) << 8) | (v4[1] as number), ((v4[2] as number) << 8) | (v4[3] as number));
      } else if (/^[0-9a-fA-F]{1,4}$/.test(field)) {
        out.push(parseInt(field, 16));
      } else return undefined;
    }
    return out;
  };
  const head = groups(halves[0] as string, halves.length === 1);
  const tail = halves.length === 2 ? groups(halves[1] as string, true) : [];
  if (!head || !tail) return undefined;
  let words: number[];
  if (halves.length === 2) {
    const missing = 8 - head.length - tail.length;
    if (missing < 1) return undefined;
    words = [...head, ...new Array<number>(missing).fill(0), ...tail];
  } else {
    if (head.length !== 8) return undefined;
    words = head;
  }
  return words.flatMap((w) => [w >> 8, w & 0xff]);
}

/** What Go's unicode.IsSpace calls a space, which strings.TrimSpace removes from both ends. */
function isGoSpace(code: number): boolean {
  if (code <= 0x20) return code === 0x20 || (code >= 0x09 && code <= 0x0d);
  if (code < 0x85) return false;
  return (
    code === 0x85 || code === 0xa0 || code === 0x1680 || (code >= 0x2000 && code <= 0x200a) ||
    code === 0x2028 || code === 0x2029 || code === 0x202f || code === 0x205f || code === 0x3000
  );
}

/** Go's strings.TrimSpace, which differs from String.prototype.trim on U+0085 (trimmed) and U+FEFF (kept). */
export function trimGoSpace(text: string): string {
  let start = 0;
  let end = text.length;
  while (start < end && isGoSpace(text.charCodeAt(start))) start++;
  while (end > start && isGoSpace(text.charCodeAt(end - 1))) end--;
  return start === 0 && end === text.length ? text : text.slice(start, end);
}
