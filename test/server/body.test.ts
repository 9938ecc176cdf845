/** What a body is charged as it arrives: the JSON values it starts, wherever its chunks are cut, and the budget by client. */
import { PassThrough } from 'node:stream';
import { describe, expect, it } from 'vitest';
import { BYTES_PER_VALUE, InFlightBytes, JsonValueCounter, readBody } from '../../src/server/body.js';

/** The values a parsed JSON text holds, keys included: what the counter must never count fewer of. */
function parsedValues(value: unknown): number {
  if (Array.isArray(value)) return 1 + value.reduce((n: number, v) => n + parsedValues(v), 0);
  if (value !== null && typeof value === 'object') return 1 + Object.values(value).reduce((n: number, v) => n + 1 + parsedValues(v), 0);
  return 1;
}

const counted = (text: string, cut: number): number => {
  const bytes = Buffer.from(text);
  const counter = new JsonValueCounter();
  let n = 0;
  for (let at = 0; at < bytes.length; at += cut) n += counter.add(bytes.subarray(at, at + cut));
  return n;
};

describe('JsonValueCounter', () => {
  const texts = [
    '{"a":1,"b":[1,2,{"c":null}],"d":{}}',
    '[{},{},[],[[]],"x"]',
    // Delimiters, quotes and backslashes inside strings start nothing.
    '{"k,e:y{[":"va\\"lue,:{[","z":"\\\\","w":"\\\\\\"{,"}',
    JSON.stringify({ metadata: { annotations: { 'config.linkerd.io/opaque-ports': '1,2,3,4,5' } }, spec: { containers: [{ name: 'a', args: ['-c', '"x" && y'] }] } }),
  ];
  it.each(texts)('counts at least one delimiter per value but the first, whatever the chunks: %s', (text) => {
    const whole = counted(text, text.length);
    expect(whole + 1).toBeGreaterThanOrEqual(parsedValues(JSON.parse(text)));
    for (const cut of [1, 2, 3, 7]) expect(counted(text, cut)).toBe(whole);
  });

  it('counts the delimiters outside strings exactly', () => {
    expect(counted('{"a":[1,2],"b":"{[,:"}', 64)).toBe(6);
    expect(counted('"\\\\",[', 64)).toBe(2);
  });
});

describe('InFlightBytes', () => {
  it('refuses what would pass a client its share, or everyone the limit, and charges nothing then', () => {
    const budget = new InFlightBytes(100, 50);
    expect(budget.take('a', 40)).toBeUndefined();
    expect(budget.take('a', 20)).toBe('client');
    expect(budget.holding('a')).toBe(40);
    expect(budget.take('b', 50)).toBeUndefined();
    expect(budget.take('c', 20)).toBe('all');
    expect(budget.holding()).toBe(90);
    budget.give('a', 40);
    expect(budget.take('c', 20)).toBeUndefined();
    expect(budget.holding('a')).toBe(0);
  });
});

describe('readBody', () => {
  it('charges bytes and values as chunks arrive, and says which bound stopped it', async () => {
    const budget = new InFlightBytes(1_000, 500);
    const charge = { client: 'a', bytes: 0 };
    const stream = new PassThrough();
    const read = readBody(stream, { maxBytes: 10_000, maxValues: 1_000 }, budget, charge);
    stream.write('{"a":[');
    stream.end('1,2]}');
    expect(await read).toBe('{"a":[1,2]}');
    expect(charge.bytes).toBe(11 + 4 * BYTES_PER_VALUE);
    expect(budget.holding('a')).toBe(charge.bytes);

    const heavy = readBody(new PassThrough().end('[' + '{},'.repeat(100) + '{}]'), { maxBytes: 10_000, maxValues: 1_000 }, budget, { client: 'b', bytes: 0 });
    expect(await heavy).toMatchObject({ bound: 'weight' });
    const many = readBody(new PassThrough().end('[' + '1,'.repeat(100) + '1]'), { maxBytes: 10_000, maxValues: 50 }, budget, { client: 'b', bytes: 0 });
    expect(await many).toMatchObject({ bound: 'values', values: 101 });
    const large = readBody(new PassThrough().end('"' + 'x'.repeat(200) + '"'), { maxBytes: 100, maxValues: 1_000 }, budget, { client: 'c', bytes: 0 });
    expect(await large).toEqual({ bound: 'body', bytes: 202 });
  });

  it("refuses a client's youngest body first, so that its oldest finishes however their chunks interleave", async () => {
    const budget = new InFlightBytes(10_000, 1_000);
    const bounds = { maxBytes: 10_000, maxValues: 1_000 };
    const streams = [new PassThrough(), new PassThrough(), new PassThrough()];
    const charges = streams.map(() => ({ client: 'a', bytes: 0 }));
    const reads = streams.map((stream, i) => readBody(stream, bounds, budget, charges[i] as { client: string; bytes: number }));
    // Each sends 300 bytes in turn, 900 in all: together they pass the share of 1,000 on the oldest's second chunk.
    const chunk = `"${'x'.repeat(298)}"`;
    for (let round = 0; round < 3; round++) {
      for (const stream of streams) if (stream.writable) stream.write(round === 0 ? chunk : ' '.repeat(300));
      await new Promise((resolve) => setImmediate(resolve));
    }
    for (const stream of streams) stream.end();
    const [oldest, middle, youngest] = await Promise.all(reads);
    expect(oldest).toBe(chunk + ' '.repeat(600));
    expect(middle).toMatchObject({ bound: 'client' });
    expect(youngest).toMatchObject({ bound: 'client' });
    // A refused body holds nothing once refused; the oldest holds what it read until the caller gives it back.
    expect(charges.map((c) => c.bytes)).toEqual([900, 0, 0]);
    expect(budget.holding('a')).toBe(900);
  });
});
