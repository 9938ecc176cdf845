/**
 * The CLI and the webhook inject the same pod. For a Deployment, `inject --manual` gives a pod template; the webhook
 * path is `inject` without --manual (the annotation), the Deployment controller creating a Pod from that template in
 * the Deployment's namespace, and the engine's webhook patch applied to that Pod. The two pods must be equal except
 * for the differences spec section 6.4 lists, which are spelled out below rather than normalised away.
 */
import { readFileSync } from 'node:fs';
import { parseAllDocuments } from 'yaml';
import { describe, expect, it } from 'vitest';
import { runInject } from '../../src/cli/inject.js';
import { YAML_OPTIONS } from '../../src/manifests/documents.js';
import { defaultValues, inject, withTrustAnchors, type InjectorConfig } from '../../src/engine/index.js';
import { applied } from '../support/engine.js';

type Obj = Record<string, any>;

const ANCHORS_FILE = 'test/fixtures/cli/trust-anchors.pem';

/** Owner, namespace and ports chosen so that every listed difference shows: 6379 is a default opaque port. */
function deployment(namespace: string | undefined): string {
  return `apiVersion: apps/v1
kind: Deployment
metadata:
  name: cart
${namespace ? `  namespace: ${namespace}\n` : ''}spec:
  selector:
    matchLabels:
      app: cart
  template:
    metadata:
      labels:
        app: cart
      annotations:
        example.com/team: checkout
    spec:
      serviceAccountName: cart
      initContainers:
        - name: warm-cache
          image: registry.example/warm:1
      containers:
        - name: cart
          image: registry.example/cart:3
          ports:
            - name: http
              containerPort: 8080
            - name: redis
              containerPort: 6379
          readinessProbe:
            httpGet:
              port: 9090
              path: /ready
          securityContext:
            capabilities:
              drop: [ALL]
`;
}

const single = (text: string): Obj => {
  const docs = parseAllDocuments(text, YAML_OPTIONS);
  expect(docs).toHaveLength(1);
  return docs[0]?.toJS() as Obj;
};

/** Removes map entries whose value is null, which the webhook's patch carries (`resources: null`) and a manifest omits. */
function withoutNulls(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(withoutNulls);
  if (value && typeof value === 'object') {
    return Object.fromEntries(Object.entries(value).filter(([, v]) => v !== null).map(([k, v]) => [k, withoutNulls(v)]));
  }
  return value;
}

interface Paths {
  cli: Obj;
  webhook: Obj;
  webhookResult: ReturnType<typeof inject>;
}

async function bothPaths(manifestNamespace: string | undefined, flags: string[]): Promise<Paths> {
  const text = deployment(manifestNamespace);
  const common = ['--trust-anchors', ANCHORS_FILE, ...flags, '-'];
  const manual = await runInject(['--manual', ...common], { stdin: text });
  const annotated = await runInject(common, { stdin: text });
  expect(manual.code, manual.stderr).toBe(0);
  expect(annotated.code, annotated.stderr).toBe(0);
  const cli = single(manual.stdout).spec.template;
  const template = single(annotated.stdout).spec.template;

  // What the ReplicaSet controller creates in the namespace the Deployment was applied to ("shop").
  const pod = {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: { ...template.metadata, generateName: 'cart-5d4f8b-', namespace: 'shop' },
    spec: template.spec,
  };
  const config: InjectorConfig = {
    values: withTrustAnchors(defaultValues(), readFileSync(ANCHORS_FILE, 'utf8')),
    controlPlaneNamespace: 'linkerd',
  };
  const webhookResult = inject({
    object: pod,
    kind: 'Pod',
    namespace: 'shop',
    namespaceAnnotations: {},
    owner: { kind: 'deployment', name: 'cart' },
    origin: 'webhook',
    config,
  });
  expect(webhookResult.outcome).toBe('injected');
  return { cli, webhook: applied(pod, webhookResult.patch) as Obj, webhookResult };
}

