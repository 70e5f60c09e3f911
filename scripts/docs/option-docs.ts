/**
 * The docs' tables that the option table (src/options/option-table.ts) and the memory
 * estimate's figures (src/pipeline/pixel-bytes.ts) hold: docs/api.md's output options and
 * docs/configuration.md's memory formula. test/docs.test.ts fails when a document differs
 * from what this writes.
 *
 *   npx tsx scripts/docs/option-docs.ts          # rewrite the two sections
 */
import { readFile, writeFile } from 'node:fs/promises';
import { fileURLToPath } from 'node:url';
import { OPTIONS, optionsOf, type OptionCost, type OptionName } from '../../src/options/option-table.js';
import { BYTES_PER_PIXEL as B, ENCODED_BYTES_PER_PIXEL as E, MODEL_BYTES_PER_PIXEL } from '../../src/pipeline/pixel-bytes.js';
import { withSection } from './marked-section.js';

/** The documents and the sections this script writes in them. */
export const OPTION_DOCS = [
  { path: 'docs/api.md', section: 'options', content: optionTable },
  { path: 'docs/configuration.md', section: 'memory', content: memoryFormula },
] as const;

const code = (name: string) => `\`${name}\``;
const cell = (text: string) => text.replaceAll('|', '\\|');

/** docs/api.md's table of the native API's options: name, the values its kind takes, what it does. */
export function optionTable(): string {
  const rows = optionsOf('native').map((name) => `| ${code(name)} | ${cell(OPTIONS[name].kind.takes)} | ${cell(OPTIONS[name].description)} |`);
  return ['| option | values | meaning |', '| --- | --- | --- |', ...rows].join('\n');
}

/** The options of every wire, each cost with the options that share it, in the table's order. */
function costs(): { names: OptionName[]; cost: OptionCost }[] {
  const found = new Map<OptionCost, OptionName[]>();
  for (const name of Object.keys(OPTIONS) as OptionName[]) {
    const memory = OPTIONS[name].memory;
    if (typeof memory === 'object') found.set(memory, [...(found.get(memory) ?? []), name]);
  }
  return [...found].map(([cost, names]) => ({ names, cost }));
}

/** docs/configuration.md's table of the memory estimate, with P the photo's pixels and A the answer's. */
export function memoryFormula(): string {
  const base = (Object.keys(OPTIONS) as OptionName[]).filter((name) => OPTIONS[name].memory === 'base').map(code);
  const perPixel = (cost: OptionCost) => [cost.photo && `${cost.photo} P`, `${cost.answer} A`].filter(Boolean).join(' + ');
  return [
    '| part | bytes |',
    '| --- | --- |',
    `| held throughout | the photo's encoded bytes, a background's (an upload's length; a URL's counts as \`CUTOUT_MAX_IMAGE_BYTES\`), and the model's pictures and masks: ${MODEL_BYTES_PER_PIXEL} × 1024² per look (two with \`quality=best\` or \`auto\`) |`,
    `| decode phase, HEIC | ${B.photo} P (the decoded RGBA the pipeline shares) + ${B.heicDecoder} P (libheif's heap beside it) |`,
    `| an HEIC background of B pixels | ${B.photo + B.heicDecoder} B more, held to the end: libheif decodes it whole (other formats are streamed down to the answer's size). An upload's is read from its header with the photo's; a URL's is reserved once it is fetched, before it is decoded (waiting, like the first, if it does not fit) |`,
    `| decode phase, other formats | ${B.photo} P (sharp streams the decode into the full-size RGBA) |`,
    `| finish phase | ${B.photo} P (the full-size RGBA; ${B.photo} A when the answer is scaled down and not cropped, as the photo is then decoded at the answer's size) + ${B.refine} P for refinement (${B.stretch} P stretched) + each effect's cost below + ${B.encoder} A for the encoder + the encoded answer (PNG ${E.png}, WebP ${E.webp}, JPEG ${E.jpeg}, zip ${E.zip} bytes per answer pixel), 7/3 of it when the answer is sent as Base64 in JSON. ${base.join(', ')} cost what every removal does (refinement, looks, the model's side), by the request's choice or the server's default |`,
    ...costs().map(({ names, cost }) => `| finish phase, ${names.map(code).join(' or ')} | ${perPixel(cost)}: ${cell(cost.what)} |`),
  ].join('\n');
}

/** The document at `path` (from the repository's root) as this script would write it. */
export async function writtenDoc(entry: (typeof OPTION_DOCS)[number]): Promise<{ file: string; now: string; written: string }> {
  const file = fileURLToPath(new URL(`../../${entry.path}`, import.meta.url));
  const now = await readFile(file, 'utf8');
  return { file, now, written: withSection(now, entry.section, entry.content()) };
}

if (process.argv[1] && fileURLToPath(import.meta.url) === process.argv[1]) {
  for (const entry of OPTION_DOCS) {
    const { file, written } = await writtenDoc(entry);
    await writeFile(file, written);
    console.log(`wrote ${entry.section} in ${file}`);
  }
}
