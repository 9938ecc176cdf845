import { describe, expect, it } from 'vitest';
import {
  ANNOTATION_DECODER as JSON_DECODER,
  decodeCapabilities,
  decodeEnvVar,
  securityContextProblem,
  VALUES_DECODER,
} from '../../src/engine/api-types.js';

describe('decodeEnvVar', () => {
  it('matches keys ignoring case, as Go’s encoding/json does, including the two non-ASCII letters that fold to ASCII', () => {
    expect(decodeEnvVar({ NaMe: 'A', VALUE: 'x' }, 'e', JSON_DECODER)).toEqual({ name: 'A', value: 'x' });
    // U+017F folds to "s" and U+212A (Kelvin) to "k": Go reads "ſecretKeyRef" and "Key" as the fields.
    expect(decodeEnvVar({ name: 'A', valueFrom: { '\u017fecretKeyRef': { name: 's', '\u212aey': 'k' } } }, 'e', JSON_DECODER)).toEqual({
      name: 'A',
      valueFrom: { secretKeyRef: { name: 's', key: 'k' } },
    });
    // Other non-ASCII letters fold onto nothing a field is named with.
    expect(decodeEnvVar({ name: 'A', 'v\u00e1lue': 1 }, 'e', JSON_DECODER)).toEqual({ name: 'A' });
  });

  it('drops the empty optional strings Go would not write back', () => {
    expect(decodeEnvVar({ name: 'A', valueFrom: { fieldRef: { apiVersion: '', fieldPath: 'metadata.name' } } }, 'e', JSON_DECODER)).toEqual({
      name: 'A',
      valueFrom: { fieldRef: { fieldPath: 'metadata.name' } },
    });
  });

  it('accepts a null valueFrom as none, and a number divisor as a quantity', () => {
    expect(decodeEnvVar({ name: 'A', value: 'x', valueFrom: null }, 'e', JSON_DECODER)).toEqual({ name: 'A', value: 'x' });
    expect(decodeEnvVar({ name: 'A', valueFrom: { resourceFieldRef: { resource: 'limits.memory', divisor: 1048576 } } }, 'e', JSON_DECODER)).toEqual({
      name: 'A',
      valueFrom: { resourceFieldRef: { resource: 'limits.memory', divisor: 1048576 } },
    });
  });

  it('reads numbers and booleans as strings only from a values file, as sigs.k8s.io/yaml does', () => {
    expect(decodeEnvVar({ name: 'A', value: 1 }, 'e', JSON_DECODER)).toBe('e.value must be a string, got 1');
    expect(decodeEnvVar({ name: 'A', value: 1 }, 'e', VALUES_DECODER)).toEqual({ name: 'A', value: '1' });
    expect(decodeEnvVar({ name: 'A', value: false }, 'e', VALUES_DECODER)).toEqual({ name: 'A', value: 'false' });
    expect(decodeEnvVar({ name: 'A', value: { x: 1 } }, 'e', VALUES_DECODER)).toBe('e.value must be a string, got an object');
  });

  it('names the path of the first field that does not decode', () => {
    expect(decodeEnvVar({ name: 'A', valueFrom: { configMapKeyRef: { name: 'c', key: 7 } } }, 'env[3]', JSON_DECODER)).toBe(
      'env[3].valueFrom.configMapKeyRef.key must be a string, got 7',
    );
  });
});

describe('securityContextProblem', () => {
  it('accepts a complete, well-typed securityContext', () => {
    const context = {
      allowPrivilegeEscalation: false,
      capabilities: { add: ['NET_BIND_SERVICE'], drop: ['ALL'] },
      privileged: false,
      readOnlyRootFilesystem: true,
      runAsGroup: 65534,
      runAsNonRoot: true,
      runAsUser: 65534,
      procMount: 'Default',
      seLinuxOptions: { level: 's0:c123,c456' },
      seccompProfile: { type: 'RuntimeDefault' },
      appArmorProfile: { type: 'Localhost', localhostProfile: 'p' },
      windowsOptions: { hostProcess: false, runAsUserName: 'u' },
    };
    expect(securityContextProblem(context, 'sc')).toBeUndefined();
  });

  it('refuses what the API server cannot decode, naming the key', () => {
    expect(securityContextProblem({ runAsUser: 2 ** 63 }, 'sc')).toBe('sc.runAsUser must be an integer (int64), got 9223372036854776000');
    expect(securityContextProblem({ seccompProfile: 'RuntimeDefault' }, 'sc')).toBe('sc.seccompProfile must be an object, got "RuntimeDefault"');
    expect(securityContextProblem({ capabilities: { add: [{ name: 'X' }] } }, 'sc')).toBe('sc.capabilities.add[0] must be a string, got an object');
    expect(securityContextProblem([], 'sc')).toBe('sc must be an object, got a list');
  });

  it('leaves keys the API server’s case-sensitive decoder ignores alone', () => {
    expect(securityContextProblem({ RunAsUser: 'x', unknown: { a: 1 } }, 'sc')).toBeUndefined();
  });
});

describe('decodeCapabilities', () => {
  it('reads add and drop as Linkerd reads its values, and refuses anything else in them', () => {
    expect(decodeCapabilities({ Add: ['A'], drop: null }, 'c')).toEqual({ add: ['A'] });
    expect(decodeCapabilities({ add: ['A', null] }, 'c')).toEqual({ add: ['A', ''] });
    expect(decodeCapabilities({ drop: 'ALL' }, 'c')).toBe('c.drop must be a list of strings, got "ALL"');
    expect(decodeCapabilities({ add: [7] }, 'c')).toEqual({ add: ['7'] });
  });
});
