/**
 * The owner references of an object under review, each held to what a reference to an object the API server holds can
 * be. Mutating webhooks run before the API server validates the object, and it checks little of a reference anyway, so
 * a pod creator (or anyone who reaches the webhook) can name any kind, name and uid: what could name no object is
 * ignored, with a warning, before the owner cache, the answer cache, a metric or a log line sees it.
 */
import { isObject } from '../engine/index.js';

export interface OwnerReference {
  apiVersion: string;
  kind: string;
  name: string;
  uid: string;
  controller: boolean;
}

/** A kind is a DNS-1035 label once lowercased, as the API server requires of every resource's kind. */
const KIND = /^[A-Za-z]([-A-Za-z0-9]{0,61}[A-Za-z0-9])?$/;
/** A group (a DNS subdomain) and a version (a DNS label), or a version alone for the core group. */
const MAX_API_VERSION = 253 + 1 + 63;
/** An object's name is at most a DNS subdomain. */
const MAX_NAME = 253;
/** kube-apiserver gives every object a 36-character UUID; this leaves room for other forms, none for a flood. */
const MAX_UID = 128;

/** Why a reference could name no object, or undefined when it could. */
function problem(ref: Record<string, unknown>): string | undefined {
  const { apiVersion, kind, name, uid, controller } = ref;
  if (typeof apiVersion !== 'string' || apiVersion === '' || apiVersion.length > MAX_API_VERSION) return `its apiVersion is not a group and version of at most ${MAX_API_VERSION} characters`;
  if (typeof kind !== 'string' || !KIND.test(kind)) return 'its kind is not a kind (a letter, then letters, digits and dashes, at most 63)';
  if (typeof name !== 'string' || name === '' || name.length > MAX_NAME) return `its name is not a name of at most ${MAX_NAME} characters`;
  if (typeof uid !== 'string' || uid === '' || uid.length > MAX_UID) return `its uid is not a uid of at most ${MAX_UID} characters`;
  if (controller !== undefined && typeof controller !== 'boolean') return 'its controller field is not a boolean';
  return undefined;
}

/** Most ignored references named one by one in the warnings; the rest are counted. */
const NAMED = 3;

/** The references that could name an object the API server holds, and a warning for each that could not. */
export function ownerReferencesOf(object: Record<string, unknown>): { references: OwnerReference[]; warnings: string[] } {
  const metadata = object['metadata'];
  const listed = isObject(metadata) ? metadata['ownerReferences'] : undefined;
  if (listed === undefined || listed === null) return { references: [], warnings: [] };
  if (!Array.isArray(listed)) return { references: [], warnings: ['metadata.ownerReferences is not a list: ignored'] };
  const references: OwnerReference[] = [];
  const warnings: string[] = [];
  let ignored = 0;
  listed.forEach((ref: unknown, i) => {
    const why = isObject(ref) ? problem(ref) : 'it is not an object';
    if (why === undefined) {
      const { apiVersion, kind, name, uid, controller } = ref as Record<string, unknown>;
      references.push({ apiVersion, kind, name, uid, controller: controller === true } as OwnerReference);
      return;
    }
    if (++ignored <= NAMED) warnings.push(`metadata.ownerReferences[${i}] is ignored: ${why}`);
  });
  if (ignored > NAMED) warnings.push(`and ${ignored - NAMED} more owner references ignored`);
  return { references, warnings };
}
