/** `proxy-injector inject` and `uninject` as separate processes: real stdin, stdout, stderr and exit codes. */
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { runInject } from '../../src/cli/inject.js';
import { INJECT_HELP } from '../../src/cli/inject-flags.js';
import { packageVersion } from '../../src/cli/package-info.js';
import { DEFAULT_LINKERD_VERSION } from '../../src/engine/values.js';

function cli(args: string[], input?: string) {
  const result = spawnSync(process.execPath, ['--import', 'tsx', 'src/cli/main.ts', ...args], {
    input,
    encoding: 'utf8',
    timeout: 60_000,
  });
  return { code: result.status, stdout: result.stdout, stderr: result.stderr };
}

describe('the proxy-injector process', () => {
  it('inject --manual from stdin, then uninject from stdin, gives back the input', () => {
    const input = readFileSync('test/fixtures/cli/in/all-kinds.yaml', 'utf8');
    const injected = cli(['inject', '--manual', '--trust-anchors', 'test/fixtures/cli/trust-anchors.pem', '-'], input);
    expect(injected.code, injected.stderr).toBe(0);
    expect(injected.stdout).toBe(readFileSync('test/fixtures/cli/out/manual-all-kinds.stdout.yaml', 'utf8'));
    expect(injected.stderr).toBe(readFileSync('test/fixtures/cli/out/manual-all-kinds.stderr.txt', 'utf8'));
    const back = cli(['uninject', '-'], injected.stdout);
    expect(back.code).toBe(0);
    expect(back.stdout).toBe(input);
  }, 60_000);

  it('exits 1 with nothing on stdout when an object cannot be injected', () => {
    const result = cli(['inject', '--manual', 'test/fixtures/cli/in/host-network.yaml']);
    expect(result).toMatchObject({ code: 1, stdout: '' });
    expect(result.stderr).toContain('daemonset "node-exporter" not injected: hostNetwork is enabled');
  }, 60_000);

  it('exits 1 on invalid YAML and 2 on a bad flag; help lists the commands', () => {
    expect(cli(['inject', 'test/fixtures/cli/in/invalid.yaml'])).toMatchObject({ code: 1, stdout: '' });
    expect(cli(['inject', '--admin-port', 'x', '-'], '')).toMatchObject({ code: 2, stdout: '' });
    const help = cli(['help']);
    expect(help.stdout).toMatch(/\n {2}inject \[--manual\]/);
    expect(help.stdout).toMatch(/\n {2}uninject /);
  }, 60_000);
});

describe('the command line, consistently across commands', () => {
  it('stops quietly when the reader closes stdout early, as `| head -1` does', () => {
    const dir = mkdtempSync(join(tmpdir(), 'proxy-injector-epipe-'));
    try {
      const one = readFileSync('test/fixtures/cli/in/all-kinds.yaml', 'utf8');
      // Far more than a pipe buffer holds, so the writer is still writing when head exits.
      writeFileSync(join(dir, 'big.yaml'), Array.from({ length: 60 }, () => one).join('\n---\n'));
      const script = `${JSON.stringify(process.execPath)} --import tsx src/cli/main.ts inject ${JSON.stringify(join(dir, 'big.yaml'))} 2>${JSON.stringify(join(dir, 'err'))} | head -1; echo "exit \${PIPESTATUS[0]}"`;
      const result = spawnSync('bash', ['-c', script], { encoding: 'utf8', timeout: 60_000 });
      expect(result.stdout).toMatch(/exit 0\n$/);
      const stderr = readFileSync(join(dir, 'err'), 'utf8');
      expect(stderr).not.toMatch(/EPIPE|Unhandled|\n\s+at \S/);
      expect(stderr).toContain('annotated');
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  }, 60_000);

  it('writes an output of several megabytes through a pipe whole, and stops quietly when the pipe closes in it', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'proxy-injector-big-'));
    try {
      const one = readFileSync('test/fixtures/cli/in/deployment.yaml', 'utf8');
      const big = join(dir, 'big.yaml');
      writeFileSync(big, Array.from({ length: 600 }, () => one).join('\n---\n'));
      const args = ['inject', '--manual', '--trust-anchors', 'test/fixtures/cli/trust-anchors.pem', big];
      const piped = spawnSync(process.execPath, ['--import', 'tsx', 'src/cli/main.ts', ...args], { encoding: 'utf8', timeout: 60_000, maxBuffer: 1 << 28 });
      const inProcess = await runInject(args.slice(1));
      expect(piped.status, piped.stderr).toBe(0);
      expect(inProcess.stdout.length).toBeGreaterThan(3 << 20);
      expect(piped.stdout).toBe(inProcess.stdout);
      expect(piped.stderr).toBe(inProcess.stderr);
      const script = `${JSON.stringify(process.execPath)} --import tsx src/cli/main.ts ${args.map((a) => JSON.stringify(a)).join(' ')} 2>${JSON.stringify(join(dir, 'err'))} | head -1; echo "exit \${PIPESTATUS[0]}"`;
      const closed = spawnSync('bash', ['-c', script], { encoding: 'utf8', timeout: 60_000 });
      expect(closed.stdout).toMatch(/exit 0\n$/);
      expect(readFileSync(join(dir, 'err'), 'utf8')).not.toMatch(/EPIPE|Unhandled|Warning|\n\s+at \S/);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  }, 120_000);

  it('turns a usage error of any command into exit status 2 with the command usage', () => {
    const result = cli(['serve', '--no-such-flag']);
    expect(result).toEqual({
      code: 2,
      stdout: '',
      stderr: "proxy-injector serve: unknown flag --no-such-flag\nUsage: proxy-injector serve [options]\nRun 'proxy-injector serve --help' for all options.\n",
    });
  }, 60_000);

  it('help COMMAND prints the command help; a missing file is one line; version names the Linkerd version', () => {
    expect(cli(['help', 'inject'])).toEqual({ code: 0, stdout: INJECT_HELP, stderr: '' });
    expect(cli(['explain', 'no-such-pod.yaml'])).toEqual({ code: 1, stdout: '', stderr: 'proxy-injector explain: no-such-pod.yaml: no such file or directory\n' });
    expect(cli(['version']).stdout).toBe(`proxy-injector ${packageVersion()} (follows Linkerd ${DEFAULT_LINKERD_VERSION})\n`);
  }, 120_000);

  it('version: an unknown flag is a usage error, --help its help', () => {
    for (const args of [['version', '--bogus'], ['--version', 'extra']]) {
      const result = cli(args);
      expect(result.code).toBe(2);
      expect(result.stderr).toMatch(/^proxy-injector version: (Unexpected argument 'extra'|Unknown option '--bogus')/);
    }
    for (const args of [['version', '--help'], ['help', 'version']]) expect(cli(args)).toEqual({ code: 0, stdout: expect.stringMatching(/^Usage: proxy-injector version /), stderr: '' });
  }, 120_000);
});

