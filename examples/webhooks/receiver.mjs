// A receiver of Cutout's job webhooks: Node's http module and the Standard Webhooks library
// (`npm install standardwebhooks`).
//
//   CUTOUT_WEBHOOK_SECRET=whsec_… PORT=8000 node examples/webhooks/receiver.mjs
//
// It answers 204 to a delivery one of whose signatures is right and whose webhook-timestamp is
// at most 5 minutes from this machine's clock, 401 to any other, and acts once per webhook-id
// (a retry of a delivery it has handled is answered 200 and not acted on again). During a
// rotation of the secret, Cutout signs with the old and the new one: this receiver accepts the
// delivery with whichever it has. Cutout retries anything but a 2xx, so answer fast and do the
// slow work afterwards.
import { createServer } from 'node:http';
import { Webhook } from 'standardwebhooks';

const SECRET = process.env.CUTOUT_WEBHOOK_SECRET;
const MAX_BODY_BYTES = 1024 * 1024;
if (!SECRET) {
  console.error('Set CUTOUT_WEBHOOK_SECRET to the signing secret the dashboard or `cutout webhook-secret` showed.');
  process.exit(2);
}
// Checks the webhook-id, webhook-timestamp and webhook-signature headers; refuses a timestamp
// more than 5 minutes from now, so that a captured delivery cannot be replayed later.
const webhook = new Webhook(SECRET);

// Deliveries handled; a real receiver keeps these in its database.
const handled = new Set();

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
    const body = Buffer.concat(chunks).toString('utf8');
    let job;
    try {
      job = webhook.verify(body, request.headers);
    } catch (error) {
      console.log(`refused a request: ${error.message}`);
      return response.writeHead(401).end();
    }
    const id = request.headers['webhook-id'];
    if (handled.has(id)) return response.writeHead(200).end();
    handled.add(id);
    console.log(`${job.event} ${job.id}: ${job.counts.succeeded} succeeded, ${job.counts.failed} failed; results at ${job.results_url}`);
    response.writeHead(204).end();
  });
});

server.listen(Number(process.env.PORT ?? 8000), process.env.HOST ?? '127.0.0.1', () => {
  const { address, port } = server.address();
  console.log(`listening on http://${address}:${port}`);
});
