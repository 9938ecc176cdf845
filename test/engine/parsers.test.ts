import { describe, it, expect } from 'vitest';
import {
  durationToMillis,
  durationToSeconds,
  formatPortRange,
  parseCidr,
  parseGoBool,
  parseGoDuration,
  parseGoInt,
  parseGoUint,
  parsePortRange,
  parseQuantity,
  quantityToWholeCores,
  trimGoSpace,
} from '../../src/engine/parsers.js';

const SECOND = 1_000_000_000n;
const INT64_MAX = 9223372036854775807n;
const INT64_MIN = -9223372036854775808n;

describe('parseGoDuration', () => {
  it.each<[string, bigint]>([
    ['0', 0n],
    ['+0', 0n],
    ['-0', 0n],
    ['0s', 0n],
    ['-0s', 0n],
    ['00s', 0n],
    ['1ns', 1n],
    ['1us', 1_000n],
    ['1\u00b5s', 1_000n],
    ['1\u03bcs', 1_000n],
    ['1ms', 1_000_000n],
    ['1s', SECOND],
    ['1m', 60n * SECOND],
    ['1h', 3600n * SECOND],
    ['300ms', 300_000_000n],
    ['-1.5h', -5_400n * SECOND],
    ['2h45m', 9_900n * SECOND],
    ['1.5s', 1_500_000_000n],
    ['.5s', 500_000_000n],
    ['5.s', 5n * SECOND],
    ['+5s', 5n * SECOND],
    ['-5s', -5n * SECOND],
    ['0.001s', 1_000_000n],
    ['2.25ms', 2_250_000n],
    ['0.3s', 300_000_000n],
    ['1.1h', 3_960n * SECOND],
    ['6s5ms', 6_005_000_000n],
    ['2s5ms', 2_005_000_000n],
    ['6s5000ms', 11_000_000_000n],
    ['6000ms', 6_000_000_000n],
    ['30s', 30_000_000_000n],
    ['1m30s', 90_000_000_000n],
    ['1h1m1s1ms1us1ns', 3_661_001_001_001n],
    ['1s1s1s', 3n * SECOND],
    // Fractions finer than a nanosecond are truncated, not rounded.
    ['0.9ns', 0n],
    ['1.0000000009s', SECOND],
    ['00000000000000000000000000001s', SECOND],
    ['9223372036854775807ns', INT64_MAX],
    ['-9223372036854775808ns', INT64_MIN],
    ['2562047h', 9_223_369_200n * SECOND],
    ['-2562047h', -9_223_369_200n * SECOND],
  ])('parses %j as %s ns', (text, expected) => {
    expect(parseGoDuration(text)).toBe(expected);
  });

  it.each<[string]>([
    [''],
    ['+'],
    ['-'],
    ['6000'],
    ['50'],
    ['1'],
    ['00'],
    ['+5'],
    ['s'],
    ['.s'],
    ['-.s'],
    ['.'],
    ['1S'],
    ['1H'],
    ['1sec'],
    ['1 s'],
    [' 1s'],
    ['1s '],
    ['1.5.s'],
    ['1..s'],
    ['1s.'],
    ['1m0'],
    ['1e3s'],
    ['--1s'],
    ['+-1s'],
    ['1s-1s'],
    ['1x'],
    ['\u00b5s'],
    ['9223372036854775808ns'],
    ['-9223372036854775809ns'],
    ['2562048h'],
    ['-2562048h'],
    ['9223372036854775807ns1ns'],
  ])('rejects %j', (text) => {
    expect(parseGoDuration(text)).toBeUndefined();
  });
});

describe('durationToMillis', () => {
  it.each<[bigint, string]>([
    [6_005_000_000n, '6005ms'],
    [2_005_000_000n, '2005ms'],
    [30n * SECOND, '30000ms'],
    [500_000_000n, '500ms'],
    [11n * SECOND, '11000ms'],
    [1_000_000n, '1ms'],
    [999_999n, '0ms'],
    [0n, '0ms'],
    [-1n, '0ms'],
    [-1_500_000_000n, '-1500ms'],
    // Go's float64 Seconds()*1000 lands just below the integer for these, and Linkerd truncates.
    [1_001_000_000n, '1000ms'],
    [2_002_000_000n, '2001ms'],
    [1_999_999_999n, '1999ms'],
    [INT64_MAX, '9223372036854ms'],
  ])('renders %s ns as %s', (ns, expected) => {
    expect(durationToMillis(ns)).toBe(expected);
  });
});