describe('the CLI injects the pod the webhook injects', () => {
  it.each([
    ['embedded defaults', []],
    ['flags', ['--proxy-cpu-request', '250m', '--proxy-memory-limit', '128Mi', '--skip-outbound-ports', '5432', '--enable-debug-sidecar']],
    ['native sidecar', ['--native-sidecar']],
    ['no await', ['--no-await']],
    ['ingress', ['--ingress']],
  ])('%s', async (_, flags) => {
    const { cli, webhook } = await bothPaths('shop', flags);

    // The spec: identical, except for two things.
    // a. The webhook's JSON patch carries `resources: null` on the proxy and linkerd-init when no resources are
    //    configured, which the CLI leaves out of the manifest, as Linkerd's re-serialised manifests do.
    const hasNullResources = [...webhook.spec.initContainers, ...webhook.spec.containers].some((c: Obj) => c.resources === null);
    expect(hasNullResources).toBe(!flags.includes('--proxy-cpu-request'));
    // b. The webhook's default opaque-ports annotation (difference 2 below) is also an override for the pod, so its
    //    proxy skips protocol detection on the ports the pod exposes (6379), the CLI's on the configured list.
    const opaque = (spec: Obj): Obj =>
      [...(spec.initContainers ?? []), ...spec.containers]
        .find((c: Obj) => c.name === 'linkerd-proxy')
        .env.find((e: Obj) => e.name === 'LINKERD2_PROXY_INBOUND_PORTS_DISABLE_PROTOCOL_DETECTION');
    expect(opaque(cli.spec).value).toBe('25,587,3306,4444,5432,6379,9300,11211');
    expect(opaque(webhook.spec).value).toBe('6379');
    opaque(webhook.spec).value = opaque(cli.spec).value;
    expect(cli.spec).toEqual(withoutNulls(webhook.spec));

    // Labels: identical when the manifest names the namespace the Deployment is applied to.
    expect(cli.metadata.labels).toEqual(webhook.metadata.labels);

    // Annotations: the flags' config.linkerd.io/* annotations, the user's own, proxy-version and the trust-root
    // hash are the same. The differences are exactly these:
    const webhookOnly = { ...webhook.metadata.annotations };
    const cliOnly = { ...cli.metadata.annotations };
    // 1. created-by names the CLI or the injector.
    expect(cliOnly['linkerd.io/created-by']).toBe('linkerd/cli edge-26.8.3');
    expect(webhookOnly['linkerd.io/created-by']).toBe('linkerd/proxy-injector edge-26.8.3');
    delete cliOnly['linkerd.io/created-by'];
    delete webhookOnly['linkerd.io/created-by'];
    // 2. The webhook adds the default opaque ports the pod exposes; manual injection does not (spec 6.4).
    if (!flags.includes('--opaque-ports')) {
      expect(webhookOnly['config.linkerd.io/opaque-ports']).toBe('6379');
      expect(cliOnly['config.linkerd.io/opaque-ports']).toBeUndefined();
      delete webhookOnly['config.linkerd.io/opaque-ports'];
    }
    // 3. The webhook pod came from the annotated template, so it carries linkerd.io/inject: enabled, which manual
    //    injection does not write (with --ingress both carry linkerd.io/inject: ingress).
    if (flags.includes('--ingress')) {
      expect(cliOnly['linkerd.io/inject']).toBe('ingress');
      expect(webhookOnly['linkerd.io/inject']).toBe('ingress');
    } else {
      expect(webhookOnly['linkerd.io/inject']).toBe('enabled');
      expect(cliOnly['linkerd.io/inject']).toBeUndefined();
      delete webhookOnly['linkerd.io/inject'];
    }
    expect(cliOnly).toEqual(webhookOnly);
  });

  it('workload-ns: the CLI reads the manifest, the webhook the namespace the pod is created in', async () => {
    const { cli, webhook } = await bothPaths(undefined, []);
    expect(cli.metadata.labels['linkerd.io/workload-ns']).toBe('');
    expect(webhook.metadata.labels['linkerd.io/workload-ns']).toBe('shop');
    const { ['linkerd.io/workload-ns']: _c, ...cliRest } = cli.metadata.labels;
    const { ['linkerd.io/workload-ns']: _w, ...webhookRest } = webhook.metadata.labels;
    expect(cliRest).toEqual(webhookRest);
  });

  it('owner label: the CLI names the workload itself; the webhook the owner it resolves', async () => {
    const { cli, webhook } = await bothPaths('shop', []);
    expect(cli.metadata.labels['linkerd.io/proxy-deployment']).toBe('cart');
    expect(webhook.metadata.labels['linkerd.io/proxy-deployment']).toBe('cart');
    // A pod whose ReplicaSet has no Deployment above it is labelled after the ReplicaSet by the webhook; the CLI,
    // given that ReplicaSet's manifest, labels it the same way, from the manifest alone.
    const rs = `apiVersion: apps/v1\nkind: ReplicaSet\nmetadata:\n  name: cart-5d4f8b\n  namespace: shop\nspec:\n  template:\n    spec:\n      containers:\n        - name: cart\n          image: registry.example/cart:3\n`;
    const manual = await runInject(['--manual', '--trust-anchors', ANCHORS_FILE, '-'], { stdin: rs });
    expect(single(manual.stdout).spec.template.metadata.labels['linkerd.io/proxy-replicaset']).toBe('cart-5d4f8b');
    const result = inject({
      object: { apiVersion: 'v1', kind: 'Pod', metadata: { annotations: { 'linkerd.io/inject': 'enabled' } }, spec: { containers: [{ name: 'cart', image: 'registry.example/cart:3' }] } },
      namespace: 'shop',
      owner: { kind: 'replicaset', name: 'cart-5d4f8b' },
      config: { values: withTrustAnchors(defaultValues(), readFileSync(ANCHORS_FILE, 'utf8')), controlPlaneNamespace: 'linkerd' },
    });
    expect(result.added.labels['linkerd.io/proxy-replicaset']).toBe('cart-5d4f8b');
  });
});
