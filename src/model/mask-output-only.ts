/**
 * Keeps one of a model's outputs and drops everything only the others need. The bundled
 * IS-Net lists twelve outputs: the mask Cutout uses, five coarser side masks (each with its
 * own convolution, a Resize to 1024×1024 and a Sigmoid) and six decoder feature maps, none
 * of which Cutout reads. Fetching only the mask does not spare them: with them in the graph
 * a pass is slower and the process's peak higher (docs/internals/performance.md has the figures).
 *
 * Like fp32-model.ts it works on the protobuf wire format (onnx-wire.ts) and copies what it
 * keeps byte for byte.
 */

import * as onnx from './onnx-fields.js';
import { fieldText, lengthDelimitedField, payloadOf, readFields, type WireField } from './onnx-wire.js';

const names = (message: WireField[], number: number) => message.filter((f) => f.number === number).map(fieldText);

/**
 * Returns the model with `output` as its only output, without the nodes, weights and shape
 * hints nothing but the other outputs needed, and how many nodes went. A model whose nodes
 * hold subgraphs (If, Loop, Scan), whose inputs this does not follow, comes back unchanged,
 * as does one with no output of that name.
 *
 * @example const { model, droppedNodes } = keepOnlyOutput(await readFile('isnet.onnx'), 'output')
 */
export function keepOnlyOutput(model: Uint8Array, output: string): { model: Buffer; droppedNodes: number } {
  let droppedNodes = 0;
  const parts = readFields(model).map((field) => {
    if (field.number !== onnx.MODEL_GRAPH) return Buffer.from(field.bytes);
    const pruned = pruneGraph(readFields(payloadOf(field)), output);
    if (!pruned) return Buffer.from(field.bytes);
    droppedNodes = pruned.droppedNodes;
    return lengthDelimitedField(onnx.MODEL_GRAPH, pruned.graph);
  });
  return { model: droppedNodes ? Buffer.concat(parts) : Buffer.from(model), droppedNodes };
}

function pruneGraph(graph: WireField[], output: string): { graph: Buffer; droppedNodes: number } | undefined {
  const outputs = graph.filter((f) => f.number === onnx.GRAPH_OUTPUT);
  const kept = outputs.find((f) => names(readFields(payloadOf(f)), onnx.VALUE_INFO_NAME)[0] === output);
  if (!kept || outputs.length === 1) return undefined;
  const nodes = graph.filter((f) => f.number === onnx.GRAPH_NODE).map((f) => ({ field: f, message: readFields(payloadOf(f)) }));
  const holdsSubgraph = (node: WireField[]) =>
    node.some((f) => f.number === onnx.NODE_ATTRIBUTE && readFields(payloadOf(f)).some((a) => a.number === onnx.ATTRIBUTE_GRAPH || a.number === onnx.ATTRIBUTE_GRAPHS));
  if (nodes.some((node) => holdsSubgraph(node.message))) return undefined;

  // Walking back from the output, a node is needed when something needed reads one of its
  // outputs. ONNX asks for nodes in topological order, where one walk finds them all, but the
  // bundled file as shipped lists the Casts its float16 conversion added before the nodes
  // they read: the walk repeats until it finds no more.
  const needed = new Set([output]);
  const keptNodes = new Set<WireField>();
  for (let found = true; found; ) {
    found = false;
    for (const node of [...nodes].reverse()) {
      if (keptNodes.has(node.field) || !names(node.message, onnx.NODE_OUTPUT).some((name) => needed.has(name))) continue;
      keptNodes.add(node.field);
      found = true;
      for (const name of names(node.message, onnx.NODE_INPUT)) if (name) needed.add(name);
    }
  }
  const keep = (field: WireField) => {
    if (field.number === onnx.GRAPH_NODE) return keptNodes.has(field);
    if (field.number === onnx.GRAPH_OUTPUT) return field === kept;
    if (field.number === onnx.GRAPH_INITIALIZER) return needed.has(names(readFields(payloadOf(field)), onnx.TENSOR_NAME)[0]);
    if (field.number === onnx.GRAPH_INPUT || field.number === onnx.GRAPH_VALUE_INFO) return needed.has(names(readFields(payloadOf(field)), onnx.VALUE_INFO_NAME)[0]);
    return true;
  };
  return { graph: Buffer.concat(graph.filter(keep).map((f) => f.bytes)), droppedNodes: nodes.length - keptNodes.size };
}
