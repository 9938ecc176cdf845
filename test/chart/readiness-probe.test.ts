/**
 * The chart's readiness probe against a model of kubelet (scripts/readiness-probe.mjs, which npm run check:chart also
 * runs on every rendering): one slow answer of /ready must not take a replica out of its Service, since under
 * failurePolicy Ignore the pods created meanwhile would go unmeshed.
 */
import { readFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { parse } from 'yaml';
import { beforeAll, describe, expect, it } from 'vitest';

interface Probe {
  periodSeconds?: number;
  timeoutSeconds?: number;
  failureThreshold?: number;
  successThreshold?: number;
}
interface Model {
  SLOW_ANSWER_SECONDS: number;
  readyAfterEach(probe: Probe, answerSeconds: number[]): boolean[];
  readinessProblems(probe: Probe): string[];
}

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '../..');
const values = parse(readFileSync(join(ROOT, 'charts/proxy-injector/values.yaml'), 'utf8')) as { readinessProbe?: Probe };
let model: Model;

beforeAll(async () => {
  model = (await import(pathToFileURL(join(ROOT, 'scripts/readiness-probe.mjs')).href)) as Model;
});

describe('the model of kubelet', () => {
  it('makes a pod ready at its first answer in time, and unready only after failureThreshold failures in a row', () => {
    const probe = { periodSeconds: 2, timeoutSeconds: 1, failureThreshold: 3 };
    expect(model.readyAfterEach(probe, [Infinity, 0.1, 0.1])).toEqual([false, true, true]);
    expect(model.readyAfterEach(probe, [0.1, 1.5, Infinity, 0.1, 5, 5, 5, 0.1])).toEqual([true, true, true, true, true, true, false, true]);
    expect(model.readyAfterEach({ ...probe, failureThreshold: 1 }, [0.1, 1.5, 0.1])).toEqual([true, false, true]);
  });

  it('uses Kubernetes defaults for what a probe leaves out: a timeout of 1 s, three failures', () => {
    expect(model.readyAfterEach({}, [0.1, 1, 1, 0.1, 1, 1, 1])).toEqual([true, true, true, true, true, true, false]);
  });
});

describe("the chart's readiness probe", () => {
  it('lets one slow or lost answer pass, yet takes a pod that stopped answering out and lets a starting one in soon', () => {
    const probe = values.readinessProbe ?? {};
    expect(probe.failureThreshold).toBeGreaterThan(1);
    expect(probe.timeoutSeconds).toBeGreaterThanOrEqual(model.SLOW_ANSWER_SECONDS);
    expect(model.readinessProblems(probe)).toEqual([]);
  });

  it('is held to what the probe the chart had before failed: one slow answer took the pod out', () => {
    expect(model.readinessProblems({ periodSeconds: 2, failureThreshold: 1 })).toEqual([
      `one answer of ${model.SLOW_ANSWER_SECONDS} s takes the pod out of its Service`,
      'one answer that never comes takes the pod out of its Service',
    ]);
  });

  it('is held to leaving the Service within bounds: no threshold so high a stopped pod stays, no period so long a start waits', () => {
    expect(model.readinessProblems({ periodSeconds: 10, timeoutSeconds: 3, failureThreshold: 5 })).toEqual([
      'a pod that stops answering stays in its Service for more than 30 s',
      'a starting pod may wait more than 5 s to enter its Service',
    ]);
  });
});
