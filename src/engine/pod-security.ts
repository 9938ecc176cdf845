/**
 * The Pod Security level kube-apiserver enforces for a namespace: its `pod-security.kubernetes.io/enforce` label, or
 * the PodSecurity plugin's own configuration (a file given to kube-apiserver, not in the API), which sets a default
 * level for namespaces without the label (`defaults.enforce`) and exempts namespaces whatever their label
 * (`exemptions.namespaces`). Start-up risks read the level as a namespace label.
 */
import { POD_SECURITY_ENFORCE_LABEL } from './names.js';

/** The Pod Security Standards' levels, as kube-apiserver's PodSecurity configuration names them. */
export const POD_SECURITY_LEVELS: readonly string[] = ['privileged', 'baseline', 'restricted'];

/** What the PodSecurity plugin's configuration says, as far as the injector is told it. */
export interface PodSecurityDefaults {
  enforce?: string | undefined;
  exemptNamespaces?: readonly string[];
}

/**
 * The labels that start-up risks read for a namespace, as the API server will enforce them: none in an exempt
 * namespace, the default level where the namespace has no enforce label.
 */
export function podSecurityLabels(
  labels: Record<string, string> | undefined,
  namespace: string,
  defaults: PodSecurityDefaults,
): Record<string, string> | undefined {
  if (defaults.exemptNamespaces?.includes(namespace)) return undefined;
  if (defaults.enforce === undefined || labels?.[POD_SECURITY_ENFORCE_LABEL] !== undefined) return labels;
  return { ...labels, [POD_SECURITY_ENFORCE_LABEL]: defaults.enforce };
}
