/**
 * Field numbers from onnx.proto that Cutout's model rewrites read and write (fp32-model.ts,
 * mask-output-only.ts), with the wire format in onnx-wire.ts.
 */

export const MODEL_GRAPH = 7;

export const GRAPH_NODE = 1;
export const GRAPH_INITIALIZER = 5;
export const GRAPH_INPUT = 11;
export const GRAPH_OUTPUT = 12;
export const GRAPH_VALUE_INFO = 13;

export const VALUE_INFO_NAME = 1;

export const NODE_INPUT = 1;
export const NODE_OUTPUT = 2;
export const NODE_OP_TYPE = 4;
export const NODE_ATTRIBUTE = 5;

export const ATTRIBUTE_GRAPH = 6;
export const ATTRIBUTE_GRAPHS = 11;

export const TENSOR_DATA_TYPE = 2;
export const TENSOR_INT32_DATA = 5;
export const TENSOR_NAME = 8;
export const TENSOR_RAW_DATA = 9;

/** TensorProto.DataType values. */
export const FLOAT = 1;
export const FLOAT16 = 10;
