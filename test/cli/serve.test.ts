import { describe, expect, it } from 'vitest';
import { envArgs } from '../../src/cli/serve.js';
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