describe('durationToSeconds', () => {
  it.each<[bigint, string]>([
    [500_000_000n, '0s'],
    [11n * SECOND, '11s'],
    [90n * SECOND, '90s'],
    [1_999_999_999n, '1s'],
    [0n, '0s'],
    [-1n, '0s'],
    [-1_500_000_000n, '-1s'],
    [9_223_369_200n * SECOND, '9223369200s'],
  ])('renders %s ns as %s', (ns, expected) => {
    expect(durationToSeconds(ns)).toBe(expected);
  });

  it('composes with parseGoDuration for "6s5000ms"', () => {
    const ns = parseGoDuration('6s5000ms');
    expect(ns).toBe(11n * SECOND);
    expect(durationToSeconds(ns ?? 0n)).toBe('11s');
  });
});

describe('parseGoBool', () => {
  it.each<[string, boolean]>([
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
  ])('parses %j as %s', (text, expected) => {
    expect(parseGoBool(text)).toBe(expected);
  });

  it.each<[string]>([
    ['yes'],
    ['no'],
    ['on'],
    ['off'],
    [''],
    [' true'],
    ['TRUE '],
    ['tRUE'],
    ['fALSE'],
    ['01'],
    ['2'],
    ['y'],
  ])('rejects %j', (text) => {
    expect(parseGoBool(text)).toBeUndefined();
  });
});

describe('parseGoInt', () => {
  it.each<[string, 32 | 64, number]>([
    ['0', 32, 0],
    ['-0', 32, 0],
    ['+5', 32, 5],
    ['-5', 32, -5],
    ['05', 32, 5],
    ['2147483647', 32, 2147483647],
    ['-2147483648', 32, -2147483648],
    ['2147483648', 64, 2147483648],
    ['-2147483649', 64, -2147483649],
    ['9007199254740991', 64, Number.MAX_SAFE_INTEGER],
    ['-9007199254740991', 64, Number.MIN_SAFE_INTEGER],
    ['000000000000000000000000000042', 64, 42],
  ])('parses %j with %i bits as %d', (text, bits, expected) => {
    expect(parseGoInt(text, bits)).toBe(expected);
  });

  it.each<[string, 32 | 64]>([
    ['2147483648', 32],
    ['-2147483649', 32],
    ['0x10', 32],
    ['0x10', 64],
    ['1_000', 64],
    [' 5', 64],
    ['5 ', 64],
    ['5.0', 64],
    ['1e3', 64],
    ['', 32],
    ['', 64],
    ['+', 64],
    ['-', 64],
    ['++5', 64],
    ['+-5', 64],
    ['abc', 64],
    // In range for Go but not exactly representable as a JavaScript number.
    ['9007199254740992', 64],
    ['9223372036854775807', 64],
    ['-9223372036854775808', 64],
    // Out of int64 range.
    ['9223372036854775808', 64],
    ['-9223372036854775809', 64],
  ])('rejects %j with %i bits', (text, bits) => {
    expect(parseGoInt(text, bits)).toBeUndefined();
  });
});

describe('parseGoUint', () => {
  it.each<[string, number, number]>([
    ['0', 100, 0],
    ['100', 100, 100],
    ['0100', 100, 100],
    ['65535', 65535, 65535],
    ['9007199254740991', Number.MAX_SAFE_INTEGER, Number.MAX_SAFE_INTEGER],
  ])('parses %j (max %d) as %d', (text, max, expected) => {
    expect(parseGoUint(text, max)).toBe(expected);
  });

  it.each<[string, number]>([
    ['101', 100],
    ['65536', 65535],
    ['+5', 100],
    ['-5', 100],
    ['-0', 100],
    ['', 100],
    [' 5', 100],
    ['5.0', 100],
    ['0x10', 100],
    ['1_0', 100],
    ['18446744073709551616', Number.MAX_VALUE],
    ['18446744073709551615', Number.MAX_VALUE],
    ['5', Number.NaN],
  ])('rejects %j (max %d)', (text, max) => {
    expect(parseGoUint(text, max)).toBeUndefined();
  });
});

