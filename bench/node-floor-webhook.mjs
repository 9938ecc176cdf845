/**
 * The floor webhook of bench/node-figures.mjs: what any mutating webhook costs a pod's creation, with no injection in
 * it. It runs in a pod made from this injector's image (the same Node, the same NODE_OPTIONS), behind a Service, and
 * answers every AdmissionReview with one answer computed beforehand: this injector's own answer for the benchmark's
 * pod, patch included. Two things in it are the review's own: its uid, and the name of the service-account token
 * volume the API server gave the pod (`kube-api-access-` and five random characters, which the patch mounts in the
 * proxy's containers), put in the patch's text in place of the one it was computed with and the patch encoded again.
 * So each answer is node:https, reading the body, JSON.parse, a string join and base64, and writing an answer of the
 * injector's size. TLS and keep-alive as the injector's listener has them, given by the environment:
 * FLOOR_TLS_MIN_VERSION, FLOOR_CIPHERS (colon-separated), FLOOR_KEEP_ALIVE_MS, FLOOR_HANDSHAKE_TIMEOUT_MS.
 *
 * Usage: node node-floor-webhook.mjs <tls dir with tls.crt and tls.key> <answer.json> <port> <token volume name in it>
 */
import { readFileSync } from 'node:fs';
import { createServer } from 'node:https';
import { join } from 'node:path';

const [tlsDir, answerPath, port, tokenVolume] = process.argv.slice(2);
if (!tlsDir || !answerPath || !port || !tokenVolume) throw new Error('usage: node node-floor-webhook.mjs <tls dir> <answer.json> <port> <token volume name>');

// The answer's text cut where the uid and the patch go; the patch's text cut where the token volume's name goes.
const UID = '00000000-0000-4000-8000-000000000000';
const PATCH = '@patch@';
const template = JSON.parse(readFileSync(answerPath, 'utf8'));
const patchPieces = Buffer.from(template.response.patch, 'base64').toString('utf8').split(tokenVolume);
template.response.uid = UID;
template.response.patch = PATCH;
const answerPieces = JSON.stringify(template).split(new RegExp(`(${UID}|${PATCH})`));
const TOKEN_VOLUME_PREFIX = 'kube-api-access-';

function answerFor(review) {
  const volume = review.request.object?.spec?.volumes?.find((v) => v.name?.startsWith(TOKEN_VOLUME_PREFIX))?.name ?? tokenVolume;
  const patch = Buffer.from(patchPieces.join(volume)).toString('base64');
  return answerPieces.map((piece) => (piece === UID ? review.request.uid : piece === PATCH ? patch : piece)).join('');
}

const env = (name) => {
  const value = process.env[name];
  if (!value) throw new Error(`${name} is not set`);
  return value;
};
const server = createServer(
  {
    key: readFileSync(join(tlsDir, 'tls.key')),
    cert: readFileSync(join(tlsDir, 'tls.crt')),
    minVersion: env('FLOOR_TLS_MIN_VERSION'),
    ciphers: env('FLOOR_CIPHERS'),
    handshakeTimeout: Number(env('FLOOR_HANDSHAKE_TIMEOUT_MS')),
    keepAliveTimeout: Number(env('FLOOR_KEEP_ALIVE_MS')),
  },
  (request, response) => {
    const chunks = [];
    request.on('data', (chunk) => chunks.push(chunk));
    request.on('end', () => {
      let review;
      try {
        review = JSON.parse(Buffer.concat(chunks).toString('utf8'));
      } catch {
        review = undefined;
      }
      if (typeof review?.request?.uid !== 'string') {
        response.writeHead(400, { 'content-type': 'text/plain' });
        response.end('not an AdmissionReview\n');
        return;
      }
      const answer = answerFor(review);
      response.writeHead(200, { 'content-type': 'application/json; charset=utf-8', 'content-length': Buffer.byteLength(answer) });
      response.end(answer);
    });
  },
);
server.listen(Number(port), '0.0.0.0', () => process.stdout.write(`node floor webhook listening on ${port}\n`));
process.on('SIGTERM', () => server.close(() => process.exit(0)));
