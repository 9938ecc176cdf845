/**
 * How the start-up risk analysis reads a pod's command lines: quotes and linkerd-await's flags, pinned case by case,
 * and the same answers for inputs a hostile review makes large (the sizes here are the ones that used to stall the
 * analysis; how long they take is measured by bench/scaling.bench.mjs, not here).
 */
import { describe, expect, it } from 'vitest';
import { startupRisks, type StartupRiskCode } from '../../src/engine/index.js';
import { testValues } from '../support/engine.js';

type Values = ReturnType<typeof testValues>;
const codes = (risks: Array<{ code: StartupRiskCode }>): StartupRiskCode[] => risks.map((r) => r.code);

describe('the command line of a pod that runs to completion', () => {
  /** The shutdown risk of a Job whose one container runs `command` and `args`, the endpoint enabled unless told. */
  const shutdown = (command: string[], args: string[] = [], change: (v: Values) => void = () => {}) => {
    const values = testValues((v) => {
      v.proxy.enableShutdownEndpoint = true;
      change(v);
    });
    const spec = { restartPolicy: 'Never', containers: [{ name: 'job', image: 'job:1', command, args }] };
    return startupRisks({ spec, values, workloadKind: 'job' });
  };
  const adminAt5191 = (v: Values) => (v.proxy.ports.admin = 5191);
  /** The port the proxy is asked to shut down on, read from the risk when it is not the admin port (5191). */
  const portAsked = (command: string[], args: string[] = []): string | undefined => {
    const risks = shutdown(command, args, adminAt5191);
    if (risks.length === 0) return '5191';
    if (risks[0]?.code === 'proxy_never_exits') return undefined;
    return /on port (\d+), but/.exec(risks[0]?.text ?? '')?.[1];
  };

  it('quotes are stripped from either end of a word, never from inside it, and a word of quotes is no word', () => {
    expect(shutdown(['sh', '-c', `"linkerd-await" '--shutdown' -- run`])).toEqual([]);
    expect(shutdown(['linkerd-await', `"'"--shutdown'"'`, '--', 'run'])).toEqual([]);
    // A word of quotes alone disappears, so the flag after it still belongs to linkerd-await.
    expect(shutdown(['linkerd-await', '""', `''`, '--shutdown'])).toEqual([]);
    // Quotes inside a word stay: "-""-shutdown" is no flag linkerd-await knows, and x""y ends its flags.
    expect(codes(shutdown(['linkerd-await', '-""-shutdown']))).toEqual(['proxy_never_exits']);
    expect(codes(shutdown(['linkerd-await', 'x""y', '--shutdown']))).toEqual(['proxy_never_exits']);
    // A shell script's words are split at blanks and separators before their quotes are stripped.
    expect(shutdown(['sh', '-c', `run;'linkerd-await'&&"-S"`])).toEqual([]);
    expect(shutdown(['sh', '-c', `curl -X POST "http://localhost:4191/shutdown"`])).toEqual([]);
  });

  it('long runs of quotes read as short ones', () => {
    const run = (n: number, quote = '"') => quote.repeat(n);
    expect(shutdown(['linkerd-await', `${run(100_000)}--shutdown${run(100_000, "'")}`])).toEqual([]);
    // The run that used to be tried from each of its positions: inside a word, followed by more of the word.
    expect(codes(shutdown(['linkerd-await', `--shutdown${run(100_000)}x`]))).toEqual(['proxy_never_exits']);
    expect(codes(shutdown(['linkerd-await', `${run(50_000)}x${run(50_000)}y`, '--shutdown']))).toEqual(['proxy_never_exits']);
    expect(shutdown(['linkerd-await', run(100_000), '-S'])).toEqual([]);
  });

  it('grouped short flags: S anywhere before a flag that takes a value, which takes the rest of the word or the next', () => {
    expect(portAsked(['linkerd-await', '-vS'])).toBe('4191');
    expect(portAsked(['linkerd-await', '-Sp5191'])).toBe('5191');
    expect(portAsked(['linkerd-await', '-Sp', '5191'])).toBe('5191');
    expect(portAsked(['linkerd-await', '-p', '5191', '-S'])).toBe('5191');
    // -p, -t and -b take what follows them as their value, an S included.
    expect(portAsked(['linkerd-await', '-pS'])).toBeUndefined();
    expect(portAsked(['linkerd-await', '-tS'])).toBeUndefined();
    expect(portAsked(['linkerd-await', '-b', '-S'])).toBeUndefined();
    expect(portAsked(['linkerd-await', '-vt', '2m', '-S'])).toBe('4191');
  });

  it('long flags: --port with or without =, the last valid port given wins, and --timeout-fatal takes no next word', () => {
    expect(portAsked(['linkerd-await', '--port=5191', '--shutdown'])).toBe('5191');
    expect(portAsked(['linkerd-await', '--port', '6000', '--port=5191', '--shutdown'])).toBe('5191');
    expect(portAsked(['linkerd-await', '--port=5191', '--port=6000', '--shutdown'])).toBe('6000');
    expect(portAsked(['linkerd-await', '--port=5191', '--port=abc', '-p123456', '--shutdown'])).toBe('5191');
    expect(portAsked(['linkerd-await', '--timeout', '-S'])).toBeUndefined();
    expect(portAsked(['linkerd-await', '--timeout-fatal', '-S'])).toBe('4191');
    // Five digits are read as a port even beyond 65535, as the proxy is then asked on that number.
    expect(portAsked(['linkerd-await', '-p99999', '-S'])).toBe('99999');
  });

  it('flags end at --, at a lone -, and at the command linkerd-await runs; a flag may take -- as its value', () => {
    expect(portAsked(['linkerd-await', '--', 'run', '--shutdown'])).toBeUndefined();
    expect(portAsked(['linkerd-await', '-', '--shutdown'])).toBeUndefined();
    expect(portAsked(['linkerd-await', 'run', '-S'])).toBeUndefined();
    expect(portAsked(['linkerd-await', '--port', '--', '--shutdown'])).toBe('4191');
    expect(portAsked(['linkerd-await', '-p', '--', '-S'])).toBe('4191');
  });

  it('the first linkerd-await that asks for shutdown gives the port, wherever its flags reach', () => {
    expect(portAsked(['linkerd-await', '--', 'linkerd-await', '-Sp5191', '--', 'run'])).toBe('5191');
    expect(portAsked(['/usr/bin/linkerd-await', '-p5191', '-S', '--', 'linkerd-await', '-Sp6000'])).toBe('5191');
    // A word ending in /linkerd-await that is the value of a flag also starts a reading of its own.
    expect(portAsked(['linkerd-await', '--port', 'x/linkerd-await', '--port=5191', '-S'])).toBe('5191');
    expect(portAsked(['linkerd-await', '-p', '/linkerd-await', '-p6000', '-S'])).toBe('6000');
    // Only the last segment of a path counts, and it must be the whole name.
    expect(portAsked(['/bin/my-linkerd-await', '-S'])).toBeUndefined();
    expect(portAsked(['linkerd-await/', '-S'])).toBeUndefined();
    // In command and args alike, command first.
    expect(portAsked(['linkerd-await'], ['-Sp5191', '--', 'run'])).toBe('5191');
  });

  it('tens of thousands of words ending in /linkerd-await give the answer a few give', () => {
    const pairs = (n: number, value: string) => Array.from({ length: n }, () => ['-p', value]).flat();
    expect(portAsked(['linkerd-await', ...pairs(60_000, '/linkerd-await'), '-S'])).toBe('4191');
    expect(portAsked(['linkerd-await', ...pairs(60_000, '/linkerd-await'), '-p5191', '-S'])).toBe('5191');
    expect(portAsked(['linkerd-await', ...pairs(60_000, '/linkerd-await')])).toBeUndefined();
    // Each one's flags end at the next: none asks, until the last one.
    const many = Array.from({ length: 60_000 }, () => '/linkerd-await');
    expect(portAsked(many)).toBeUndefined();
    expect(portAsked([...many, '-Sp5191'])).toBe('5191');
  });
});