describe('parseQuantity', () => {
  it.each<[string, bigint, bigint]>([
    ['0', 0n, 1n],
    ['3', 3n, 1n],
    ['0.5', 1n, 2n],
    ['.5', 1n, 2n],
    ['5.', 5n, 1n],
    ['+5', 5n, 1n],
    ['-5', -5n, 1n],
    ['-0', 0n, 1n],
    ['007', 7n, 1n],
    ['100m', 1n, 10n],
    ['1.5', 3n, 2n],
    ['0.15', 3n, 20n],
    ['1n', 1n, 1_000_000_000n],
    ['2u', 1n, 500_000n],
    ['5k', 5_000n, 1n],
    ['5M', 5_000_000n, 1n],
    ['5G', 5_000_000_000n, 1n],
    ['5T', 5_000_000_000_000n, 1n],
    ['5P', 5_000_000_000_000_000n, 1n],
    ['5E', 5_000_000_000_000_000_000n, 1n],
    ['1Ki', 1024n, 1n],
    ['250Mi', 262_144_000n, 1n],
    ['1.5Gi', 1_610_612_736n, 1n],
    ['1Ti', 1_099_511_627_776n, 1n],
    ['1Pi', 1_125_899_906_842_624n, 1n],
    ['1Ei', 1_152_921_504_606_846_976n, 1n],
    ['0.5Ki', 512n, 1n],
    ['1e3', 1_000n, 1n],
    ['1E3', 1_000n, 1n],
    ['1e+3', 1_000n, 1n],
    ['1E-3', 1n, 1_000n],
    ['2.5e-1', 1n, 4n],
    // Exact, although apimachinery itself rounds values finer than a nanounit up to 1n.
    ['1e-10', 1n, 10_000_000_000n],
    // apimachinery narrows exponents to int32 without a range check.
    ['1e4294967296', 1n, 1n],
    // apimachinery accepts a number without digits as zero when its int64 fast path applies.
    ['.', 0n, 1n],
    ['+', 0n, 1n],
    ['-', 0n, 1n],
    ['m', 0n, 1n],
    ['Ki', 0n, 1n],
    ['e3', 0n, 1n],
  ])('parses %j as %s/%s', (text, num, den) => {
    expect(parseQuantity(text)).toEqual({ num, den });
  });

  it.each<[string]>([
    [''],
    ['1.5.5'],
    ['abc'],
    ['1mi'],
    ['1 Gi'],
    [' 1'],
    ['1 '],
    ['1K'],
    ['1KI'],
    ['1ki'],
    ['1Mb'],
    ['1e'],
    ['1E+'],
    ['1e1.5'],
    ['1Ee3'],
    ['1m5'],
    ['1e99999999999999999999'],
    ['--1'],
    ['+-1'],
    ['0x10'],
    ['1,5'],
    // Digit-less numbers that miss apimachinery's int64 fast path reach a decimal parser that rejects them.
    ['Pi'],
    ['Ei'],
    ['e-10'],
    ['.Ei'],
  ])('rejects %j', (text) => {
    expect(parseQuantity(text)).toBeUndefined();
  });

  it('clamps absurd exponents instead of building huge integers', () => {
    const huge = parseQuantity('1e2147483647');
    expect(huge?.den).toBe(1n);
    expect(huge?.num).toBe(10n ** 1024n);
    const tiny = parseQuantity('-1e-2147483647');
    expect(tiny?.num).toBe(-1n);
    expect(tiny?.den).toBe(10n ** 1025n);
  });
});

