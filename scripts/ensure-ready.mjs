// Makes `npm start` and `npm test` work straight after a clone: installs the locked dependencies when they are
// missing or older than the lockfile, and (with --build) compiles the TypeScript when dist/ is older than src/.
import { execFileSync } from 'node:child_process';
import { existsSync, readdirSync, statSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const npm = process.platform === 'win32' ? 'npm.cmd' : 'npm';

function mtime(path) {
  return existsSync(path) ? statSync(path).mtimeMs : 0;
}

function newestUnder(dir) {
  let newest = 0;
  if (!existsSync(dir)) return newest;
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    const path = join(dir, entry.name);
    newest = Math.max(newest, entry.isDirectory() ? newestUnder(path) : mtime(path));
  }
  return newest;
}

function run(args) {
  console.error(`ensure-ready: npm ${args.join(' ')}`);
  execFileSync(npm, args, { cwd: root, stdio: ['ignore', 'inherit', 'inherit'] });
}

const installed = join(root, 'node_modules', '.package-lock.json');
if (mtime(installed) < mtime(join(root, 'package-lock.json'))) {
  run(['ci', '--no-audit', '--no-fund']);
}

if (process.argv.includes('--build')) {
  const built = mtime(join(root, 'dist', 'cli', 'main.js'));
  if (built === 0 || built < newestUnder(join(root, 'src'))) {
    run(['run', 'build']);
  }
}
