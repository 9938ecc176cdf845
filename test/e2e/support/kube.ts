/** Helpers for the e2e suites: polling for what happens asynchronously, and namespaces ready for pods. */
import type { CoreV1Api } from '@kubernetes/client-node';

/**
 * Calls `probe` every 250 ms until it returns a value other than undefined (errors count as not yet) and returns that
 * value; after `timeoutMs` throws, naming what it waited for, the last error, and whatever `context` adds (a log tail).
 */
export async function eventually<T>(what: string, probe: () => Promise<T | undefined>, options: { timeoutMs?: number; context?: () => string } = {}): Promise<T> {
  const deadline = Date.now() + (options.timeoutMs ?? 30_000);
  let last: unknown;
  for (;;) {
    try {
      const value = await probe();
      if (value !== undefined) return value;
    } catch (err) {
      last = err;
    }
    if (Date.now() > deadline) {
      const cause = last ? `: ${String((last as Error).message ?? last)}` : '';
      throw new Error(`timed out waiting for ${what}${cause}${options.context ? `\n${options.context()}` : ''}`);
    }
    await new Promise((r) => setTimeout(r, 250));
  }
}

/** Creates a namespace and waits for its default ServiceAccount (made by the controller-manager), which pods need. */
export async function createNamespace(core: CoreV1Api, name: string, annotations: Record<string, string> = {}, labels: Record<string, string> = {}): Promise<void> {
  await core.createNamespace({ body: { metadata: { name, annotations, labels } } });
  await eventually(`ServiceAccount default in ${name}`, async () => (await core.readNamespacedServiceAccount({ name: 'default', namespace: name })).metadata?.name);
}

/** Linkerd's control-plane namespace as Linkerd labels it (left out of its own webhook), with its two ConfigMaps. */
export async function createLinkerdNamespace(core: CoreV1Api, values: string, trustAnchors: string): Promise<void> {
  await createNamespace(core, 'linkerd', {}, { 'config.linkerd.io/admission-webhooks': 'disabled' });
  await core.createNamespacedConfigMap({ namespace: 'linkerd', body: { metadata: { name: 'linkerd-config' }, data: { values } } });
  await core.createNamespacedConfigMap({ namespace: 'linkerd', body: { metadata: { name: 'linkerd-identity-trust-roots' }, data: { 'ca-bundle.crt': trustAnchors } } });
}