describe('quantityToWholeCores', () => {
  it.each<[string, number]>([
    ['1', 1],
    ['1m', 1],
    ['1000m', 1],
    ['1001m', 2],
    ['0.15', 1],
    ['1.5', 2],
    ['3', 3],
    ['0', 0],
    ['500m', 1],
    ['2000m', 2],
    ['1n', 1],
    ['1k', 1000],
    // Quantity.RoundUp rounds away from zero.
    ['-1.5', -2],
    ['-1m', -1],
    // Finer than a nanounit or beyond int64: Linkerd's AsInt64 fails and it keeps 0.
    ['1e-10', 0],
    ['0.5n', 0],
    ['10E', 0],
  ])('maps %j to %i cores', (text, expected) => {
    const q = parseQuantity(text);
    expect(q).toBeDefined();
    expect(quantityToWholeCores(q ?? { num: -1n, den: 1n })).toBe(expected);
  });

  it('accepts a rational that is not in lowest terms or has a negative denominator', () => {
    expect(quantityToWholeCores({ num: 3000n, den: 2000n })).toBe(2);
    expect(quantityToWholeCores({ num: -3n, den: -2n })).toBe(2);
    expect(quantityToWholeCores({ num: 1n, den: 0n })).toBe(0);
  });
});

describe('parsePortRange', () => {
  it.each<[string, number, number]>([
    ['0', 0, 0],
    ['80', 80, 80],
    ['8080', 8080, 8080],
    ['65535', 65535, 65535],
    ['1-2', 1, 2],
    ['4000-5000', 4000, 5000],
    ['0-65535', 0, 65535],
    ['7-7', 7, 7],
    ['00080', 80, 80],
    // Linkerd reads bounds with strconv.Atoi, which takes a leading '+'.
    ['+80', 80, 80],
    ['+1-+2', 1, 2],
  ])('parses %j as %i..%i', (text, lo, hi) => {
    expect(parsePortRange(text)).toEqual({ lo, hi });
  });

  it.each<[string]>([
    [''],
    ['65536'],
    ['99999999999999999999'],
    ['2-1'],
    ['-5'],
    ['5-'],
    ['-'],
    ['1-2-3'],
    [' 80'],
    ['80 '],
    ['1 -2'],
    ['1- 2'],
    ['80,81'],
    ['http'],
    ['0x50'],
    ['8_0'],
    ['80.0'],
    ['++80'],
    ['1-65536'],
  ])('rejects %j', (text) => {
    expect(parsePortRange(text)).toBeUndefined();
  });
});

describe('formatPortRange', () => {
  it.each<[number, number, string]>([
    [8080, 8080, '8080'],
    [0, 0, '0'],
    [4000, 5000, '4000-5000'],
    [0, 65535, '0-65535'],
  ])('renders %i..%i as %j', (lo, hi, expected) => {
    expect(formatPortRange({ lo, hi })).toBe(expected);
  });

  it('round-trips a parsed range', () => {
    expect(formatPortRange(parsePortRange('+0100-200') ?? { lo: -1, hi: -1 })).toBe('100-200');
  });
});

