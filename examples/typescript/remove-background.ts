// Removes the background of one photo with the TypeScript SDK, cropped to the subject, as WebP.
//   CUTOUT_URL=http://127.0.0.1:8080 CUTOUT_TOKEN_ID=cut_user_… npx tsx remove-background.ts photo.jpg photo.webp
import { readFile, writeFile } from 'node:fs/promises';
import { CutoutClient } from '@cutout/client';

const [input, output] = process.argv.slice(2);

// The client exchanges the Token ID and renews the managed token itself, and retries 429 and 503.
const cutout = new CutoutClient({ baseUrl: process.env.CUTOUT_URL ?? 'http://127.0.0.1:8080', tokenId: process.env.CUTOUT_TOKEN_ID ?? '' });
const result = await cutout.removeBackground(await readFile(input), { format: 'webp', crop: true });

await writeFile(output, result.bytes);
console.log(`wrote ${output} (${result.width}x${result.height})`);
