// Sends an AdmissionReview to the webhook the way kube-apiserver does (HTTPS, verifying the CA) and prints the
// response with its JSON patch decoded. Usage: node scripts/send-review.mjs [URL] [REVIEW.json] [CA.crt]
import { readFileSync } from 'node:fs';
import { request } from 'node:https';

const [url = 'https://localhost:8443/', file = 'examples/admission-review.json', caFile = 'certs/ca.crt'] = process.argv.slice(2);
const body = readFileSync(file);
const target = new URL(url);
const req = request(
  {
    hostname: target.hostname,
    port: target.port || 443,
    path: target.pathname,
    method: 'POST',
    ca: readFileSync(caFile),
    headers: { 'content-type': 'application/json', 'content-length': body.length },
  },
  (res) => {
    let text = '';
    res.on('data', (chunk) => (text += chunk));
    res.on('end', () => {
      if (res.statusCode !== 200) {
        console.error(`HTTP ${res.statusCode}: ${text.trim()}`);
        process.exitCode = 1;
        return;
      }
      const review = JSON.parse(text);
      const response = review.response;
      if (response.patch) response.patch = JSON.parse(Buffer.from(response.patch, 'base64').toString('utf8'));
      console.log(JSON.stringify(review, null, 2));
    });
  },
);
req.on('error', (err) => {
  console.error(`cannot reach ${url}: ${err.message}`);
  process.exitCode = 1;
});
req.end(body);
