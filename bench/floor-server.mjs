/**
 * The floors the webhook benchmark compares against, answering each AdmissionReview with the injector's own answer for
 * it, computed beforehand, over the same TLS settings and with the same body limit:
 * - fastify: the same fastify and JSON parsing (secure-json-parse) a typical Node webhook would use;
 * - node: node:https alone, with JSON.parse: the transport and nothing else, the lowest a Node server can go.
 * What a floor costs is what HTTPS, HTTP, JSON parsing and writing an answer of that size cost with no injection.
 * With a last argument of N microseconds, the node floor also keeps the CPU busy for N µs per request after parsing
 * it, touching no memory: a server with as much work per request as the injector has in process, and nothing else.
 * Usage: node bench/floor-server.mjs <fastify|node> <tls dir> <answers.json> <port> [busy µs per request];
 * prints "listening" when ready.
 */
import { readFileSync } from 'node:fs';
import { createServer } from 'node:https';
import { join } from 'node:path';

const [kind, tlsDir, answersPath, port, busy] = process.argv.slice(2);
const busyMs = Number(busy ?? 0) / 1000;
if (!(busyMs >= 0) || (busyMs > 0 && kind !== 'node')) throw new Error(`busy time ${JSON.stringify(busy)}: expected microseconds, for the node floor`);
const answers = new Map(Object.entries(JSON.parse(readFileSync(answersPath, 'utf8'))));
const tls = { key: readFileSync(join(tlsDir, 'tls.key')), cert: readFileSync(join(tlsDir, 'tls.crt')), minVersion: 'TLSv1.3' };
const LIMIT = 10 * 1024 * 1024;
let close;

if (kind === 'fastify') {
  const { default: Fastify } = await import('fastify');
  const app = Fastify({ logger: false, bodyLimit: LIMIT, onProtoPoisoning: 'remove', onConstructorPoisoning: 'remove', return503OnClosing: true, https: tls });
  app.post('/', async (request, reply) => {
    const answer = answers.get(request.body?.request?.uid);
    if (answer === undefined) return reply.code(400).send('unknown uid\n');
    return reply.type('application/json; charset=utf-8').send(answer);
  });
  await app.listen({ host: '127.0.0.1', port: Number(port) });
  close = () => app.close();
} else if (kind === 'node') {
  const server = createServer(tls, (request, response) => {
    const chunks = [];
    let size = 0;
    request.on('data', (chunk) => {
      size += chunk.length;
      if (size <= LIMIT) chunks.push(chunk);
    });
    request.on('end', () => {
      let answer;
      try {
        answer = size <= LIMIT ? answers.get(JSON.parse(Buffer.concat(chunks, size).toString('utf8'))?.request?.uid) : undefined;
        if (busyMs > 0) {
          const until = performance.now() + busyMs;
          while (performance.now() < until) {
            // Busy on purpose: this floor stands for a server with that much work per request.
          }
        }
      } catch {
        answer = undefined;
      }
      if (answer === undefined) {
        response.writeHead(400, { 'content-type': 'text/plain' });
        response.end('unknown uid\n');
        return;
      }
      response.writeHead(200, { 'content-type': 'application/json; charset=utf-8', 'content-length': Buffer.byteLength(answer) });
      response.end(answer);
    });
  });
  await new Promise((resolve) => server.listen(Number(port), '127.0.0.1', resolve));
  close = () => new Promise((resolve) => server.close(resolve));
} else {
  throw new Error(`unknown floor ${JSON.stringify(kind)}: expected fastify or node`);
}
process.stdout.write('listening\n');
process.on('SIGTERM', () => void close().then(() => process.exit(0)));
