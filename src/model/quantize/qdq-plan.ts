/**
 * Which tensors of a float32 graph the int8 rewrite quantizes, and which must share one
 * scale and zero point (qdq-model.ts says why for each rule). Both the rewrite and the
 * calibration script (which measures only the ranges the rewrite will read) use it.
 */

import type { EditableModel, GraphNode } from './onnx-graph.js';

export interface QdqOptions {
  /** Give every Concat input the Concat output's parameters (default true). */
  shareConcatScales?: boolean;
  /** Regroup the photo for a strided convolution that reads it, space-to-depth.ts (default true). */
  spaceToDepth?: boolean;
}

/** Which inputs of each op carry activations; an op not listed here stops the rewrite. */
const DATA_INPUTS: Record<string, 'all' | number[]> = { Conv: [0], Relu: [0], MaxPool: [0], Concat: 'all', Add: 'all', Resize: [0], Sigmoid: [0] };
/** Ops that run on uint8 when their inputs and output are quantized. */
const INTEGER_OPS = new Set(['Conv', 'Concat', 'Add', 'MaxPool']);

/** Indices of a node's inputs that carry activations. */
export function dataInputs(node: GraphNode): number[] {
  const which = DATA_INPUTS[node.opType] ?? [];
  return which === 'all' ? node.inputs.map((_, i) => i) : which;
}

/** Tensors that must share one scale and zero point (union–find on names). */
export class ParameterGroups {
  readonly #parent = new Map<string, string>();

  /** The name that stands for `name`'s group. */
  root(name: string): string {
    let root = name;
    while (this.#parent.has(root)) root = this.#parent.get(root)!;
    if (root !== name) this.#parent.set(name, root);
    return root;
  }

  join(a: string, b: string): void {
    const [ra, rb] = [this.root(a), this.root(b)];
    if (ra !== rb) this.#parent.set(rb, ra);
  }
}

export interface QdqPlan {
  /** Activations that get a QuantizeLinear after their producer. */
  quantized: Set<string>;
  groups: ParameterGroups;
  /** The quantized tensors whose range calibration must measure: all but those that only copy their input's (MaxPool, Resize). */
  measured: string[];
}

/**
 * Plans the rewrite of `model`: activations are what the graph's inputs flow into through
 * data inputs (a Shape's output is not one). Throws on an op on activations that the rewrite
 * does not know.
 */
export function planQuantization(model: EditableModel, floatConvs: ReadonlySet<string>, options: QdqOptions = {}): QdqPlan {
  const { nodes, initializers } = model;
  const producer = new Map<string, GraphNode>();
  const readers = new Map<string, GraphNode[]>();
  for (const node of nodes) {
    for (const output of node.outputs) producer.set(output, node);
    for (const input of node.inputs) readers.set(input, [...(readers.get(input) ?? []), node]);
  }

  const activations = new Set(model.inputs.filter((name) => !initializers.has(name)));
  for (const node of nodes) {
    if (node.opType === 'Shape' || !node.inputs.some((name) => activations.has(name))) continue;
    if (!(node.opType in DATA_INPUTS)) throw new Error(`the int8 rewrite does not know ${node.opType} (node ${node.name}) on activations`);
    if (!dataInputs(node).some((i) => activations.has(node.inputs[i]))) continue;
    for (const output of node.outputs) activations.add(output);
  }

  const isIntegerConv = (node: GraphNode) => node.opType === 'Conv' && !floatConvs.has(node.name) && initializers.has(node.inputs[1]);
  // Whether an op reads this tensor as integers once quantized; a Resize is settled below.
  const readsIntegers = (node: GraphNode) => isIntegerConv(node) || (INTEGER_OPS.has(node.opType) && node.opType !== 'Conv');
  const quantized = new Set<string>();
  for (const name of activations) {
    const made = producer.get(name);
    const read = readers.get(name) ?? [];
    if (!made || (made.opType === 'Conv' && !isIntegerConv(made))) {
      // The graph's input, and a float convolution's output: quantized only for an integer reader.
      if (read.some(readsIntegers) && !read.every((node) => node.opType === 'Relu')) quantized.add(name);
    } else if (made.opType === 'Conv') {
      // Before a Relu the QuantizeLinear goes after it.
      if (!read.every((node) => node.opType === 'Relu')) quantized.add(name);
    } else if (made.opType === 'Resize') {
      if (read.length > 0 && read.every((node) => INTEGER_OPS.has(node.opType))) quantized.add(name);
    } else if (made.opType !== 'Sigmoid') quantized.add(name);
  }

  const groups = new ParameterGroups();
  const copies = new Set<string>();
  for (const node of nodes) {
    const [input, output] = [node.inputs[0], node.outputs[0]];
    if ((node.opType === 'MaxPool' || node.opType === 'Resize') && quantized.has(input) && quantized.has(output)) {
      groups.join(input, output);
      copies.add(output);
    }
    if (node.opType === 'Concat' && (options.shareConcatScales ?? true) && quantized.has(output)) {
      for (const name of node.inputs) if (quantized.has(name)) groups.join(output, name);
    }
  }
  return { quantized, groups, measured: [...quantized].filter((name) => !copies.has(name)) };
}