// What Go's net.ParseCIDR (go1.26) answered for each text: the family as written and the prefix length, or a refusal.
describe('parseCidr', () => {
  it.each<[string, 4 | 6, number]>([
    ['10.0.0.0/8', 4, 8],
    ['10.1.2.3/8', 4, 8],
    ['0.0.0.0/0', 4, 0],
    ['10.0.0.0/0', 4, 0],
    ['192.0.2.7/32', 4, 32],
    ['255.255.255.255/32', 4, 32],
    // Go reads the prefix length in decimal, with any number of leading zeros.
    ['10.0.0.0/08', 4, 8],
    ['10.0.0.0/010', 4, 10],
    ['10.0.0.0/0000000008', 4, 8],
    ['10.0.0.0/00', 4, 0],
    ['fd00::/8', 6, 8],
    ['FD00::/8', 6, 8],
    ['::/0', 6, 0],
    ['fd00::/128', 6, 128],
    ['fd00::/0128', 6, 128],
    ['0001::/64', 6, 64],
    ['1:2:3:4:5:6:7:8/64', 6, 64],
    ['1:2:3:4:5:6:7::/64', 6, 64],
    ['::1:2:3:4:5:6:7/64', 6, 64],
    // A dotted quad inside an IPv6 address keeps it IPv6: its prefix length counts to 128.
    ['::ffff:1.2.3.4/24', 6, 24],
    ['::ffff:1.2.3.4/128', 6, 128],
    ['::1.2.3.4/128', 6, 128],
    ['1:2:3:4:5:6:1.2.3.4/128', 6, 128],
  ])('reads %j as IPv%i /%i', (text, family, bits) => {
    const cidr = parseCidr(text);
    expect(cidr).toMatchObject({ family, bits, prefix: text.slice(text.indexOf('/') + 1) });
    expect(cidr?.bytes).toHaveLength(family === 4 ? 4 : 16);
  });

  it('keeps the address bytes unmasked', () => {
    expect(parseCidr('10.1.2.3/8')?.bytes).toEqual([10, 1, 2, 3]);
    expect(parseCidr('::ffff:1.2.3.4/120')?.bytes).toEqual([0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff, 1, 2, 3, 4]);
    expect(parseCidr('fd00::1:2/64')?.bytes).toEqual([0xfd, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1, 0, 2]);
  });

  it.each([
    // Zones: an address with one is no network.
    'fe80::1%eth0/64',
    'fe80::1%/64',
    'fe80::1%25eth0/64',
    '10.0.0.1%eth0/8',
    // Leading zeros in an IPv4 octet, there or inside an IPv6 address.
    '010.0.0.0/8',
    '10.00.0.0/8',
    '10.0.0.00/8',
    '::ffff:01.2.3.4/128',
    // Prefix lengths beyond the family, signed, spaced, empty or not decimal.
    '10.0.0.0/33',
    '::ffff:1.2.3.4/129',
    'fd00::/129',
    '10.0.0.0/+8',
    '10.0.0.0/-0',
    '10.0.0.0/ 8',
    '10.0.0.0/8 ',
    '10.0.0.0/',
    '10.0.0.0/0x8',
    '10.0.0.0/\uff18',
    '10.0.0.0/16777215',
    '10.0.0.0/99999999999999999999999',
    '10.0.0.0/8/8',
    // Whitespace around the whole: ParseCIDR trims nothing.
    ' 10.0.0.0/8',
    '10.0.0.0/8\n',
    // Addresses that are not addresses.
    '10.0.0.0',
    '/8',
    '',
    '10.0.0/8',
    '10.0.0.0.0/8',
    '256.0.0.0/8',
    '0x0a.0.0.0/8',
    '\uff11\uff10.0.0.0/8',
    '[fd00::]/8',
    '00001::/64',
    '1:2:3:4:5:6:7:8::/64',
    '1::2::3/64',
    ':::/64',
    ':1::/64',
    '1::2:/64',
    '1.2.3.4::/64',
    '1:2:3:4:5:6:7:1.2.3.4/128',
    '1:2:3:4:5:6:7/64',
  ])('refuses %j', (text) => {
    expect(parseCidr(text)).toBeUndefined();
  });
});

describe('trimGoSpace', () => {
  it.each<[string, string]>([
    [' \t\n\v\f\r10.0.0.0/8\r\n ', '10.0.0.0/8'],
    // Go trims NEL and the Unicode spaces; it keeps the byte-order mark, which String.prototype.trim removes.
    ['\u008510.0.0.0/8\u00a0', '10.0.0.0/8'],
    ['\u2000\u200a\u2028\u2029\u202f\u205f\u3000\u1680x', 'x'],
    ['\ufeff10.0.0.0/8', '\ufeff10.0.0.0/8'],
    ['\u200b10.0.0.0/8', '\u200b10.0.0.0/8'],
    ['a b', 'a b'],
    ['   ', ''],
    ['', ''],
  ])('%j -> %j', (text, trimmed) => {
    expect(trimGoSpace(text)).toBe(trimmed);
  });
});
