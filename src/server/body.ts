/**
 * A review's body as it arrives: what it will hold once parsed, charged to the client that sends it and to the listener,
 * so that no body and no client can take the memory every other review needs. A body is charged its bytes and, for each
 * JSON value it will make, what the parsed value may take; nothing is charged for what a client only declares.
 */
import type { Readable } from 'node:stream';

/**
 * What one parsed JSON value may hold beyond its text, charged per delimiter that starts one (`{`, `[`, `,`, `:`): an
 * empty object in an array, two delimiters, takes about 64 bytes of heap once parsed, the most of any value.
 */
export const BYTES_PER_VALUE = 32;

/** A body being read, which may be refused to make room for an older body of its client. */
export interface Reading {
  refuse(): void;
}

/** What the reviews being read or answered hold, in all and by client address. */
export class InFlightBytes {
  private held = 0;
  private readonly byClient = new Map<string, number>();
  /** Each client's bodies being read, oldest first. */
  private readonly reading = new Map<string, Set<Reading>>();

  constructor(
    /** The most all reviews together may hold. */
    readonly limit: number,
    /** The most one client's reviews may hold; one review larger than this is never taken. */
    readonly perClient: number,
  ) {}

  /** Charges `bytes` to `client` unless that would take it, or everyone, past a bound: then says which, and charges nothing. */
  take(client: string, bytes: number): 'client' | 'all' | undefined {
    const own = this.byClient.get(client) ?? 0;
    if (own + bytes > this.perClient) return 'client';
    if (this.held + bytes > this.limit) return 'all';
    this.held += bytes;
    this.byClient.set(client, own + bytes);
    return undefined;
  }

  give(client: string, bytes: number): void {
    if (bytes === 0) return;
    this.held -= bytes;
    const left = (this.byClient.get(client) ?? bytes) - bytes;
    if (left > 0) this.byClient.set(client, left);
    else this.byClient.delete(client);
  }

  /** Notes a body of `client` being read, after those already being read. */
  startReading(client: string, reading: Reading): void {
    let bodies = this.reading.get(client);
    if (!bodies) this.reading.set(client, (bodies = new Set()));
    bodies.add(reading);
  }

  stopReading(client: string, reading: Reading): void {
    const bodies = this.reading.get(client);
    bodies?.delete(reading);
    if (bodies?.size === 0) this.reading.delete(client);
  }

  /** The client's youngest body being read, when it arrived after `than`. */
  youngerThan(client: string, than: Reading): Reading | undefined {
    let youngest: Reading | undefined;
    for (const body of this.reading.get(client) ?? []) youngest = body;
    return youngest === than ? undefined : youngest;
  }

  /** What the client holds now (all clients when none is named). */
  holding(client?: string): number {
    return client === undefined ? this.held : (this.byClient.get(client) ?? 0);
  }
}

/**
 * Counts, as a JSON text arrives in chunks, the delimiters outside strings that start a value or a key: an upper bound on
 * the values the text parses into, found in one pass with no lookahead.
 */
export class JsonValueCounter {
  private inString = false;
  private escaped = false;

  /** The delimiters in `chunk`, which follows the chunks counted before. */
  add(chunk: Uint8Array): number {
    let count = 0;
    let inString = this.inString;
    let escaped = this.escaped;
    for (let i = 0; i < chunk.length; i++) {
      const c = chunk[i];
      if (inString) {
        if (escaped) escaped = false;
        else if (c === 0x5c) escaped = true;
        else if (c === 0x22) inString = false;
      } else if (c === 0x22) {
        inString = true;
      } else if (c === 0x7b || c === 0x5b || c === 0x2c || c === 0x3a) {
        count++;
      }
    }
    this.inString = inString;
    this.escaped = escaped;
    return count;
  }
}

/** Why a body was not read to its end: the bound it met. */
export type BodyRefusal =
  /** Its bytes pass the largest body taken. */
  | { bound: 'body'; bytes: number }
  /** It starts more JSON values than one body may. */
  | { bound: 'values'; bytes: number; values: number }
  /** What it would hold once parsed passes what one client may hold, so that it can never be taken. */
  | { bound: 'weight'; bytes: number; values: number }
  /** With the client's other reviews, it would pass what one client may hold. */
  | { bound: 'client'; held: number }
  /** With every other review, it would pass what all may hold. */
  | { bound: 'all'; held: number }
  /** The client went away before its body ended: nobody is left to answer. */
  | { bound: 'gone' };

export interface BodyCharge {
  client: string;
  /** What this request holds now, released when its answer is done or its connection gone. */
  bytes: number;
}

/**
 * Reads a body to its end as text, charging each chunk as it arrives: its bytes and BYTES_PER_VALUE for each value it
 * starts. Stops reading at the first bound met and resolves with which one, giving back what it held; the charge of a
 * body read to its end is the caller's to give back. When a client's bodies pass its share, its youngest is refused
 * first, so that its oldest always finishes however their chunks interleave.
 */
export function readBody(payload: Readable, bounds: { maxBytes: number; maxValues: number }, budget: InFlightBytes, charge: BodyCharge): Promise<string | BodyRefusal> {
  return new Promise((resolve) => {
    const chunks: Buffer[] = [];
    const counter = new JsonValueCounter();
    let bytes = 0;
    let values = 0;
    const reading: Reading = { refuse: () => stop({ bound: 'client', held: budget.holding(charge.client) }) };
    const stop = (refusal: BodyRefusal): void => {
      budget.stopReading(charge.client, reading);
      budget.give(charge.client, charge.bytes);
      charge.bytes = 0;
      // The rest of a refused body is dropped as it arrives, so that the client can read the refusal before its
      // connection is closed; its bytes are neither kept nor charged.
      payload.off('data', onData);
      payload.off('end', onEnd);
      payload.off('error', onError);
      payload.on('error', () => {});
      payload.resume();
      chunks.length = 0;
      resolve(refusal);
    };
    const onError = (): void => stop({ bound: 'gone' });
    const onData = (chunk: Buffer): void => {
      bytes += chunk.length;
      if (bytes > bounds.maxBytes) return stop({ bound: 'body', bytes });
      const counted = counter.add(chunk);
      values += counted;
      if (values > bounds.maxValues) return stop({ bound: 'values', bytes, values });
      const weight = chunk.length + counted * BYTES_PER_VALUE;
      if (charge.bytes + weight > budget.perClient) return stop({ bound: 'weight', bytes, values });
      let over = budget.take(charge.client, weight);
      for (let younger; over === 'client' && (younger = budget.youngerThan(charge.client, reading)); over = budget.take(charge.client, weight)) {
        younger.refuse();
      }
      if (over) return stop({ bound: over, held: budget.holding(over === 'client' ? charge.client : undefined) });
      charge.bytes += weight;
      chunks.push(chunk);
    };
    const onEnd = (): void => {
      budget.stopReading(charge.client, reading);
      resolve(Buffer.concat(chunks, bytes).toString('utf8'));
    };
    budget.startReading(charge.client, reading);
    payload.on('data', onData);
    payload.once('end', onEnd);
    payload.once('error', onError);
  });
}
