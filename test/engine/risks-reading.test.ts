/**
 * How the start-up risk analysis reads a pod's command lines and port lists: quotes, linkerd-await's flags, named ports
 * and ranges, pinned case by case, and the same answers for inputs a hostile review makes large (the sizes here are the
 * ones that used to stall the analysis; how long they take is measured by bench/scaling.bench.mjs, not here).
 */
import { describe, expect, it } from 'vitest';
import { startupRisks, type StartupRiskCode } from '../../src/engine/index.js';
import type { ContainerPort } from '../../src/engine/k8s.js';
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
    const inside = `${run(50_000)}x${run(50_000)}y`;
    expect(codes(shutdown(['linkerd-await', inside, '--shutdown']))).toEqual(['proxy_never_exits']);
    expect(shutdown(['linkerd-await', run(100_000), '-S'])).toEqual([]);
  });

  it('grouped short flags: S before a flag that takes a value, which takes the rest of the word or the next', () => {
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

  it('long flags: --port with or without =, the last valid port wins, --timeout-fatal takes no next word', () => {
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

  it('a request to the shutdown endpoint is found in the text as in its words, wherever blanks, separators and quotes fall', () => {
    // The words as the analysis cuts them: split at blanks and shell separators, quotes stripped from either end.
    const firstRequest = (texts: string[]): string | undefined => {
      for (const text of texts) {
        for (const word of text.split(/[\s;&|()]+/)) {
          const m = /(?:localhost|127\.0\.0\.1|\[::1\]):(\d{1,5})\/shutdown\b/.exec(word.replace(/^['"]+|['"]+$/g, ''));
          if (m) return m[1];
        }
      }
      return undefined;
    };
    const pieces = ['localhost:5191/shutdown', '127.0.0.1:4191/shutdown', '[::1]:7/shutdown', 'http://', '"', "'", ' ', ';', '&&', '(', ')', 'x', 'shutdownx', ':', '/'];
    let seed = 7;
    const random = (n: number) => (seed = (seed * 1103515245 + 12345) % 2 ** 31) % n;
    for (let i = 0; i < 2_000; i++) {
      const texts = Array.from({ length: 1 + random(3) }, () => Array.from({ length: random(8) }, () => pieces[random(pieces.length)]).join(''));
      const want = firstRequest(texts);
      const risks = shutdown(['sh', '-c', ...texts.slice(0, 1)], texts.slice(1), adminAt5191);
      const got = risks.length === 0 ? '5191' : (/on port (\d+), but/.exec(risks[0]?.text ?? '')?.[1] ?? (risks[0]?.code === 'proxy_never_exits' ? undefined : 'other'));
      expect(got, JSON.stringify(texts)).toBe(want);
    }
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

describe('declared ports against the port lists', () => {
  /** The risks of a pod whose one container declares `ports`, with these skip, require-identity and opaque lists. */
  const risks = (ports: ContainerPort[], lists: { skip?: string; identity?: string; opaque?: string }) => {
    const values = testValues((v) => {
      if (lists.skip !== undefined) v.proxyInit.ignoreInboundPorts = lists.skip;
      if (lists.identity !== undefined) v.proxy.requireIdentityOnInboundPorts = lists.identity;
    });
    const spec = { containers: [{ name: 'app', image: 'app:1', ports }] };
    const opaque = lists.opaque !== undefined && { explicitOpaquePorts: lists.opaque };
    return startupRisks({ spec, values, workloadKind: 'deployment', ...opaque });
  };
  /** The ports reported, each with the code it is reported under. */
  const reported = (...args: Parameters<typeof risks>): string[] =>
    risks(...args).map((r) => `${/port (\d+(?:\.\d+)?)/.exec(r.text)?.[1]} ${r.code}`);

  it('ranges, single ports, and items that read as neither', () => {
    const ports = [{ containerPort: 8080 }, { containerPort: 9000 }, { containerPort: 7000 }];
    expect(reported(ports, { skip: '8000-8100,9000', identity: '8080,9000-9000', opaque: '9000' })).toEqual([
      '8080 skipped_port_requires_identity',
      '9000 skipped_port_requires_identity',
      '9000 skipped_port_is_opaque',
    ]);
    // The order of a list's items does not matter.
    expect(reported(ports, { skip: '9000,7001-7999,8000-8100', identity: '9000,8080,1-2' })).toEqual([
      '8080 skipped_port_requires_identity',
      '9000 skipped_port_requires_identity',
    ]);
    // A reversed range, a number beyond 65535 and a word stand for nothing; blanks around an item are trimmed.
    expect(reported(ports, { skip: '8100-8000,70000,web', identity: '8080' })).toEqual([]);
    expect(reported(ports, { skip: ' 8080 ', identity: '+8080' })).toEqual(['8080 skipped_port_requires_identity']);
  });

  it('overlapping and nested ranges, and ranges that only touch', () => {
    const ports = [8000, 8050, 8100, 8101, 8200].map((containerPort) => ({ containerPort }));
    const found = reported(ports, { skip: '8000-8100,8050-8060,8040-8101', identity: '0-65535' });
    expect(found.map((r) => r.split(' ')[0])).toEqual(['8000', '8050', '8100', '8101']);
    // A declared port between two ranges that touch is in neither; the API server refuses such a port, the engine
    // does not, so the reading must not merge them.
    const between = [{ containerPort: 8100.5 }, { containerPort: 8101 }];
    const touching = { skip: '8000-8100,8101-8200', identity: '8000-8200' };
    expect(reported(between, touching)).toEqual(['8101 skipped_port_requires_identity']);
    expect(reported([{ containerPort: Number.NaN }], { skip: '0-65535', identity: '0-65535' })).toEqual([]);
  });

  it('names stand for the port they name in the pod, before any reading as a number', () => {
    const web = { name: 'web', containerPort: 8080 };
    const ports = [web, { name: '9000', containerPort: 9443 }, { containerPort: 9000 }];
    expect(reported(ports, { skip: 'web,9000', identity: 'web', opaque: '9000' })).toEqual([
      '8080 skipped_port_requires_identity',
      '9443 skipped_port_is_opaque',
    ]);
    // A name the pod does not declare is nothing; UDP ports are not declared TCP ports.
    const udp = [{ name: 'web', containerPort: 8080, protocol: 'UDP' }];
    expect(reported(udp, { skip: 'web,8080', identity: '8080' })).toEqual([]);
  });

  it('a port declared twice is reported once, under the first container that declares it', () => {
    const values = testValues((v) => {
      v.proxyInit.ignoreInboundPorts = '8080';
      v.proxy.requireIdentityOnInboundPorts = '8080';
    });
    const spec = {
      initContainers: [{ name: 'first', image: 'a', ports: [{ containerPort: 8080 }] }],
      containers: [{ name: 'second', image: 'a', ports: [{ containerPort: 8080 }, { containerPort: 8080 }] }],
    };
    const found = startupRisks({ spec, values, workloadKind: 'deployment' });
    expect(found.map((r) => [r.code, r.container])).toEqual([['skipped_port_requires_identity', 'first']]);
  });

  it('tens of thousands of ports against lists of a hundred thousand items report exactly the ports in both', () => {
    const ports = Array.from({ length: 80_000 }, (_, i) => ({ containerPort: 1 + (i % 65_000) }));
    // Every third port skipped, as single items and as ranges; every fifth port requires an identity.
    const third = (i: number) => 3 * (i % 21_000) + 3;
    const skip = Array.from({ length: 120_000 }, (_, i) => (i % 2 === 0 ? `${third(i)}` : `${third(i)}-${third(i)}`));
    const identity = Array.from({ length: 120_000 }, (_, i) => `${5 * (i % 13_000) + 5}`);
    const all = risks(ports, { skip: skip.join(','), identity: identity.join(',') });
    // The proxy's four ports are among those declared, twice each, and each declaration is a clash of its own.
    expect(all.filter((r) => r.code === 'container_port_is_proxy_port')).toHaveLength(8);
    const found = all.filter((r) => r.code !== 'container_port_is_proxy_port');
    const expected = new Set<number>();
    for (let p = 1; p <= 65_000; p++) if (p % 15 === 0 && p <= 63_000) expected.add(p);
    expect(found.length).toBe(expected.size);
    expect(found.every((r) => r.code === 'skipped_port_requires_identity')).toBe(true);
    expect(found.map((r) => Number(/port (\d+)/.exec(r.text)?.[1]))).toEqual([...expected]);
  });
});
