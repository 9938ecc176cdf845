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
