/**
 * Manifests as the commands read and write them: files, directories, URLs and stdin cut into documents, read by a fast
 * reader of plain block YAML or the yaml library, changed by RFC 6902 operations spliced into their text, and written
 * back with their comments, key order, layout, line ends and byte-order mark.
 */
export {
  InputError,
  TemplateError,
  YAML_OPTIONS,
  asRead,
  documentStarts,
  expandInputs,
  listItems,
  manifestsOf,
  normalizedSource,
  notManifestText,
  notTooDeep,
  readDocuments,
  transformInputs,
  type Located,
  type Manifest,
  type ObjectChange,
  type OutputFormat,
  type ReadIo,
  type ReadOptions,
  type SourceForm,
  type TransformOutcome,
} from './documents.js';
export { Declined, FastReader, decline, type FastBlock, type FastDocument, type FastEntry, type FastNode } from './fast-yaml.js';
export { PatchError, applyAt, applyToValue, documentPatcher, parsePointer, sameValue, type DocumentPatcher, type PatchOp } from './yaml-patch.js';
export { Splicer, type Edit } from './yaml-splice.js';
export { pathProblemText } from './paths.js';
