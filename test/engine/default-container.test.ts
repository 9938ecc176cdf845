/** kubectl's default container: kept on the app when the proxy goes first, only when asked (Linkerd never sets it). */
import { describe, expect, it } from 'vitest';
import { inject } from '../../src/engine/index.js';
import { applied, pod, testConfig } from '../support/engine.js';

const KEY = 'kubectl.kubernetes.io/default-container';
const APPS = [
  { name: 'web', image: 'web:1' },
  { name: 'sidecar', image: 'log:1' },
];

function injected(annotations: Record<string, string>, kubectlDefaultContainer?: boolean, change?: Parameters<typeof testConfig>[0]) {
  const object = pod({ annotations: { 'linkerd.io/inject': 'enabled', ...annotations }, spec: { containers: APPS } });
  const result = inject({ object, config: testConfig(change), ...(kubectlDefaultContainer !== undefined && { kubectlDefaultContainer }) });
  expect(result.outcome).toBe('injected');
  const after = applied(object, result.patch) as { metadata: { annotations: Record<string, string> }; spec: { containers: Array<{ name: string }> } };
  return { result, annotations: after.metadata.annotations, containers: after.spec.containers.map((c) => c.name) };
}

describe('kubectl default container', () => {
  it('names the app`s first container when the proxy goes first, as an added annotation', () => {
    const { result, annotations, containers } = injected({}, true);
    expect(containers).toEqual(['linkerd-proxy', 'web', 'sidecar']);
    expect(annotations[KEY]).toBe('web');
    expect(result.added.annotations[KEY]).toBe('web');
    expect(result.patch).toContainEqual({ op: 'add', path: '/metadata/annotations/kubectl.kubernetes.io~1default-container', value: 'web' });
  });

  it('is not set unless asked, as Linkerd never sets it', () => {
    expect(injected({}).annotations[KEY]).toBeUndefined();
    expect(injected({}, false).annotations[KEY]).toBeUndefined();
  });

  it('is not needed when the proxy is not first: await disabled (last) or a native sidecar (an init container)', () => {
    const last = injected({ 'config.linkerd.io/proxy-await': 'disabled' }, true);
    expect(last.containers).toEqual(['web', 'sidecar', 'linkerd-proxy']);
    expect(last.annotations[KEY]).toBeUndefined();
    expect(injected({ 'config.linkerd.io/proxy-enable-native-sidecar': 'true' }, true).annotations[KEY]).toBeUndefined();
    expect(injected({}, true, (v) => (v.proxy.nativeSidecar = true)).annotations[KEY]).toBeUndefined();
  });

  it('leaves a pod`s own choice alone', () => {
    const own = injected({ [KEY]: 'sidecar' }, true);
    expect(own.annotations[KEY]).toBe('sidecar');
    expect(own.result.added.annotations[KEY]).toBeUndefined();
  });
});
