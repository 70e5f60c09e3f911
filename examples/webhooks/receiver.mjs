// A receiver of Cutout's job webhooks: Node's http module, no dependencies.
//
//   CUTOUT_WEBHOOK_SECRET=whsec_… PORT=8000 node examples/webhooks/receiver.mjs
//
// It answers 204 to a delivery whose Cutout-Signature is right and at most 5 minutes old,
// 401 to any other, and acts once per Cutout-Webhook-Id (a retry of a delivery it has handled
// is answered 200 and not acted on again). Cutout retries anything but a 2xx, so answer fast
// and do the slow work afterwards.
import { createHmac, timingSafeEqual } from 'node:crypto';
import { createServer } from 'node:http';

const SECRET = process.env.CUTOUT_WEBHOOK_SECRET;
const TOLERANCE_SECONDS = 5 * 60;
const MAX_BODY_BYTES = 1024 * 1024;
if (!SECRET) {
  console.error('Set CUTOUT_WEBHOOK_SECRET to the signing secret the dashboard or `cutout webhook-secret` showed.');
  process.exit(2);
}

// Deliveries handled; a real receiver keeps these in its database.
const handled = new Set();

/** True when the header signs `<t>.<body>` with the secret, and `t` is recent. */
function verify(header, body) {
  const fields = Object.fromEntries(String(header ?? '').split(',').map((part) => part.trim().split('=', 2)));
  const timestamp = Number(fields.t);
  if (!Number.isInteger(timestamp) || Math.abs(Date.now() / 1000 - timestamp) > TOLERANCE_SECONDS) return false;
  const expected = createHmac('sha256', SECRET).update(`${timestamp}.`).update(body).digest();
  const given = Buffer.from(/^[0-9a-f]{64}$/.test(fields.v1 ?? '') ? fields.v1 : '', 'hex');
  return given.length === expected.length && timingSafeEqual(given, expected);
}

const server = createServer((request, response) => {
  if (request.method !== 'POST') return response.writeHead(405, { allow: 'POST' }).end();
  const chunks = [];
  let size = 0;
  request.on('data', (chunk) => {
    size += chunk.length;
    if (size > MAX_BODY_BYTES) request.destroy();
    else chunks.push(chunk);
  });
  request.on('end', () => {
    // The raw bytes, exactly as sent: parsing and re-serialising the JSON would change them.
    const body = Buffer.concat(chunks);
    if (!verify(request.headers['cutout-signature'], body)) {
      console.log('refused a request: bad or old signature');
      return response.writeHead(401).end();
    }
    const id = request.headers['cutout-webhook-id'];
    if (handled.has(id)) return response.writeHead(200).end();
    handled.add(id);
    const job = JSON.parse(body.toString('utf8'));
    console.log(`${job.event} ${job.id}: ${job.counts.succeeded} succeeded, ${job.counts.failed} failed; results at ${job.results_url}`);
    response.writeHead(204).end();
  });
});

server.listen(Number(process.env.PORT ?? 8000), process.env.HOST ?? '127.0.0.1', () => {
  const { address, port } = server.address();
  console.log(`listening on http://${address}:${port}`);
});
