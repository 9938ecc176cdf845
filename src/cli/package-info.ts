/** Where the installed package lives, and its version. */
import { readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

/** The package root: two levels above this file, in src/cli and in dist/cli alike. */
export const packageRoot = join(dirname(fileURLToPath(import.meta.url)), '..', '..');

export function packageVersion(): string {
  const pkg = JSON.parse(readFileSync(join(packageRoot, 'package.json'), 'utf8')) as { version?: string };
  return pkg.version ?? '0.0.0';
}
