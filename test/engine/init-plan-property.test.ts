/**
 * Random values for every annotation, most often for those that reach linkerd-init's arguments: whatever the override
 * rules accept renders, and linkerd-init's arguments either make a plan iptables applies or the pod carries a start-up
 * risk on linkerd-init saying it will stop. A pod that does neither is injected with no warning and never starts.
 * Seeded, so a failure reproduces.
 */
import { describe, expect, it } from 'vitest';
import { EngineError, inject, iptablesPlan, type LinkerdValues } from '../../src/engine/index.js';
import type { Container } from '../../src/engine/k8s.js';
import { ANNOTATIONS, INIT_CONTAINER } from '../../src/engine/names.js';
import { applied, pod, testConfig } from '../support/engine.js';
import { seededRandom } from '../support/random.js';

/** The annotations that end up in linkerd-init's arguments, drawn more often than the rest. */
const INIT_ANNOTATIONS = new Set<string>([
  ANNOTATIONS.skipSubnets,
  ANNOTATIONS.skipInboundPorts,
  ANNOTATIONS.skipOutboundPorts,
  ANNOTATIONS.inboundPort,
  ANNOTATIONS.outboundPort,
  ANNOTATIONS.adminPort,
  ANNOTATIONS.controlPort,
  ANNOTATIONS.proxyUid,
  ANNOTATIONS.proxyGid,
  ANNOTATIONS.closeWaitTimeout,
]);

/** Pieces that lie near a parser's edges: numbers, separators, addresses, spaces Go and JavaScript trim differently. */
const PIECES = [
  '0', '1', '08', '010', '32', '33', '128', '443', '4190', '65535', '65536', '-', '-1', '+', '1e3', '0x10', '9999999999',
  ',', ',,', ' ', '\t', '\n', '\r\n', '\u0085', '\u00a0', '\ufeff', '"', '/', '//', '.', ':', '::', '%eth0',
  '10.0.0.0', '192.0.2.0', '010.0.0.0', '255.255.255.255', '256.0.0.0', 'fd00::', 'fe80::1', '::ffff:192.0.2.0',
  '1:2:3:4:5:6:7:8', 'g::', '10.0.0.0/8', '192.0.2.0/24', 'fd00::/8', '1000-2000', '2000-1000', 's', '10s', '1m', 'x',
];

function randomValue(random: () => number): string {
  let text = '';
  const pieces = 1 + Math.floor(random() * 6);
  for (let i = 0; i < pieces; i++) text += PIECES[Math.floor(random() * PIECES.length)];
  return text;
}

type Change = (v: LinkerdValues) => void;
const CONFIGURATIONS: Array<[string, Change]> = [
  ['IPv6 off, legacy iptables', () => {}],
  ['IPv6 on', (v) => (v.disableIPv6 = false)],
  ['nft', (v) => (v.proxyInit.iptablesMode = 'nft')],
];

describe('what an annotation gives linkerd-init', () => {
  it.each(CONFIGURATIONS)('renders a plan iptables applies, or a start-up risk on linkerd-init (%s)', (_, change) => {
    const random = seededRandom(20261129);
    const config = testConfig(change);
    let planned = 0;
    let warned = 0;
    for (let i = 0; i < 3000; i++) {
      const annotations: Record<string, string> = { 'linkerd.io/inject': 'enabled' };
      for (const key of Object.values(ANNOTATIONS)) {
        if (random() < (INIT_ANNOTATIONS.has(key) ? 0.3 : 0.05)) annotations[key] = randomValue(random);
      }
      const object = pod({ annotations });
      const result = inject({ object, kind: 'Pod', namespace: 'shop', namespaceAnnotations: {}, config });
      expect(result.outcome).toBe('injected');
      const after = applied(object, result.patch) as { spec: { initContainers: Container[] } };
      const init = after.spec.initContainers.find((c) => c.name === INIT_CONTAINER) as Container;
      const risk = result.risks.find((r) => r.container === INIT_CONTAINER && r.code === 'iptables_refuses_init_rule');
      try {
        iptablesPlan(init);
        planned++;
        // A risk for a plan that applies would be a false alarm on a pod that starts.
        expect(risk, JSON.stringify(annotations)).toBeUndefined();
      } catch (error) {
        if (!(error instanceof EngineError)) throw error;
        expect(risk, `${JSON.stringify(annotations)}: ${error.message}`).toBeDefined();
        warned++;
      }
    }
    // Both kinds were generated, so the property was tried both ways.
    expect(planned).toBeGreaterThan(100);
    expect(warned).toBeGreaterThan(10);
  });
});