describe('inputs the commands cannot use: one line naming the file and what is wrong, exit 1', () => {
  const ANCHORS = ['--trust-anchors', 'test/fixtures/cli/trust-anchors.pem'];

  it('a document nested 100,000 deep, in every command that reads manifests', () => {
    const dir = mkdtempSync(join(tmpdir(), 'proxy-injector-deep-'));
    try {
      const file = join(dir, 'deep.yaml');
      writeFileSync(file, `a: ${'['.repeat(100_000)}${']'.repeat(100_000)}\n`);
      for (const command of ['inject', 'explain', 'uninject']) {
        const args = command === 'uninject' ? [file] : [...ANCHORS, file];
        expect(cli([command, ...args])).toEqual({
          code: 1,
          stdout: '',
          stderr: `proxy-injector ${command}: ${file}:1: invalid YAML: collections nested too deeply to read\n`,
        });
      }
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  }, 120_000);

  it('a loop of symbolic links, named or met in a directory; serve --tls-dir that is a file', () => {
    const dir = mkdtempSync(join(tmpdir(), 'proxy-injector-loop-'));
    try {
      symlinkSync('b.yaml', join(dir, 'a.yaml'));
      symlinkSync('a.yaml', join(dir, 'b.yaml'));
      expect(cli(['inject', join(dir, 'a.yaml')])).toEqual({ code: 1, stdout: '', stderr: `proxy-injector inject: ${join(dir, 'a.yaml')}: a loop of symbolic links\n` });
      expect(cli(['explain', dir])).toEqual({ code: 1, stdout: '', stderr: `proxy-injector explain: ${join(dir, 'a.yaml')}: a loop of symbolic links\n` });
      const file = join(dir, 'not-a-dir');
      writeFileSync(file, '');
      const served = cli(['serve', '--no-cluster', '--tls-dir', file, '--addr', '127.0.0.1:18790', '--admin-addr', '127.0.0.1:18791']);
      expect(served).toEqual({ code: 1, stdout: '', stderr: `proxy-injector serve: --tls-dir ${file}: not a directory\n` });
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  }, 120_000);

  it('--values holding binary bytes: the file named, the text escaped, one line', () => {
    const dir = mkdtempSync(join(tmpdir(), 'proxy-injector-values-'));
    try {
      const values = join(dir, 'values.bin');
      writeFileSync(values, Buffer.from('proxy:\n  uid: \x01\x02\xff\xfe\n  x: [\x00\x80\n\x1b[31mred\n', 'latin1'));
      for (const command of ['inject', 'uninject']) {
        const result = cli([command, ...(command === 'inject' ? ANCHORS : []), '--values', values, 'examples/pod.yaml']);
        expect(result).toMatchObject({ code: 1, stdout: '' });
        expect(result.stderr).toMatch(new RegExp(`^proxy-injector ${command}: --values ${values}: Linkerd values are not valid YAML: [^\\n]+\\n$`));
        // eslint-disable-next-line no-control-regex
        expect(result.stderr.slice(0, -1)).not.toMatch(/[\u0000-\u001f\u007f-\u009f\ufffd]/);
      }
      writeFileSync(values, Buffer.from('proxy:\n  ports:\n    admin: "\x1b[31m\xff\xfe"\n', 'latin1'));
      const result = cli(['inject', ...ANCHORS, '--values', values, 'examples/pod.yaml']);
      expect(result.stderr).toBe(`proxy-injector inject: --values ${values}: Linkerd values: proxy.ports.admin must be a number, got "\\u001b[31m\\ufffd\\ufffd"\n`);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  }, 120_000);
});
