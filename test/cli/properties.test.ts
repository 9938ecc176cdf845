/**
 * Property tests over generated manifests (a seeded generator, so every run checks the same cases; set
 * PROPERTY_SEED to explore others): injecting twice is injecting once, and uninjecting an injection gives back the
 * manifest byte for byte.
 *
 * The identity holds for manifests without Linkerd fields of their own: no linkerd.io/* annotations or labels and no
 * linkerd-* containers or volumes (uninject removes those whether the injector added them or not). The generator
 * also keeps every annotation and label map, init-container and volume list, and pod-template metadata either absent
 * or non-empty, because uninject removes such a map or list when it is left empty, not knowing whether the injector
 * created it. config.linkerd.io/* annotations are allowed: they are the workload's configuration, which uninject keeps.
 */
import { Document } from 'yaml';
import { describe, expect, it } from 'vitest';
import { runInject } from '../../src/cli/inject.js';
import { YAML_OPTIONS } from '../../src/manifests/documents.js';
import { runUninject } from '../../src/cli/uninject.js';
import { seededRandom } from '../support/random.js';

const SEED = Number(process.env['PROPERTY_SEED'] ?? 20260521);
const CASES = 120;
const ANCHORS = ['--trust-anchors', 'test/fixtures/cli/trust-anchors.pem'];


type Obj = Record<string, unknown>;

class Gen {
  constructor(readonly next: () => number) {}
  int(lo: number, hi: number): number {
    return lo + Math.floor(this.next() * (hi - lo + 1));
  }
  chance(p: number): boolean {
    return this.next() < p;
  }
  pick<T>(items: readonly T[]): T {
    return items[this.int(0, items.length - 1)] as T;
  }
  /** Lowercase names that YAML 1.1 reads as strings (no y/n/on/off/yes/no). */
  name(): string {
    return `${this.pick(['web', 'api', 'db', 'cache', 'worker', 'queue'])}-${this.int(1, 99)}`;
  }
  map(prefix: string): Obj {
    const out: Obj = {};
    for (let i = this.int(1, 3); i > 0; i--) out[`${prefix}${this.pick(['app', 'team', 'tier', 'example.com/owner'])}${i}`] = this.name();
    return out;
  }
  container(): Obj {
    const c: Obj = { name: this.name(), image: `registry.example/${this.name()}:1` };
    if (this.chance(0.6)) {
      c['ports'] = Array.from({ length: this.int(1, 2) }, () => ({
        containerPort: this.pick([80, 8080, 3306, 5432, 9090, 53]),
        ...(this.chance(0.2) && { protocol: this.pick(['TCP', 'UDP']) }),
        ...(this.chance(0.3) && { name: this.pick(['http', 'metrics', 'db']) }),
      }));
    }
    if (this.chance(0.2)) c['securityContext'] = { capabilities: { drop: ['ALL'] } };
    if (this.chance(0.2)) c['volumeMounts'] = [{ name: 'data', mountPath: '/data' }];
    return c;
  }
  podSpec(): Obj {
    const spec: Obj = {};
    if (this.chance(0.3)) spec['serviceAccountName'] = this.name();
    if (this.chance(0.3)) spec['initContainers'] = Array.from({ length: this.int(1, 2) }, () => this.container());
    spec['containers'] = Array.from({ length: this.int(1, 3) }, () => this.container());
    if (this.chance(0.4)) spec['volumes'] = [{ name: 'data', emptyDir: {} }];
    if (this.chance(0.2)) spec['restartPolicy'] = 'Always';
    return spec;
  }
  template(): Obj {
    const metadata: Obj = {};
    if (this.chance(0.7)) metadata['labels'] = this.map('');
    if (this.chance(0.4)) {
      const annotations = this.map('');
      if (this.chance(0.5)) {
        const [k, v] = this.pick([
          ['config.linkerd.io/proxy-enable-native-sidecar', 'true'],
          ['config.linkerd.io/proxy-await', 'disabled'],
          ['config.linkerd.io/enable-debug-sidecar', 'true'],
          ['config.linkerd.io/proxy-cpu-request', '100m'],
        ] as const);
        annotations[k] = v;
      }
      metadata['annotations'] = annotations;
    }
    const template: Obj = {};
    // Pod-template metadata comes before or after the spec, or not at all.
    const withMeta = Object.keys(metadata).length > 0;
    if (withMeta && this.chance(0.7)) template['metadata'] = metadata;
    template['spec'] = this.podSpec();
    if (withMeta && !('metadata' in template)) template['metadata'] = metadata;
    return template;
  }
  meta(): Obj {
    const m: Obj = { name: this.name() };
    if (this.chance(0.8)) m['namespace'] = this.pick(['shop', 'default', 'batch']);
    if (this.chance(0.3)) m['labels'] = this.map('');
    return m;
  }
  object(): Obj {
    const kind = this.pick(['Pod', 'Deployment', 'StatefulSet', 'DaemonSet', 'ReplicaSet', 'ReplicationController', 'Job', 'CronJob', 'Namespace', 'Service', 'ConfigMap']);
    const apiVersion = { Deployment: 'apps/v1', StatefulSet: 'apps/v1', DaemonSet: 'apps/v1', ReplicaSet: 'apps/v1', Job: 'batch/v1', CronJob: 'batch/v1' }[kind as string] ?? 'v1';
    const o: Obj = { apiVersion, kind, metadata: this.meta() };
    switch (kind) {
      case 'Pod': {
        const t = this.template();
        o['metadata'] = { ...(o['metadata'] as Obj), ...(t['metadata'] as Obj | undefined) };
        o['spec'] = t['spec'];
        break;
      }
      case 'CronJob':
        o['spec'] = { schedule: '*/5 * * * *', jobTemplate: { spec: { template: this.template() } } };
        break;
      case 'Namespace':
        if (this.chance(0.5)) (o['metadata'] as Obj)['annotations'] = this.map('');
        break;
      case 'Service':
        o['spec'] = { selector: { app: this.name() }, ports: [{ port: 80, targetPort: this.pick([8080, 'http']) }] };
        break;
      case 'ConfigMap':
        o['data'] = this.map('');
        break;
      default:
        o['spec'] = { replicas: this.int(1, 3), selector: { matchLabels: { app: 'x' } }, template: this.template() };
    }
    return o;
  }
  flags(): string[] {
    const all = [
      ['--native-sidecar'],
      ['--no-await'],
      ['--proxy-cpu-request', '200m'],
      ['--enable-debug-sidecar'],
      ['--opaque-ports', '3306'],
      ['--admin-port', '4192'],
      ['--ingress'],
      ['--skip-outbound-ports', '25,443'],
      ['--native-sidecar=false'],
    ];
    return all.filter(() => this.chance(0.15)).flat();
  }
  /** A YAML stream as a person or kubectl would write it: 1 to 4 documents, sometimes a List. */
  manifest(): string {
    const objects = Array.from({ length: this.int(1, 4) }, () => this.object());
    const indentSeq = this.chance(0.5);
    const render = (value: unknown): string => new Document(value, YAML_OPTIONS).toString({ lineWidth: 0, indentSeq });
    if (this.chance(0.15)) return render({ apiVersion: 'v1', kind: 'List', items: objects });
    return objects.map((o, i) => (i > 0 ? '---\n' : '') + render(o)).join('');
  }
}

