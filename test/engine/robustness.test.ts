/**
 * Malformed objects: whatever shape a manifest has, the engine either refuses it with an EngineError or returns a
 * patch that applies cleanly. It never throws anything else. Seeded, so a failure reproduces.
 */
import { describe, expect, it } from 'vitest';
import { EngineError, inject, type InjectionResult } from '../../src/engine/index.js';
import { applied, testConfig } from '../support/engine.js';
import { seededRandom } from '../support/random.js';


const JUNK: unknown[] = [null, 0, -1, 70000, 1.5, '', 'x', '80', true, false, [], [null], ['a'], {}, { a: 1 }, [{}]];

function basePod(): Record<string, unknown> {
  return {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: {
      name: 'p',
      namespace: 'ns',
      annotations: { 'linkerd.io/inject': 'enabled', 'config.linkerd.io/opaque-ports': 'http,3306' },
      labels: { app: 'p' },
    },
    spec: {
      initContainers: [{ name: 'i', image: 'i', ports: [{ containerPort: 11211, name: 'mc' }] }],
      containers: [
        {
          name: 'c',
          image: 'c',
          ports: [{ containerPort: 80, name: 'http', protocol: 'TCP' }],
          readinessProbe: { httpGet: { port: 9090, path: '/' } },
          livenessProbe: { httpGet: { port: 'http' } },
          securityContext: { capabilities: { add: ['NET_BIND_SERVICE'], drop: ['ALL'] } },
          volumeMounts: [{ name: 'sa', mountPath: '/var/run/secrets/kubernetes.io/serviceaccount', readOnly: true }],
        },
      ],
      volumes: [{ name: 'v', emptyDir: {} }],
    },
  };
}

/** Every path to a node of the object, so one can be replaced. */
function paths(value: unknown, prefix: Array<string | number> = []): Array<Array<string | number>> {
  const out: Array<Array<string | number>> = [prefix];
  if (Array.isArray(value)) value.forEach((v, i) => out.push(...paths(v, [...prefix, i])));
  else if (value && typeof value === 'object') {
    for (const [k, v] of Object.entries(value)) out.push(...paths(v, [...prefix, k]));
  }
  return out;
}

function setAt(root: Record<string, unknown>, path: Array<string | number>, value: unknown): void {
  let at: any = root;
  for (const key of path.slice(0, -1)) at = at[key];
  at[path[path.length - 1] as string | number] = value;
}

describe('malformed objects', () => {
  it('never crash the engine: 3000 seeded mutations', () => {
    const random = seededRandom(20261121);
    const config = testConfig();
    let injected = 0;
    let refused = 0;
    for (let i = 0; i < 3000; i++) {
      const pod = basePod();
      const mutations = 1 + Math.floor(random() * 3);
      for (let m = 0; m < mutations; m++) {
        const all = paths(pod).filter((p) => p.length > 0);
        const target = all[Math.floor(random() * all.length)] as Array<string | number>;
        setAt(pod, target, structuredClone(JUNK[Math.floor(random() * JUNK.length)]));
      }
      const snapshot = JSON.stringify(pod);
      let result: InjectionResult | undefined;
      try {
        result = inject({ object: pod, kind: 'Pod', namespace: 'ns', config });
      } catch (err) {
        expect(err, `mutation ${i}: ${snapshot}`).toBeInstanceOf(EngineError);
        refused++;
        continue;
      }
      expect(JSON.stringify(pod), 'the engine must not modify its input').toBe(snapshot);
      expect(() => applied(pod, result.patch), `mutation ${i}: ${snapshot}`).not.toThrow();
      if (result.outcome === 'injected') injected++;
    }
    // The mutations must leave most pods injectable, or this test would prove little.
    expect(injected).toBeGreaterThan(1500);
    expect(injected + refused).toBeLessThanOrEqual(3000);
  });

  it.each([null, 'pod', 42, [], [{ kind: 'Pod' }]])('a non-object (%j) is refused as INVALID_OBJECT', (object) => {
    expect(() => inject({ object, kind: 'Pod', config: testConfig() })).toThrowError(
      expect.objectContaining({ code: 'INVALID_OBJECT' }) as Error,
    );
  });
});

