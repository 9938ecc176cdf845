/** Strict JSON comparison for golden tests: array order counts, a key set to null differs from a missing key. */

function describe(value: unknown): string {
  const text = JSON.stringify(value);
  return text === undefined ? 'missing' : text.length > 120 ? `${text.slice(0, 117)}...` : text;
}

/** Returns a readable description of the first difference, or undefined when both values are equal. */
export function firstDifference(expected: unknown, actual: unknown, path = ''): string | undefined {
  const at = path || '(root)';
  if (Array.isArray(expected) || Array.isArray(actual)) {
    if (!Array.isArray(expected) || !Array.isArray(actual)) {
      return `${at}: expected ${describe(expected)}, got ${describe(actual)}`;
    }
    for (let i = 0; i < Math.max(expected.length, actual.length); i++) {
      if (i >= expected.length) return `${path}/${i}: unexpected ${describe(actual[i])}`;
      if (i >= actual.length) return `${path}/${i}: missing ${describe(expected[i])}`;
      const d = firstDifference(expected[i], actual[i], `${path}/${i}`);
      if (d) return d;
    }
    return undefined;
  }
  const isObj = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null;
  if (isObj(expected) && isObj(actual)) {
    for (const key of new Set([...Object.keys(expected), ...Object.keys(actual)])) {
      if (!(key in actual)) return `${path}/${key}: missing (expected ${describe(expected[key])})`;
      if (!(key in expected)) return `${path}/${key}: unexpected ${describe(actual[key])}`;
      const d = firstDifference(expected[key], actual[key], `${path}/${key}`);
      if (d) return d;
    }
    return undefined;
  }
  return Object.is(expected, actual) ? undefined : `${at}: expected ${describe(expected)}, got ${describe(actual)}`;
}
