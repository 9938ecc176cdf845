/**
 * `inject --manual | uninject -` gives the file back: byte for byte when it keeps to what the CLI writes as it read it
 * (CRLF line ends and a UTF-8 byte-order mark among that), and with the few normalisations docs/cli.md lists otherwise.
 */
import { describe, expect, it } from 'vitest';
import { runInject } from '../../src/cli/inject.js';
import { runUninject } from '../../src/cli/uninject.js';
import { TRUST_ANCHORS } from '../support/engine.js';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

const anchors = join(mkdtempSync(join(tmpdir(), 'pi-round-trip-')), 'anchors.pem');
writeFileSync(anchors, TRUST_ANCHORS);

/** Injects `text` from stdin, then uninjects the result from stdin; both must succeed. */
async function roundTrip(text: string): Promise<{ injected: string; back: string }> {
  const injected = await runInject(['--manual', '--trust-anchors', anchors, '-'], { stdin: text });
  expect(injected.code, injected.stderr).toBe(0);
  const back = await runUninject(['-'], { stdin: injected.stdout });
  expect(back.code, back.stderr).toBe(0);
  return { injected: injected.stdout, back: back.stdout };
}

const DEPLOYMENT = [
  'apiVersion: apps/v1',
  'kind: Deployment',
  'metadata:',
  '  name: web # the storefront',
  'spec:',
  '  selector:',
  '    matchLabels:',
  '      app: web',
  '  template:',
  '    metadata:',
  '      labels:',
  '        app: web',
  '    spec:',
  '      containers:',
  '      - name: app',
  '        image: app:1',
  '---',
  'apiVersion: v1',
  'kind: Service',
  'metadata:',
  '  name: web',
  'spec:',
  '  ports:',
  '  - port: 80',
  '',
].join('\n');

describe('inject --manual | uninject -', () => {
  it('gives an LF file back byte for byte', async () => {
    expect((await roundTrip(DEPLOYMENT)).back).toBe(DEPLOYMENT);
  });

  it('keeps CRLF line ends, on every line it writes, and gives a CRLF file back byte for byte', async () => {
    const crlf = DEPLOYMENT.replace(/\n/g, '\r\n');
    const { injected, back } = await roundTrip(crlf);
    expect(injected).toContain('linkerd-proxy');
    expect(injected.replace(/\r\n/g, '')).not.toContain('\n');
    expect(back).toBe(crlf);
  });

  it('keeps a UTF-8 byte-order mark, once, at the start, and gives the file back byte for byte', async () => {
    const bom = `\ufeff${DEPLOYMENT}`;
    const { injected, back } = await roundTrip(bom);
    expect(injected.startsWith('\ufeffapiVersion: apps/v1\n')).toBe(true);
    expect(injected.split('\ufeff')).toHaveLength(2);
    expect(back).toBe(bom);
  });

  it('joins a plain scalar folded over lines, and evens the spacing inside flow collections, as docs/cli.md says', async () => {
    const quirky = DEPLOYMENT.replace('  name: web # the storefront', '  name: web # the storefront\n  annotations:\n    note: a long\n      folded note').replace(
      '        image: app:1',
      '        image: app:1\n        command: ["sh",   "-c"]',
    );
    const { back } = await roundTrip(quirky);
    expect(back).toBe(quirky.replace('note: a long\n      folded note', 'note: a long folded note').replace('["sh",   "-c"]', '[ "sh", "-c" ]'));
  });

  it("keeps a file's last `---`, and a document of nothing but a marker and comments, byte for byte", async () => {
    const marked = `${DEPLOYMENT}---\n# nothing here\n---\n${DEPLOYMENT.replace(/web/g, 'api')}---\n`;
    expect((await roundTrip(marked)).back).toBe(marked);
    const annotated = await runInject(['-'], { stdin: marked });
    const annotation = (app: string): string => `        app: ${app}\n      annotations:\n        linkerd.io/inject: enabled\n`;
    expect(annotated.stdout).toBe(marked.replace('        app: web\n', annotation('web')).replace('        app: api\n', annotation('api')));
    // A file that ends in `---` opens the document the next file's text goes into: no second marker is added.
    const two = await runUninject(['-', '-'], { stdin: 'kind: A\n---\n' });
    expect(two.stdout).toBe('kind: A\n---\nkind: A\n---\n');
  });

  it('keeps irregular indentation, trailing spaces and a comment indented as an outer map, byte for byte', async () => {
    const irregular = DEPLOYMENT.replace('      app: web\n  template:', '         app: web   \n  template:')
      .replace('        app: web\n    spec:', '        app: web\n    spec:\n      terminationGracePeriodSeconds: 30  ')
      .replace('        image: app:1\n', '        image: app:1\n        env:\n          - name: A\n            value: "1"\n  # the claims, below the template\n  volumeClaimTemplates: []\n');
    expect(irregular).toContain('  # the claims');
    const { injected, back } = await roundTrip(irregular);
    expect(injected).toContain('         app: web   \n');
    expect(back).toBe(irregular);
    const annotated = (await runInject(['-'], { stdin: irregular })).stdout;
    expect(annotated).toBe(irregular.replace('      labels:\n        app: web\n', '      labels:\n        app: web\n      annotations:\n        linkerd.io/inject: enabled\n'));
  });

  it('re-indents a document the yaml library prints whole, as docs/cli.md says: here one with an anchor', async () => {
    const anchored = DEPLOYMENT.replace('      app: web\n  template:', '         app: &app web   \n  template:');
    const { back } = await roundTrip(anchored);
    expect(back).toBe(anchored.replace('         app: &app web   \n', '      app: &app web\n'));
  });

  it('re-indents a document whose flow map gets an entry, as docs/cli.md says', async () => {
    const flow = DEPLOYMENT.replace('    metadata:\n      labels:\n        app: web\n', '    metadata:\n      labels: {app: web}\n').replace('  selector:\n    matchLabels:\n      app: web\n', '  selector:\n      matchLabels:\n          app: web\n');
    const { back } = await roundTrip(flow);
    expect(back).toBe(flow.replace('  selector:\n      matchLabels:\n          app: web\n', '  selector:\n    matchLabels:\n      app: web\n'));
  });
});
