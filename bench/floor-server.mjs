/**
 * The floor the webhook benchmark compares against: the same fastify, TLS settings, body limit and JSON parsing as
 * `proxy-injector serve`, answering each AdmissionReview with the injector's own answer for it, computed beforehand.
 * What it costs is what HTTPS, HTTP, JSON parsing and writing an answer of that size cost with no injection at all.
 * Usage: node bench/floor-server.mjs <tls dir> <answers.json> <port>; prints "listening" when ready.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import Fastify from 'fastify';

const [tlsDir, answersPath, port] = process.argv.slice(2);
const answers = new Map(Object.entries(JSON.parse(readFileSync(answersPath, 'utf8'))));
const app = Fastify({
  logger: false,
  bodyLimit: 10 * 1024 * 1024,
  onProtoPoisoning: 'remove',
  onConstructorPoisoning: 'remove',
  return503OnClosing: true,
  https: { key: readFileSync(join(tlsDir, 'tls.key')), cert: readFileSync(join(tlsDir, 'tls.crt')), minVersion: 'TLSv1.3' },
});
app.post('/', async (request, reply) => {
  const answer = answers.get(request.body?.request?.uid);
  if (answer === undefined) return reply.code(400).send('unknown uid\n');
  return reply.type('application/json; charset=utf-8').send(answer);
});
await app.listen({ host: '127.0.0.1', port: Number(port) });
process.stdout.write('listening\n');
process.on('SIGTERM', () => void app.close().then(() => process.exit(0)));