/**
 * What one pod can make the engine do is bounded by what the API server would store: annotations over its 256 KiB
 * are refused, and within that every list is read once, warnings stop at a few per annotation, and no list is spread
 * into a call's arguments (a long one overflows the stack).
 */
describe('hostile annotation values', () => {
  const enabled = (annotations: Record<string, string>) => ({
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: { name: 'p', namespace: 'ns', annotations: { 'linkerd.io/inject': 'enabled', ...annotations } },
    spec: { containers: [{ name: 'c', image: 'c' }] },
  });
  const run = (object: unknown, namespaceAnnotations: Record<string, string> = {}): InjectionResult =>
    inject({ object, kind: 'Pod', namespace: 'ns', namespaceAnnotations, config: testConfig() });

  it('annotations larger than the API server accepts are refused as INVALID_OBJECT, counted in UTF-8 bytes', () => {
    const under = 'x'.repeat(256 * 1024 - 100);
    expect(run(enabled({ 'example.com/big': under })).outcome).toBe('injected');
    // 'é' takes two bytes: 140,000 of them are 280,000 bytes in 140,000 characters.
    const err = (() => {
      try {
        run(enabled({ 'example.com/big': 'é'.repeat(140_000) }));
      } catch (e) {
        return e;
      }
      return undefined;
    })();
    expect(err).toBeInstanceOf(EngineError);
    expect((err as EngineError).code).toBe('INVALID_OBJECT');
    expect((err as EngineError).message).toBe('the annotations of pod p take 280039 bytes, more than the 262144 (256 KiB) the API server accepts');
  });

  it('an opaque-ports list of 100,000 invalid items gives eleven short warnings, not one per item', () => {
    const result = run(enabled({ 'config.linkerd.io/opaque-ports': Array.from({ length: 100_000 }, () => '!').join(',') }));
    expect(result.warnings).toHaveLength(11);
    expect(result.warnings[0]).toBe('ignored annotation config.linkerd.io/opaque-ports="!": not a port, a range or a container port name');
    expect(result.warnings[10]).toBe('ignored 99990 more items of annotation config.linkerd.io/opaque-ports: not a port, a range or a container port name');
  });

  it('an unusable value is quoted in its warning up to 100 characters, and a list of bad items up to ten of them', () => {
    const value = Array.from({ length: 30_000 }, (_, i) => `bad${i}`).join(',');
    const [warning] = run(enabled({ 'config.linkerd.io/skip-inbound-ports': value })).warnings;
    expect(warning).toBe(
      `ignored annotation config.linkerd.io/skip-inbound-ports=${JSON.stringify(value.slice(0, 100))}... (${value.length} characters): ` +
        'not a comma-separated list of ports and port ranges (bad0, bad1, bad2, bad3, bad4, bad5, bad6, bad7, bad8, bad9 and 29990 more)',
    );
  });

  it("150,000 additional env entries from the namespace are merged by name, each name once, without overflowing the stack", () => {
    const entries = Array.from({ length: 150_000 }, (_, i) => ({ name: `E${i % 100_000}`, value: String(i) }));
    const result = run(enabled({}), { 'config.linkerd.io/proxy-additional-env': JSON.stringify(entries) });
    const proxy = applied(enabled({}), result.patch) as unknown as { spec: { containers: Array<{ name: string; env: Array<{ name: string; value?: string }> }> } };
    const env = proxy.spec.containers.find((c) => c.name === 'linkerd-proxy')?.env ?? [];
    const added = env.filter((e) => /^E\d+$/.test(e.name));
    expect(added).toHaveLength(100_000);
    // A later entry of the same name replaces the earlier one where it stood.
    expect(added[0]).toEqual({ name: 'E0', value: '100000' });
    expect(added[99_999]).toEqual({ name: 'E99999', value: '99999' });
  });
});
