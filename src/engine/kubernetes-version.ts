/**
 * The Kubernetes release of the API server a pod is created through, as far as the injector's risks need it: which
 * minor release it is. Distributions decorate the version ("v1.28.5-eks-5e0fdde", minor "28+"), so only the leading
 * numbers are read.
 */

export interface KubernetesVersion {
  major: number;
  minor: number;
}

/** The first release whose API server keeps an init container's `restartPolicy: Always` by default (SidecarContainers beta). */
export const NATIVE_SIDECAR_RELEASE: KubernetesVersion = { major: 1, minor: 29 };
/** The release that has the SidecarContainers feature gate, off unless the cluster's administrator turned it on. */
export const NATIVE_SIDECAR_GATED_RELEASE: KubernetesVersion = { major: 1, minor: 28 };

/** The first release whose API server keeps a pod's own `spec.resources` by default (PodLevelResources beta). */
export const POD_LEVEL_RESOURCES_RELEASE: KubernetesVersion = { major: 1, minor: 34 };

const VERSION = /^v?(\d{1,4})\.(\d{1,4})(?:$|[.+-])/;

/** "1.28", "v1.28.5", "v1.28.5-eks-5e0fdde", "1.28+" as a version; undefined for anything else. */
export function parseKubernetesVersion(text: string): KubernetesVersion | undefined {
  const match = VERSION.exec(text.trim());
  return match ? { major: Number(match[1]), minor: Number(match[2]) } : undefined;
}

/**
 * The version an API server reports at `/version`: its `gitVersion`, else its `major` and `minor` fields (which some
 * distributions suffix with "+"). Undefined when neither reads as a version.
 */
export function serverVersionOf(info: unknown): KubernetesVersion | undefined {
  if (typeof info !== 'object' || info === null) return undefined;
  const { gitVersion, major, minor } = info as Record<string, unknown>;
  const fromGit = typeof gitVersion === 'string' ? parseKubernetesVersion(gitVersion) : undefined;
  if (fromGit) return fromGit;
  return typeof major === 'string' && typeof minor === 'string' ? parseKubernetesVersion(`${major}.${minor}`) : undefined;
}

/** Negative when `a` is older than `b`, 0 when they are the same minor release, positive when newer. */
export function compareVersions(a: KubernetesVersion, b: KubernetesVersion): number {
  return a.major !== b.major ? a.major - b.major : a.minor - b.minor;
}

export const versionText = (v: KubernetesVersion): string => `${v.major}.${v.minor}`;
