import { readFileSync } from 'node:fs';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { runExplain } from '../../src/cli/explain.js';
import { UsageError } from '../../src/cli/command-io.js';
import { SERVE_HELP, envArgs, runServe } from '../../src/cli/serve.js';
import { parseListenAddress } from '../../src/server/start.js';

describe('PROXY_INJECTOR_* environment variables', () => {
  it('become flags, with list options split on commas', () => {
    expect(
      envArgs({
        PROXY_INJECTOR_ADDR: '127.0.0.1:9443',
        PROXY_INJECTOR_TLS_SAN: 'a.svc, b.svc',
        PROXY_INJECTOR_LOG_LEVEL: 'debug',
        PROXY_INJECTOR_HELP: 'true',
        UNRELATED: 'x',
      }),
    ).toEqual(['--addr=127.0.0.1:9443', '--tls-san=a.svc', '--tls-san=b.svc', '--log-level=debug']);
  });

  it('boolean variables become bare flags when true', () => {
    expect(envArgs({ PROXY_INJECTOR_NO_CLUSTER: 'true' })).toEqual(['--no-cluster']);
    expect(envArgs({ PROXY_INJECTOR_NO_CLUSTER: 'false' })).toEqual([]);
  });

  it('empty variables are ignored', () => {
    expect(envArgs({ PROXY_INJECTOR_VALUES: '' })).toEqual([]);
  });
});

describe('parseListenAddress', () => {
  it.each([
    ['0.0.0.0:8443', { host: '0.0.0.0', port: 8443 }],
    [':8443', { host: '0.0.0.0', port: 8443 }],
    ['[::]:9995', { host: '::', port: 9995 }],
    ['localhost:0', { host: 'localhost', port: 0 }],
  ])('%s', (text, expected) => {
    expect(parseListenAddress(text)).toEqual(expected);
  });

  it.each(['8443', '0.0.0.0:', '0.0.0.0:70000', ':::8443', 'host:port'])('refuses %j', (text) => {
    expect(() => parseListenAddress(text)).toThrowError(/invalid listen address/);
  });
});

describe('serve usage errors', () => {
  afterEach(() => {
    vi.unstubAllEnvs();
  });

  it.each([
    [['--bogus'], 'unknown flag --bogus'],
    [['--addr'], '--addr needs a value'],
    [['--no-cluster', 'extra'], 'unexpected argument "extra": this command takes none'],
    [['--no-cluster', '--tls-min-version', '1.1'], '--tls-min-version "1.1": expected 1.2 or 1.3'],
    [['--no-cluster', '--shutdown-delay', 'soon'], '--shutdown-delay "soon": expected a duration such as 5s or 500ms'],
    [['--no-cluster', '--admin-addr', '9995'], '--admin-addr: invalid listen address "9995": expected HOST:PORT, e.g. 0.0.0.0:8443'],
    [['--no-cluster', '--kubeconfig', 'k'], '--no-cluster and --kubeconfig contradict each other'],
    [['--no-cluster', '--pod-security-default', 'strict'], '--pod-security-default "strict": expected privileged, baseline, restricted'],
    [['--pod-scan-interval', '30s'], '--pod-scan-interval "30s": at least 1m, since each scan lists every pod, or 0s for none'],
    [['--no-cluster', '--pod-scan-interval', '5m'], "--pod-scan-interval reads the cluster's pods, and --no-cluster says there is none"],
  ])('%j is a usage error before anything starts', async (args, message) => {
    await expect(runServe(args)).rejects.toThrow(new UsageError(message));
  });

  it('a bad value from the environment is named as the variable; the same value as a flag is named as the flag', async () => {
    vi.stubEnv('PROXY_INJECTOR_EVENTS', 'some');
    await expect(runServe(['--no-cluster'])).rejects.toThrow(new UsageError('PROXY_INJECTOR_EVENTS "some": expected all, relevant or none'));
    await expect(runServe(['--no-cluster', '--events', 'few'])).rejects.toThrow(new UsageError('--events "few": expected all, relevant or none'));
  });
});

describe('explain usage errors', () => {
  it.each([
    [['--bogus', 'a.yaml'], 'unknown flag --bogus'],
    [[], 'no input: give files, directories, or - for stdin'],
    [['--namespace-annotation', 'novalue', 'a.yaml'], '--namespace-annotation "novalue": expected KEY=VALUE'],
  ])('%j exits 2 with the reason and the usage line', async (args, message) => {
    const result = await runExplain(args);
    expect(result.code).toBe(2);
    expect(result.stderr).toContain(message);
    expect(result.stderr).toContain('Usage: proxy-injector explain');
  });
});

describe('where the server listens', () => {
  it('npm start listens on loopback only, while serve keeps the in-cluster default of every interface', () => {
    const pkg = JSON.parse(readFileSync('package.json', 'utf8')) as { scripts: Record<string, string> };
    expect(pkg.scripts['start']).toMatch(/ serve .*--addr 127\.0\.0\.1:8443 .*--admin-addr 127\.0\.0\.1:9995/);
    expect(SERVE_HELP).toContain('--addr HOST:PORT             webhook listen address (default 0.0.0.0:8443)');
    expect(SERVE_HELP).toContain('--admin-addr HOST:PORT       admin listen address (default 0.0.0.0:9995)');
  });
});
