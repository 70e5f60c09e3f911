import { parseArgs } from 'node:util';
import { installModel, listModels, removeModel } from '../model/installed-models.js';
import type { MaskActivation, ModelProcessing } from '../model/model-processing.js';
import { UsageError } from './usage-error.js';

export const MODELS_USAGE = `  cutout models list                       every preset and installed model, with size on disk, download size and licence
  cutout models add NAME [FILE]            installs a preset's file after checking its hash (the bundled isnet-small needs no FILE)
  cutout models add NAME FILE --input-size N --mean R,G,B --std R,G,B [--scale 255] [--output-index 0] [--activation sigmoid|none] [--fit stretch|letterbox]
                                           installs any other ONNX segmentation model under a new name
  cutout models remove NAME`;

function numbers(flag: string, text: string | undefined, count: number): number[] {
  const values = (text ?? '').split(',').map((part) => Number(part.trim()));
  if (values.length !== count || values.some((value) => !Number.isFinite(value) || (text ?? '').trim() === '')) throw new UsageError(`--${flag} needs ${count === 1 ? 'a number' : `${count} numbers R,G,B`}, got ${JSON.stringify(text ?? '')}`);
  return values;
}

/** The processing a custom `models add` gives on its command line, or undefined when it gives none. */
function processingFromFlags(values: Record<string, string | undefined>): ModelProcessing | undefined {
  const given = ['input-size', 'mean', 'std', 'scale', 'output-index', 'activation', 'fit'].filter((flag) => values[flag] !== undefined);
  if (given.length === 0) return undefined;
  for (const flag of ['input-size', 'mean', 'std']) if (values[flag] === undefined) throw new UsageError(`a custom model needs --${flag} (given: ${given.map((f) => `--${f}`).join(' ')})`);
  const activation = values.activation ?? 'none';
  if (activation !== 'sigmoid' && activation !== 'none') throw new UsageError(`--activation is sigmoid or none, not ${JSON.stringify(activation)}`);
  const fit = values.fit ?? 'stretch';
  if (fit !== 'stretch' && fit !== 'letterbox') throw new UsageError(`--fit is stretch or letterbox, not ${JSON.stringify(fit)}`);
  const [r, g, b] = numbers('mean', values.mean, 3);
  const [sr, sg, sb] = numbers('std', values.std, 3);
  return {
    inputSize: numbers('input-size', values['input-size'], 1)[0],
    scale: values.scale === undefined ? 255 : numbers('scale', values.scale, 1)[0],
    mean: [r, g, b],
    std: [sr, sg, sb],
    outputIndex: values['output-index'] === undefined ? 0 : numbers('output-index', values['output-index'], 1)[0],
    activation: activation as MaskActivation,
    ...(fit === 'letterbox' ? { fit } : {}),
  };
}

const megabytes = (bytes: number | undefined) => (bytes === undefined ? '-' : `${(bytes / 1e6).toFixed(1)} MB`);

/**
 * `cutout models …`: lists the presets and installed models, installs one into the data
 * directory (hash-checked for a preset), removes one. Needs only the data directory.
 */
export async function modelsCommand(args: string[], dataDir: string, print: (line: string) => void = console.log): Promise<void> {
  const { values, positionals } = parseArgs({
    args,
    allowPositionals: true,
    options: {
      'input-size': { type: 'string' },
      mean: { type: 'string' },
      std: { type: 'string' },
      scale: { type: 'string' },
      'output-index': { type: 'string' },
      activation: { type: 'string' },
      fit: { type: 'string' },
    },
  });
  const [action, name, file] = positionals;
  if (action === 'list') {
    const rows = (await listModels(dataDir)).map((row) => [
      row.name,
      row.installed ? 'installed' : '-',
      megabytes(row.size),
      megabytes(row.published),
      row.architecture,
      row.commercial ? row.licence : `${row.licence}, non-commercial`,
      row.source,
    ]);
    const all = [['NAME', 'STATUS', 'SIZE', 'DOWNLOAD', 'ARCHITECTURE', 'LICENCE', 'SOURCE'], ...rows];
    const widths = all[0].map((_, i) => Math.max(...all.map((row) => row[i].length)));
    for (const row of all) print(row.map((cell, i) => cell.padEnd(widths[i])).join('  ').trimEnd());
  } else if (action === 'add') {
    if (!name) throw new UsageError('models add needs a NAME');
    const manifest = await installModel(dataDir, name, file, processingFromFlags(values));
    print(`Installed ${manifest.name} (${manifest.sha256}); serve it with CUTOUT_MODELS=…,${manifest.name} and ask for it with model=${manifest.name}.`);
  } else if (action === 'remove') {
    if (!name) throw new UsageError('models remove needs a NAME');
    await removeModel(dataDir, name);
    print(`Removed ${name}.`);
  } else {
    throw new UsageError(`unknown models action ${JSON.stringify(action ?? '')}`);
  }
}
