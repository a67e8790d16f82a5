// The ONNX op mapping table: one entry per supported ONNX op. Simple ops map
// one to one; layout ops take their constant inputs as IR attributes; a few
// activations are decompositions into IR core ops.
#include <algorithm>
#include <functional>
#include <limits>

#include "frontend/onnx_context.h"
#include "frontend/onnx_ops_util.h"

namespace sp::frontend::onnx_detail {

using ir::AttrMap;
using ir::Dim;
using ir::DType;
using ir::OpKind;
using ir::Shape;
using ir::Tensor;

namespace {

Handler unaryOp(OpKind op) {
  return [op](Importer& im) -> Status {
    SP_ASSIGN(std::string x, im.input(0));
    SP_TRY(im.emit1(op, {x}, {}, im.output(0)));
    return okStatus();
  };
}

Handler binaryOp(OpKind op) {
  return [op](Importer& im) -> Status {
    SP_ASSIGN(std::string a, im.input(0));
    SP_ASSIGN(std::string b, im.input(1));
    AttrMap attrs;
    if (op == OpKind::Mod) attrs["fmod"] = attrInt(im, "fmod", 0);
    SP_TRY(im.emit1(op, {a, b}, attrs, im.output(0)));
    return okStatus();
  };
}

// Max, Min, Sum, Mean: variadic, folded left to right.
Handler variadicOp(OpKind op, bool mean = false) {
  return [op, mean](Importer& im) -> Status {
    size_t n = im.numInputs();
    SP_ASSIGN(std::string cur, im.input(0));
    for (size_t i = 1; i < n; ++i) {
      SP_ASSIGN(std::string x, im.input(i));
      bool last = i + 1 == n && !mean;
      SP_ASSIGN(cur, im.emit1(op, {cur, x}, {}, last ? im.output(0) : ""));
    }
    if (mean && n > 1) {
      SP_ASSIGN(std::string c, scalarLike(im, cur, double(n)));
      SP_TRY(im.emit1(OpKind::Div, {cur, c}, {}, im.output(0)));
    } else if (n == 1) {
      SP_TRY(im.alias(im.output(0), cur));
    }
    return okStatus();
  };
}

// Gemm as the ops it is made of, Y = alpha * op(A) @ op(B) + beta * C (op:
// a transpose when trans_a / trans_b), like aten.addmm and aten.linear in
// the fx importer, so the verifier's matmul lemmas apply to it.
Status gemm(Importer& im) {
  SP_ASSIGN(std::string a, im.input(0));
  SP_ASSIGN(std::string b, im.input(1));
  for (const auto& [x, what] : {std::pair{a, "A"}, std::pair{b, "B"}})
    if (im.val(x).type.shape.size() != 2)
      return im.err("bad-rank", "Gemm '" + im.nodeName() + "': " + what + " '" + x + "' must be 2-d, got " +
                                          im.val(x).type.str());
  AttrMap perm{{"perm", std::vector<int64_t>{1, 0}}};
  if (attrInt(im, "transA", 0)) {
    SP_ASSIGN(a, im.emit1(OpKind::Transpose, {a}, perm));
  }
  if (attrInt(im, "transB", 0)) {
    SP_ASSIGN(b, im.emit1(OpKind::Transpose, {b}, perm));
  }
  double alpha = attrFloat(im, "alpha", 1.0), beta = attrFloat(im, "beta", 1.0);
  bool bias = im.hasInput(2) && beta != 0;
  SP_ASSIGN(std::string y, im.emit1(OpKind::MatMul, {a, b}, {}, alpha == 1 && !bias ? im.output(0) : ""));
  if (alpha != 1) {
    SP_ASSIGN(std::string k, scalarLike(im, y, alpha));
    SP_ASSIGN(y, im.emit1(OpKind::Mul, {y, k}, {}, bias ? "" : im.output(0)));
  }
  if (!bias) return okStatus();
  SP_ASSIGN(std::string c, im.input(2));
  if (beta != 1) {
    SP_ASSIGN(std::string k, scalarLike(im, c, beta));
    SP_ASSIGN(c, im.emit1(OpKind::Mul, {c, k}, {}));
  }
  SP_TRY(im.emit1(OpKind::Add, {y, c}, {}, im.output(0)));
  return okStatus();
}

Status clip(Importer& im) {
  SP_ASSIGN(std::string x, im.input(0));
  double lo = -std::numeric_limits<double>::infinity(), hi = -lo;
  if (im.opset() < 11) {
    lo = attrFloat(im, "min", lo);
    hi = attrFloat(im, "max", hi);
  } else {
    if (im.hasInput(1)) {
      SP_ASSIGN(lo, im.constScalar(1, "min"));
    }
    if (im.hasInput(2)) {
      SP_ASSIGN(hi, im.constScalar(2, "max"));
    }
  }
  SP_TRY(im.emit1(OpKind::Clip, {x}, {{"min", lo}, {"max", hi}}, im.output(0)));
  return okStatus();
}

Status cast(Importer& im) {
  SP_ASSIGN(std::string x, im.input(0));
  auto to = dtypeFromOnnx(int32_t(attrInt(im, "to", 0)), "Cast 'to'");
  if (!to) return im.err("onnx-unsupported-attr", to.error().message);
  SP_TRY(im.emit1(OpKind::Cast, {x}, {{"to", *to}}, im.output(0)));
  return okStatus();
}

// Reduce axes: attribute before opset 18 (ReduceSum: input from 13).
Result<std::optional<std::vector<int64_t>>> reduceAxes(Importer& im, bool inputAxes) {
  if (inputAxes) {
    if (!im.hasInput(1)) return std::optional<std::vector<int64_t>>{};
    SP_ASSIGN(auto axes, im.constInts(1, "axes"));
    return std::optional<std::vector<int64_t>>(axes);
  }
  if (!hasAttr(im, "axes")) return std::optional<std::vector<int64_t>>{};
  return std::optional<std::vector<int64_t>>(attrInts(im, "axes"));
}

// pre: applied before the reduction; post: after it.
Handler reduceOp(OpKind op, int64_t sumInputFrom, std::optional<OpKind> pre = {},
                 std::optional<OpKind> post = {}) {
  return [=](Importer& im) -> Status {
    SP_ASSIGN(std::string x, im.input(0));
    bool inputAxes = im.opset() >= 18 || im.opset() >= sumInputFrom;
    SP_ASSIGN(auto axes, reduceAxes(im, inputAxes));
    int64_t keep = attrInt(im, "keepdims", 1);
    if ((!axes || axes->empty()) && attrInt(im, "noop_with_empty_axes", 0))
      return im.alias(im.output(0), x);
    if (pre == OpKind::Mul) {
      SP_ASSIGN(x, im.emit1(OpKind::Mul, {x, x}, {}));
    } else if (pre) {
      SP_ASSIGN(x, im.emit1(*pre, {x}, {}));
    }
    AttrMap a{{"axes", axes.value_or(std::vector<int64_t>{})}, {"keepdims", keep}};
    SP_ASSIGN(std::string r, im.emit1(op, {x}, a, post ? "" : im.output(0)));
    if (post) SP_TRY(im.emit1(*post, {r}, {}, im.output(0)));
    return okStatus();
  };
}

Handler argOp(OpKind op) {
  return [op](Importer& im) -> Status {
    SP_ASSIGN(std::string x, im.input(0));
    AttrMap a{{"axis", attrInt(im, "axis", 0)},
              {"keepdims", attrInt(im, "keepdims", 1)},
              {"select_last_index", attrInt(im, "select_last_index", 0)}};
    SP_TRY(im.emit1(op, {x}, a, im.output(0)));
    return okStatus();
  };
}

// Softmax before opset 13 normalizes over the flattened dims [axis, rank).
Handler softmaxOp(OpKind op) {
  return [op](Importer& im) -> Status {
    SP_ASSIGN(std::string x, im.input(0));
    const Shape& s = im.val(x).type.shape;
    int64_t r = int64_t(s.size());
    int64_t axis = attrInt(im, "axis", im.opset() >= 13 ? -1 : 1);
    SP_ASSIGN(axis, normAxisAt(im, axis, r));
    if (im.opset() >= 13 || axis == r - 1 || r == 0) {
      SP_TRY(im.emit1(op, {x}, {{"axis", axis}}, im.output(0)));
      return okStatus();
    }
    Shape flat{product(s, 0, axis), product(s, axis, r)};
    SP_ASSIGN(std::string f, im.emit1(OpKind::Reshape, {x}, {{"shape", flat}}));
    SP_ASSIGN(std::string y, im.emit1(op, {f}, {{"axis", int64_t(-1)}}));
    SP_TRY(im.emit1(OpKind::Reshape, {y}, {{"shape", s}}, im.output(0)));
    return okStatus();
  };
}

Status layerNorm(Importer& im) {
  SP_ASSIGN(std::string x, im.input(0));
  std::vector<std::string> ins{x};
  for (size_t i = 1; i < 3; ++i)
    if (im.hasInput(i)) {
      SP_ASSIGN(std::string v, im.input(i));
      ins.push_back(v);
    }
  int64_t r = int64_t(im.val(x).type.shape.size());
  SP_ASSIGN(int64_t axis, normAxisAt(im, attrInt(im, "axis", -1), r));
  double eps = attrFloat(im, "epsilon", 1e-5);
  SP_TRY(im.emit1(OpKind::LayerNorm, ins, {{"axis", axis}, {"epsilon", eps}}, im.output(0)));
  if (!im.hasOutput(1) && !im.hasOutput(2)) return okStatus();
  // Mean and InvStdDev outputs: decomposed over the normalized dims.
  std::vector<int64_t> axes;
  for (int64_t i = axis; i < r; ++i) axes.push_back(i);
  AttrMap red{{"axes", axes}, {"keepdims", int64_t(1)}};
  SP_ASSIGN(std::string mean, im.emit1(OpKind::ReduceMean, {x}, red, im.output(1)));
  if (!im.hasOutput(2)) return okStatus();
  SP_ASSIGN(std::string d, im.emit1(OpKind::Sub, {x, mean}, {}));
  SP_ASSIGN(std::string d2, im.emit1(OpKind::Mul, {d, d}, {}));
  SP_ASSIGN(std::string var, im.emit1(OpKind::ReduceMean, {d2}, red));
  SP_ASSIGN(std::string e, scalarLike(im, var, eps));
  SP_ASSIGN(std::string ve, im.emit1(OpKind::Add, {var, e}, {}));
  SP_TRY(im.emit1(OpKind::Rsqrt, {ve}, {}, im.output(2)));
  return okStatus();
}

Status transpose(Importer& im) {
  SP_ASSIGN(std::string x, im.input(0));
  int64_t r = int64_t(im.val(x).type.shape.size());
  std::vector<int64_t> perm;
  if (hasAttr(im, "perm")) {
    perm = attrInts(im, "perm");
  } else {
    for (int64_t i = r - 1; i >= 0; --i) perm.push_back(i);
  }
  SP_TRY(im.emit1(OpKind::Transpose, {x}, {{"perm", perm}}, im.output(0)));
  return okStatus();
}

Status concat(Importer& im) {
  std::vector<std::string> ins;
  for (size_t i = 0; i < im.numInputs(); ++i) {
    SP_ASSIGN(std::string x, im.input(i));
    ins.push_back(x);
  }
  SP_TRY(im.emit1(OpKind::Concat, ins, {{"axis", attrInt(im, "axis", 0)}}, im.output(0)));
  return okStatus();
}

Status gatherOp(Importer& im, OpKind op) {
  SP_ASSIGN(std::string x, im.input(0));
  SP_ASSIGN(std::string i, im.input(1));
  SP_TRY(im.emit1(op, {x, i}, {{"axis", attrInt(im, "axis", 0)}}, im.output(0)));
  return okStatus();
}

Status scatterElements(Importer& im) {
  SP_ASSIGN(std::string x, im.input(0));
  SP_ASSIGN(std::string i, im.input(1));
  SP_ASSIGN(std::string u, im.input(2));
  AttrMap a{{"axis", attrInt(im, "axis", 0)}, {"reduction", attrStr(im, "reduction", "none")}};
  SP_TRY(im.emit1(OpKind::ScatterElements, {x, i, u}, a, im.output(0)));
  return okStatus();
}

Status trilu(Importer& im) {
  SP_ASSIGN(std::string x, im.input(0));
  double k = 0;
  if (im.hasInput(1)) {
    SP_ASSIGN(k, im.constScalar(1, "k"));
  }
  SP_TRY(im.emit1(OpKind::Trilu, {x}, {{"upper", attrInt(im, "upper", 1)}, {"k", int64_t(k)}},
                  im.output(0)));
  return okStatus();
}

Status topk(Importer& im) {
  SP_ASSIGN(std::string x, im.input(0));
  SP_ASSIGN(double k, im.constScalar(1, "k"));
  AttrMap a{{"k", int64_t(k)},
            {"axis", attrInt(im, "axis", -1)},
            {"largest", attrInt(im, "largest", 1)},
            {"sorted", attrInt(im, "sorted", 1)}};
  std::vector<std::string> outs{im.output(0), im.output(1)};
  SP_TRY(im.emit(OpKind::TopK, {x}, a, outs));
  return okStatus();
}

Status oneHot(Importer& im) {
  SP_ASSIGN(std::string idx, im.input(0));
  // ONNX accepts any numeric indices; non-integer ones are truncated.
  if (ir::isFloat(im.val(idx).type.dtype)) {
    SP_ASSIGN(idx, im.emit1(OpKind::Cast, {idx}, {{"to", DType::I64}}));
  }
  SP_ASSIGN(double depth, im.constScalar(1, "depth"));
  SP_ASSIGN(Tensor values, im.constTensor(2, "values"));
  if (values.numel() != 2)
    return im.err("onnx-bad-attr-input",
                  "OneHot: values must have 2 elements, got " + std::to_string(values.numel()));
  AttrMap a{{"depth", int64_t(depth)},
            {"axis", attrInt(im, "axis", -1)},
            {"dtype", values.dtype()},
            {"off", values.getAsDouble(0)},
            {"on", values.getAsDouble(1)}};
  SP_TRY(im.emit1(OpKind::OneHot, {idx}, a, im.output(0)));
  return okStatus();
}

Status crossEntropy(Importer& im) {
  SP_ASSIGN(std::string scores, im.input(0));
  SP_ASSIGN(std::string labels, im.input(1));
  std::vector<std::string> ins{scores, labels};
  if (im.hasInput(2)) {
    SP_ASSIGN(std::string w, im.input(2));
    ins.push_back(w);
  }
  AttrMap a{{"reduction", attrStr(im, "reduction", "mean")}};
  if (hasAttr(im, "ignore_index")) a["ignore_index"] = attrInt(im, "ignore_index", -100);
  SP_TRY(im.emit1(OpKind::CrossEntropy, ins, a, im.output(0)));
  if (im.hasOutput(1))
    SP_TRY(im.emit1(OpKind::LogSoftmax, {scores}, {{"axis", int64_t(1)}}, im.output(1)));
  return okStatus();
}

Status dropout(Importer& im) {
  SP_ASSIGN(std::string x, im.input(0));
  bool training = false;
  double ratio = 0.5;
  if (im.opset() >= 12) {
    if (im.hasInput(1)) {
      SP_ASSIGN(ratio, im.constScalar(1, "ratio"));
    }
    if (im.hasInput(2)) {
      SP_ASSIGN(double t, im.constScalar(2, "training_mode"));
      training = t != 0;
    }
  } else {
    ratio = attrFloat(im, "ratio", 0.5);
  }
  const ir::TensorType& t = im.val(x).type;
  if (!training || ratio == 0) {
    SP_TRY(im.alias(im.output(0), x));
    if (!im.hasOutput(1)) return okStatus();
    SP_ASSIGN(std::string one, im.constant(Tensor::scalar(DType::Bool, 1), "true"));
    SP_TRY(im.emit1(OpKind::Expand, {one}, {{"shape", t.shape}}, im.output(1)));
    return okStatus();
  }
  std::string stream = im.output(0) + ".stream";
  SP_TRY(im.addGraphInput(stream, ir::TensorType{DType::F32, t.shape}));
  std::vector<std::string> outs{im.output(0), im.output(1)};
  SP_TRY(im.emit(OpKind::Dropout, {x, stream}, {{"ratio", ratio}}, outs));
  return okStatus();
}

Status constantNode(Importer& im) {
  const auto& n = im.node();
  if (n.attribute_size() != 1)
    return im.err("onnx-bad-node", "Constant: expects exactly one value attribute, got " +
                                       std::to_string(n.attribute_size()));
  const auto& a = n.attribute(0);
  Tensor t;
  if (a.name() == "value") {
    auto r = tensorFromProto(a.t(), "Constant value");
    if (!r) return im.err(r.error().id, r.error().message);
    t = *r;
  } else if (a.name() == "value_float") {
    t = Tensor::scalar(DType::F32, a.f());
  } else if (a.name() == "value_int") {
    t = tensorFromInts({a.i()}, true);
  } else if (a.name() == "value_floats") {
    t = Tensor(DType::F32, {int64_t(a.floats_size())});
    for (int i = 0; i < a.floats_size(); ++i) t.setFromDouble(i, a.floats(i));
  } else if (a.name() == "value_ints") {
    t = tensorFromInts({a.ints().begin(), a.ints().end()}, false);
  } else {
    return im.err("onnx-unsupported-attr",
                  "Constant: attribute '" + a.name() + "' is not supported");
  }
  Val v;
  v.type = t.type();
  v.known = knownOfTensor(t);
  v.konst = std::move(t);
  return im.define(im.output(0), std::move(v));
}

Status flatten(Importer& im) {
  SP_ASSIGN(std::string x, im.input(0));
  const Shape& s = im.val(x).type.shape;
  int64_t r = int64_t(s.size());
  int64_t axis = attrInt(im, "axis", 1);
  if (axis < 0) axis += r;
  if (axis < 0 || axis > r)
    return im.err("bad-axis", "Flatten: axis " + std::to_string(axis) + " out of range for rank " +
                                  std::to_string(r));
  Shape flat{product(s, 0, axis), product(s, axis, r)};
  SP_TRY(im.emit1(OpKind::Reshape, {x}, {{"shape", flat}}, im.output(0)));
  return okStatus();
}

// The IR group of a com.microsoft collective, or "" for a one-rank group (the
// identity). ORT's group_size counts the ranks taking part; AllReduce has no
// such attribute and is over every rank. AllGather and AllToAll need it in a
// per-rank program: ORT's default 1 sizes the output for one rank while its
// communicator spans them all.
Result<std::string> collectiveGroup(Importer& im) {
  const OnnxOptions& o = im.options();
  std::string what = "com.microsoft::" + im.opType() + " '" + im.nodeName() + "'";
  bool sized = hasAttr(im, "group_size");
  int64_t g = attrInt(im, "group_size", 0);
  if (sized && g <= 0)
    return im.err("onnx-group", what + ": group_size " + std::to_string(g) + " is not positive");
  if (sized && g == 1) return std::string();
  if (!sized && im.opType() != "AllReduce" && o.worldSize > 1)
    return im.err("onnx-group", what + " on rank " + std::to_string(o.rank) +
                                    " has no group_size attribute (how many of the " +
                                    std::to_string(o.worldSize) + " ranks it spans)");
  if (o.worldSize <= 0) {
    if (o.groupSize) return o.collectiveGroup;
    return im.err("onnx-group",
                  what + (sized ? " over group_size " + std::to_string(g) : std::string(" over all ranks")) +
                      " in a single graph: a distributed program is a directory of per-rank files "
                      "(*.r<N>.onnx)");
  }
  if (!sized || g == o.worldSize) return o.collectiveGroup;
  if (g > o.worldSize || o.worldSize % g != 0)
    return im.err("onnx-group", what + " on rank " + std::to_string(o.rank) + ": group_size " + std::to_string(g) +
                                    (g > o.worldSize ? " exceeds" : " does not divide") + " the world size " +
                                    std::to_string(o.worldSize) + " (the number of rank files)");
  return onnxContiguousGroup(g);
}

Handler collective(OpKind op) {
  return [op](Importer& im) -> Status {
    if (im.numOutputs() != im.numInputs())
      return im.err("onnx-arity", "com.microsoft::" + im.opType() + " '" + im.nodeName() + "' has " +
                                      std::to_string(im.numInputs()) + " inputs and " +
                                      std::to_string(im.numOutputs()) +
                                      " outputs (input i is reduced into output i)");
    SP_ASSIGN(std::string group, collectiveGroup(im));
    for (size_t i = 0; i < im.numInputs(); ++i) {
      SP_ASSIGN(std::string x, im.input(i));
      if (group.empty()) {
        SP_TRY(im.alias(im.output(i), x));
        continue;
      }
      AttrMap a{{"group", group}};
      if (op == OpKind::AllGather) {
        int64_t rank = int64_t(im.val(x).type.shape.size());
        int64_t axis = attrInt(im, "axis", 0);
        int64_t norm = axis < 0 ? axis + rank : axis;
        if (norm < 0 || norm >= rank)
          return im.err("bad-axis", "com.microsoft::AllGather '" + im.nodeName() + "': axis " +
                                        std::to_string(axis) + " out of range for input '" + x +
                                        "' of rank " + std::to_string(rank));
        a["dim"] = norm;
      }
      SP_TRY(im.emit1(op, {x}, a, im.output(i)));
    }
    return okStatus();
  };
}

const std::map<std::string, Handler>& table() {
  static const std::map<std::string, Handler> t = [] {
    std::map<std::string, Handler> m;
    for (auto [name, op] :
         std::vector<std::pair<const char*, OpKind>>{{"Neg", OpKind::Neg},
                                                     {"Abs", OpKind::Abs},
                                                     {"Exp", OpKind::Exp},
                                                     {"Log", OpKind::Log},
                                                     {"Sqrt", OpKind::Sqrt},
                                                     {"Reciprocal", OpKind::Reciprocal},
                                                     {"Tanh", OpKind::Tanh},
                                                     {"Sigmoid", OpKind::Sigmoid},
                                                     {"Relu", OpKind::Relu},
                                                     {"Erf", OpKind::Erf},
                                                     {"Sin", OpKind::Sin},
                                                     {"Cos", OpKind::Cos},
                                                     {"Floor", OpKind::Floor},
                                                     {"Ceil", OpKind::Ceil},
                                                     {"Sign", OpKind::Sign},
                                                     {"Not", OpKind::Not}})
      m[name] = unaryOp(op);
    for (auto [name, op] :
         std::vector<std::pair<const char*, OpKind>>{{"Add", OpKind::Add},
                                                     {"Sub", OpKind::Sub},
                                                     {"Mul", OpKind::Mul},
                                                     {"Div", OpKind::Div},
                                                     {"Pow", OpKind::Pow},
                                                     {"Mod", OpKind::Mod},
                                                     {"Equal", OpKind::Eq},
                                                     {"Less", OpKind::Lt},
                                                     {"LessOrEqual", OpKind::Le},
                                                     {"Greater", OpKind::Gt},
                                                     {"GreaterOrEqual", OpKind::Ge},
                                                     {"And", OpKind::And},
                                                     {"Or", OpKind::Or},
                                                     {"Xor", OpKind::Xor},
                                                     {"MatMul", OpKind::MatMul}})
      m[name] = binaryOp(op);
    m["Max"] = variadicOp(OpKind::Max);
    m["Min"] = variadicOp(OpKind::Min);
    m["Sum"] = variadicOp(OpKind::Add);
    m["Mean"] = variadicOp(OpKind::Add, true);
    m["Where"] = [](Importer& im) -> Status {
      SP_ASSIGN(std::string c, im.input(0));
      SP_ASSIGN(std::string a, im.input(1));
      SP_ASSIGN(std::string b, im.input(2));
      SP_TRY(im.emit1(OpKind::Where, {c, a, b}, {}, im.output(0)));
      return okStatus();
    };
    m["Identity"] = [](Importer& im) -> Status {
      SP_ASSIGN(std::string x, im.input(0));
      return im.alias(im.output(0), x);
    };
    m["Gemm"] = gemm;
    m["Clip"] = clip;
    m["Cast"] = cast;
    const int64_t kNever = 1000;
    m["ReduceSum"] = reduceOp(OpKind::ReduceSum, 13);
    m["ReduceMean"] = reduceOp(OpKind::ReduceMean, kNever);
    m["ReduceMax"] = reduceOp(OpKind::ReduceMax, kNever);
    m["ReduceMin"] = reduceOp(OpKind::ReduceMin, kNever);
    m["ReduceProd"] = reduceOp(OpKind::ReduceProd, kNever);
    m["ReduceSumSquare"] = reduceOp(OpKind::ReduceSum, kNever, OpKind::Mul);
    m["ReduceL1"] = reduceOp(OpKind::ReduceSum, kNever, OpKind::Abs);
    m["ReduceL2"] = reduceOp(OpKind::ReduceSum, kNever, OpKind::Mul, OpKind::Sqrt);
    m["ReduceLogSum"] = reduceOp(OpKind::ReduceSum, kNever, std::nullopt, OpKind::Log);
    m["ReduceLogSumExp"] = reduceOp(OpKind::ReduceSum, kNever, OpKind::Exp, OpKind::Log);
    m["ArgMax"] = argOp(OpKind::ArgMax);
    m["ArgMin"] = argOp(OpKind::ArgMin);
    m["Softmax"] = softmaxOp(OpKind::Softmax);
    m["LogSoftmax"] = softmaxOp(OpKind::LogSoftmax);
    m["LayerNormalization"] = layerNorm;
    m["Reshape"] = reshape;
    m["Transpose"] = transpose;
    m["Slice"] = slice;
    m["Concat"] = concat;
    m["Split"] = split;
    m["Expand"] = expand;
    m["Squeeze"] = squeeze;
    m["Unsqueeze"] = unsqueeze;
    m["Flatten"] = flatten;
    m["Gather"] = [](Importer& im) { return gatherOp(im, OpKind::Gather); };
    m["GatherElements"] = [](Importer& im) { return gatherOp(im, OpKind::GatherElements); };
    m["ScatterElements"] = scatterElements;
    m["Trilu"] = trilu;
    m["Constant"] = constantNode;
    m["ConstantOfShape"] = constantOfShape;
    m["Range"] = range;
    m["TopK"] = topk;
    m["OneHot"] = oneHot;
    m["SoftmaxCrossEntropyLoss"] = crossEntropy;
    m["Dropout"] = dropout;
    addActivations(m);
    m["com.microsoft::AllReduce"] = collective(OpKind::AllReduce);
    m["com.microsoft::AllGather"] = collective(OpKind::AllGather);
    m["com.microsoft::AllToAll"] = collective(OpKind::AllToAll);
    return m;
  }();
  return t;
}

}  // namespace

Status mapNode(Importer& im) {
  const auto& n = im.node();
  std::string domain = n.domain() == "ai.onnx" ? "" : n.domain();
  std::string key = domain.empty() ? n.op_type() : domain + "::" + n.op_type();
  if (domain.empty()) {
    SP_ASSIGN(bool done, foldShapeArithmetic(im));
    if (done) return okStatus();
  }
  const auto& t = table();
  auto it = t.find(key);
  if (it == t.end())
    return im.err("onnx-unsupported-op",
                  "unsupported onnx op '" + key + "' (node '" + im.nodeName() + "')");
  return it->second(im);
}

}  // namespace sp::frontend::onnx_detail
