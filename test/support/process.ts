/** Following a `proxy-injector serve` child process: its log lines, and the addresses it announces. */
import type { ChildProcess } from 'node:child_process';

/**
 * Collects the child's stdout lines and stderr chunks into `logs`, and resolves with the webhook and admin URLs of its
 * "proxy-injector listening" line; rejects with the log if it exits first.
 */
export function listeningUrls(child: ChildProcess, logs: string[], exited: Promise<number | null>): Promise<{ webhook: string; admin: string }> {
  return new Promise((resolve, reject) => {
    let buffer = '';
    child.stdout?.on('data', (chunk: Buffer) => {
      buffer += chunk.toString();
      let nl;
      while ((nl = buffer.indexOf('\n')) >= 0) {
        const line = buffer.slice(0, nl);
        buffer = buffer.slice(nl + 1);
        logs.push(line);
        if (!line.includes('proxy-injector listening')) continue;
        const entry = JSON.parse(line) as Record<string, string>;
        resolve({ webhook: entry['webhook'] ?? '', admin: entry['admin'] ?? '' });
      }
    });
    child.stderr?.on('data', (chunk: Buffer) => logs.push(chunk.toString()));
    void exited.then((code) => reject(new Error(`serve exited with ${code}: ${logs.join('\n')}`)));
  });
}