interface Sample {
  seed: number;
  text: string;
  flags: string[];
}

function samples(): Sample[] {
  const out: Sample[] = [];
  for (let i = 0; i < CASES; i++) {
    const g = new Gen(seededRandom(SEED + i));
    out.push({ seed: SEED + i, text: g.manifest(), flags: g.flags() });
  }
  return out;
}

const run = (args: string[], stdin: string) => runInject([...args, '-'], { stdin });

// Each property runs the whole CLI over every generated manifest: seconds of CPU, more on a busy machine.
describe(`properties over ${CASES} generated manifests (seed ${SEED})`, { timeout: 60_000 }, () => {
  const all = samples();

  it('the generator covers every kind, both list styles, Lists and flags', () => {
    const text = all.map((s) => s.text).join('\n');
    for (const kind of ['Pod', 'Deployment', 'StatefulSet', 'DaemonSet', 'ReplicaSet', 'ReplicationController', 'Job', 'CronJob', 'Namespace', 'Service', 'List']) {
      expect(text).toContain(`kind: ${kind}\n`);
    }
    expect(all.some((s) => s.flags.length > 0)).toBe(true);
    expect(text).toMatch(/\n {4}- name/);
    expect(text).toMatch(/\n {2}- name/);
  });

  it.each(['--manual', 'annotation-only'])('inject ∘ inject = inject (%s, with random flags)', async (mode) => {
    for (const s of all) {
      const args = [...(mode === '--manual' ? ['--manual', ...ANCHORS] : []), ...s.flags];
      const once = await run(args, s.text);
      expect(once.code, `seed ${s.seed}: ${once.stderr}`).toBe(0);
      const twice = await run(args, once.stdout);
      expect(twice.code, `seed ${s.seed}`).toBe(0);
      expect(twice.stdout, `seed ${s.seed} ${args.join(' ')}\n${s.text}`).toBe(once.stdout);
    }
  });

  it.each(['--manual', 'annotation-only'])('uninject ∘ inject = identity (%s), byte for byte', async (mode) => {
    for (const s of all) {
      const injected = await run(mode === '--manual' ? ['--manual', ...ANCHORS] : [], s.text);
      expect(injected.code, `seed ${s.seed}: ${injected.stderr}`).toBe(0);
      const back = await runUninject(['-'], { stdin: injected.stdout });
      expect(back.stdout, `seed ${s.seed}\n${s.text}`).toBe(s.text);
    }
  });

  it('-o json carries the same objects as the YAML output', async () => {
    for (const s of all.slice(0, 40)) {
      const args = ['--manual', ...ANCHORS, ...s.flags];
      const yaml = await run(args, s.text);
      const json = await run([...args, '-o', 'json'], s.text);
      const docs = (await import('yaml')).parseAllDocuments(yaml.stdout, YAML_OPTIONS).map((d) => d.toJS() as unknown);
      const expected = docs.length === 1 ? docs[0] : { apiVersion: 'v1', kind: 'List', items: docs, metadata: {} };
      expect(JSON.parse(json.stdout), `seed ${s.seed}`).toEqual(expected);
    }
  });
});
