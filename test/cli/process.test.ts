/** `proxy-injector inject` and `uninject` as separate processes: real stdin, stdout, stderr and exit codes. */
import { spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';

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
