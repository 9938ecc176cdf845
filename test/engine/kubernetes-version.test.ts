/** Reading the API server's release from what distributions report. */
import { describe, expect, it } from 'vitest';
import { compareVersions, parseKubernetesVersion, serverVersionOf } from '../../src/engine/kubernetes-version.js';

describe('parseKubernetesVersion', () => {
  it('reads the major and minor release of plain and decorated versions', () => {
    expect(parseKubernetesVersion('1.28')).toEqual({ major: 1, minor: 28 });
    expect(parseKubernetesVersion('v1.28.5')).toEqual({ major: 1, minor: 28 });
    expect(parseKubernetesVersion('v1.29.3-eks-5e0fdde')).toEqual({ major: 1, minor: 29 });
    expect(parseKubernetesVersion('v1.30.1+k3s1')).toEqual({ major: 1, minor: 30 });
    expect(parseKubernetesVersion(' 1.31 ')).toEqual({ major: 1, minor: 31 });
  });

  it('refuses what is not a version', () => {
    for (const text of ['', '1', 'v1', '1.', 'one.two', '1.28x', 'latest', '99999.1']) {
      expect(parseKubernetesVersion(text), text).toBeUndefined();
    }
  });
});

describe('serverVersionOf', () => {
  it("prefers gitVersion, and falls back on major and minor (\"28+\" as some distributions write it)", () => {
    expect(serverVersionOf({ major: '1', minor: '34', gitVersion: 'v1.34.10' })).toEqual({ major: 1, minor: 34 });
    expect(serverVersionOf({ major: '1', minor: '28+', gitVersion: 'vX' })).toEqual({ major: 1, minor: 28 });
    expect(serverVersionOf({ major: '1', minor: '27' })).toEqual({ major: 1, minor: 27 });
  });

  it('gives nothing for an answer without a readable release', () => {
    for (const info of [null, 'v1.28.0', 42, {}, { major: 1, minor: 28 }, { gitVersion: 'unknown' }]) expect(serverVersionOf(info)).toBeUndefined();
  });
});

describe('compareVersions', () => {
  it('orders by major, then minor', () => {
    expect(compareVersions({ major: 1, minor: 28 }, { major: 1, minor: 29 })).toBeLessThan(0);
    expect(compareVersions({ major: 1, minor: 29 }, { major: 1, minor: 29 })).toBe(0);
    expect(compareVersions({ major: 2, minor: 0 }, { major: 1, minor: 99 })).toBeGreaterThan(0);
  });
});
