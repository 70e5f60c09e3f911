// The peer Cutout is compared with: @imgly/background-removal-node, called as its README
// shows, in a process of its own. scripts/bench/peer.ts starts this file and talks to it
// over the IPC channel:
//   → { type: 'load', key, path, mime }       ← { type: 'loaded', key }
//   → { type: 'remove', id, key, inspect }    ← { type: 'done', id, ok, ms, bytes, width?, height?, channels?, error? }
// Requests may overlap: each 'remove' starts at once, so N outstanding requests are N
// concurrent removeBackground calls in one process, as in a server built on the library.
import { readFileSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { removeBackground } from '@imgly/background-removal-node';
import sharp from 'sharp';

// The library reads its model from `publicPath`; its default is node_modules under the
// current directory. Point it at its own package explicitly, and make sure nothing it does
// reaches the network.
const packageDir = dirname(fileURLToPath(import.meta.resolve('@imgly/background-removal-node')));
const publicPath = `${pathToFileURL(packageDir).href}/`;
globalThis.fetch = async (url) => {
  throw new Error(`the peer tried to fetch ${url}; the benchmark runs offline`);
};
const config = { publicPath, model: 'medium', output: { format: 'image/png' } };

const here = dirname(fileURLToPath(import.meta.url));
const versionOf = (name) => JSON.parse(readFileSync(join(here, 'node_modules', name, 'package.json'), 'utf8')).version;
const images = new Map();

process.on('message', async (message) => {
  if (message.type === 'load') {
    images.set(message.key, { bytes: await readFile(message.path), mime: message.mime });
    process.send({ type: 'loaded', key: message.key });
  } else if (message.type === 'remove') {
    const image = images.get(message.key);
    const started = performance.now();
    try {
      const blob = await removeBackground(new Blob([image.bytes], { type: image.mime }), config);
      const ms = performance.now() - started;
      const reply = { type: 'done', id: message.id, ok: true, ms, bytes: blob.size };
      if (message.inspect) {
        const { width, height, channels, format } = await sharp(Buffer.from(await blob.arrayBuffer())).metadata();
        Object.assign(reply, { width, height, channels, format });
      }
      process.send(reply);
    } catch (error) {
      process.send({ type: 'done', id: message.id, ok: false, ms: performance.now() - started, bytes: 0, error: String(error?.stack ?? error) });
    }
  } else if (message.type === 'exit') {
    process.exit(0);
  }
});

process.send({
  type: 'ready',
  versions: {
    '@imgly/background-removal-node': versionOf('@imgly/background-removal-node'),
    'onnxruntime-node': versionOf('onnxruntime-node'),
    sharp: versionOf('sharp'),
  },
});
