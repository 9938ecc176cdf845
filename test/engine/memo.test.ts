import { describe, expect, it } from 'vitest';
import { deepFreeze, memoizeText } from '../../src/engine/memo.js';

/** A parser that counts its calls, so that a test can see when a text was parsed again rather than remembered. */
function counted<T>(parse: (text: string) => T): { parse: (text: string) => T; calls: () => number } {
  let calls = 0;
  return {
    parse: (text) => {
      calls++;
      return parse(text);
    },
    calls: () => calls,
  };
}

describe('memoizeText', () => {
  it('parses a text once and hands every later caller the same frozen result', () => {
    const p = counted((t) => ({ items: t.split(',') }));
    const parse = memoizeText(p.parse);
    const first = parse('80,443');
    expect(parse('80,443')).toBe(first);
    expect(p.calls()).toBe(1);
    expect(Object.isFrozen(first)).toBe(true);
    expect(Object.isFrozen(first.items)).toBe(true);
    expect(() => first.items.push('8080')).toThrow(TypeError);
  });

  it('remembers an undefined result as well as any other', () => {
    const p = counted(() => undefined);
    const parse = memoizeText(p.parse);
    parse('x');
    parse('x');
    expect(p.calls()).toBe(1);
  });

  it('forgets the text used least recently once it holds as many as it may, and parses it again', () => {
    const p = counted((t) => t.length);
    const parse = memoizeText(p.parse, 2);
    parse('a');
    parse('bb');
    expect(p.calls()).toBe(2);
    parse('ccc');
    parse('a');
    expect(p.calls()).toBe(4);
  });

  it('never remembers a long text: a hostile annotation cannot hold memory', () => {
    const p = counted((t) => t.length);
    const parse = memoizeText(p.parse);
    const long = 'x'.repeat(257);
    expect(parse(long)).toBe(257);
    expect(parse(long)).toBe(257);
    expect(p.calls()).toBe(2);
  });
});

describe('deepFreeze', () => {
  it('freezes nested objects and arrays, and returns its argument', () => {
    const value = { a: { b: [1, { c: 2 }] } };
    expect(deepFreeze(value)).toBe(value);
    expect(Object.isFrozen(value.a.b[1])).toBe(true);
  });
});
