/**
 * Field numbers from onnx.proto that Cutout's model rewrites read and write (fp32-model.ts,
 * mask-output-only.ts, quantize/), with the wire format in onnx-wire.ts.
 */

export const MODEL_GRAPH = 7;
export const MODEL_OPSET_IMPORT = 8;

export const OPSET_DOMAIN = 1;
export const OPSET_VERSION = 2;

export const GRAPH_NODE = 1;
export const GRAPH_INITIALIZER = 5;
export const GRAPH_INPUT = 11;
export const GRAPH_OUTPUT = 12;
export const GRAPH_VALUE_INFO = 13;

export const VALUE_INFO_NAME = 1;
export const VALUE_INFO_TYPE = 2;
export const TYPE_TENSOR = 1;
export const TENSOR_TYPE_ELEM_TYPE = 1;
export const TENSOR_TYPE_SHAPE = 2;
export const SHAPE_DIM = 1;
export const DIM_VALUE = 1;

export const NODE_INPUT = 1;
export const NODE_OUTPUT = 2;
export const NODE_NAME = 3;
export const NODE_OP_TYPE = 4;
export const NODE_ATTRIBUTE = 5;

export const ATTRIBUTE_NAME = 1;
export const ATTRIBUTE_FLOAT = 2;
export const ATTRIBUTE_INT = 3;
export const ATTRIBUTE_GRAPH = 6;
export const ATTRIBUTE_INTS = 8;
export const ATTRIBUTE_GRAPHS = 11;
export const ATTRIBUTE_TYPE = 20;

/** AttributeProto.AttributeType values. */
export const ATTRIBUTE_TYPE_INT = 2;
export const ATTRIBUTE_TYPE_INTS = 7;

export const TENSOR_DIMS = 1;
export const TENSOR_DATA_TYPE = 2;
export const TENSOR_INT32_DATA = 5;
export const TENSOR_NAME = 8;
export const TENSOR_RAW_DATA = 9;

/** TensorProto.DataType values. */
export const FLOAT = 1;
export const UINT8 = 2;
export const INT8 = 3;
export const INT32 = 6;
export const INT64 = 7;
export const FLOAT16 = 10;
