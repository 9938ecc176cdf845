/** The cluster context `serve` wires, against a fake API, ready; stopped with its API after each test. */
import { join } from 'node:path';
import { pino } from 'pino';
import { afterEach } from 'vitest';
import { createContext, type ContextOptions, type InjectorContext } from '../../src/cluster/context.js';
import { InjectorMetrics } from '../../src/server/metrics.js';
import { fakeApi, type FakeApi, type FakeApiOptions } from './fake-api.js';

const root = join(import.meta.dirname, '..', '..');
const opened: Array<{ api: FakeApi; context: InjectorContext }> = [];

afterEach(async () => {
  for (const { api, context } of opened.splice(0)) {
    await context.stop();
    await api.close();
  }
});

/**
 * A fake API with empty quota and limit-range lists unless `api` gives them, and a context on it with the example trust
 * anchors, no mounted Linkerd configuration, events off unless `options` says; resolves once the context is ready.
 */
export async function clusterContext(api: FakeApiOptions, options: Partial<ContextOptions> = {}): Promise<{ api: FakeApi; context: InjectorContext }> {
  const fake = await fakeApi({ ...api, lists: { '/api/v1/resourcequotas': [], '/api/v1/limitranges': [], ...api.lists } });
  const context = await createContext({
    cluster: { client: fake.client, source: 'test', server: 'fake' },
    controlPlaneNamespace: 'linkerd',
    trustAnchorsPath: join(root, 'examples', 'trust-anchors.pem'),
    logger: pino({ level: 'silent' }),
    metrics: new InjectorMetrics(),
    events: 'none',
    linkerdPaths: { values: join(root, 'no-such-values'), trustRoots: join(root, 'no-such-roots') },
    ...options,
  });
  opened.push({ api: fake, context });
  while (context.notReadyBecause().length > 0) await new Promise((resolve) => setTimeout(resolve, 10));
  return { api: fake, context };
}
