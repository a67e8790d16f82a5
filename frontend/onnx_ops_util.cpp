// Helpers for the ONNX op mapping: attribute access, small constants,
// symbolic arange, and activations that are cheap decompositions.
#include "frontend/onnx_ops_util.h"

namespace sp::frontend::onnx_detail {

using ir::Dim;
using ir::DType;
using ir::OpKind;
using ir::Tensor;

namespace {
const onnx::AttributeProto* findAttr(const Importer& im, const std::string& name) {
  for (const auto& a : im.node().attribute())
    if (a.name() == name) return &a;
  return nullptr;
}
}  // namespace

bool hasAttr(const Importer& im, const std::string& name) { return findAttr(im, name) != nullptr; }

int64_t attrInt(const Importer& im, const std::string& name, int64_t def) {
  const auto* a = findAttr(im, name);
  return a ? a->i() : def;
}

double attrFloat(const Importer& im, const std::string& name, double def) {
  const auto* a = findAttr(im, name);
  return a ? double(a->f()) : def;
}

std::string attrStr(const Importer& im, const std::string& name, const std::string& def) {
  const auto* a = findAttr(im, name);
  return a ? a->s() : def;
}

std::vector<int64_t> attrInts(const Importer& im, const std::string& name) {
  const auto* a = findAttr(im, name);
  return a ? std::vector<int64_t>(a->ints().begin(), a->ints().end()) : std::vector<int64_t>{};
}

Result<std::string> scalarLike(Importer& im, const std::string& like, double v) {
  return im.constant(Tensor::scalar(im.val(like).type.dtype, v), "scalar");
}

Dim product(const ir::Shape& s, int64_t from, int64_t to) {
  Dim p(1);
  for (int64_t i = from; i < to; ++i) p = p * s[size_t(i)];
  return p;
}

Result<int64_t> normAxisAt(const Importer& im, int64_t axis, int64_t rank) {
  auto r = ir::normAxis(axis, rank, im.node().op_type());
  if (!r) return im.err(r.error().id, r.error().message);
  return *r;
}

Result<std::string> symbolicArange(Importer& im, const Dim& n) {
  SP_ASSIGN(std::string one, im.constant(tensorFromInts({1}, false), "one"));
  SP_ASSIGN(std::string ones, im.emit1(OpKind::Expand, {one}, {{"shape", ir::Shape{n, n}}}));
  SP_ASSIGN(std::string tri, im.emit1(OpKind::Trilu, {ones}, {{"upper", int64_t(0)}}));
  SP_ASSIGN(std::string cnt,
            im.emit1(OpKind::ReduceSum, {tri},
                     {{"axes", std::vector<int64_t>{1}}, {"keepdims", int64_t(0)}}));
  return im.emit1(OpKind::Sub, {cnt, one}, {});
}

namespace {

// Where(x < 0, neg(x), x) for the piecewise activations.
Result<std::string> piecewise(Importer& im, const std::string& x, const std::string& negPart,
                              const std::string& out, bool le = false) {
  SP_ASSIGN(std::string zero, scalarLike(im, x, 0));
  SP_ASSIGN(std::string c, im.emit1(le ? OpKind::Le : OpKind::Lt, {x, zero}, {}));
  return im.emit1(OpKind::Where, {c, negPart, x}, {}, out);
}

// alpha * (exp(x) - 1)
Result<std::string> expm1Scaled(Importer& im, const std::string& x, double alpha) {
  SP_ASSIGN(std::string e, im.emit1(OpKind::Exp, {x}, {}));
  SP_ASSIGN(std::string one, scalarLike(im, x, 1));
  SP_ASSIGN(std::string em1, im.emit1(OpKind::Sub, {e, one}, {}));
  SP_ASSIGN(std::string a, scalarLike(im, x, alpha));
  return im.emit1(OpKind::Mul, {em1, a}, {});
}

Result<std::string> hardSigmoid(Importer& im, const std::string& x, double alpha, double beta,
                                const std::string& out) {
  SP_ASSIGN(std::string a, scalarLike(im, x, alpha));
  SP_ASSIGN(std::string b, scalarLike(im, x, beta));
  SP_ASSIGN(std::string ax, im.emit1(OpKind::Mul, {x, a}, {}));
  SP_ASSIGN(std::string axb, im.emit1(OpKind::Add, {ax, b}, {}));
  return im.emit1(OpKind::Clip, {axb}, {{"min", 0.0}, {"max", 1.0}}, out);
}

}  // namespace

void addActivations(std::map<std::string, Handler>& m) {
  m["Softplus"] = [](Importer& im) -> Status {
    SP_ASSIGN(std::string x, im.input(0));
    SP_ASSIGN(std::string e, im.emit1(OpKind::Exp, {x}, {}));
    SP_ASSIGN(std::string one, scalarLike(im, x, 1));
    SP_ASSIGN(std::string s, im.emit1(OpKind::Add, {e, one}, {}));
    SP_TRY(im.emit1(OpKind::Log, {s}, {}, im.output(0)));
    return okStatus();
  };
  m["Softsign"] = [](Importer& im) -> Status {
    SP_ASSIGN(std::string x, im.input(0));
    SP_ASSIGN(std::string a, im.emit1(OpKind::Abs, {x}, {}));
    SP_ASSIGN(std::string one, scalarLike(im, x, 1));
    SP_ASSIGN(std::string d, im.emit1(OpKind::Add, {a, one}, {}));
    SP_TRY(im.emit1(OpKind::Div, {x, d}, {}, im.output(0)));
    return okStatus();
  };
  m["HardSigmoid"] = [](Importer& im) -> Status {
    SP_ASSIGN(std::string x, im.input(0));
    SP_TRY(
        hardSigmoid(im, x, attrFloat(im, "alpha", 0.2), attrFloat(im, "beta", 0.5), im.output(0)));
    return okStatus();
  };
  m["HardSwish"] = [](Importer& im) -> Status {
    SP_ASSIGN(std::string x, im.input(0));
    SP_ASSIGN(std::string h, hardSigmoid(im, x, 1.0 / 6.0, 0.5, ""));
    SP_TRY(im.emit1(OpKind::Mul, {x, h}, {}, im.output(0)));
    return okStatus();
  };
  m["LeakyRelu"] = [](Importer& im) -> Status {
    SP_ASSIGN(std::string x, im.input(0));
    SP_ASSIGN(std::string a, scalarLike(im, x, attrFloat(im, "alpha", 0.01)));
    SP_ASSIGN(std::string ax, im.emit1(OpKind::Mul, {x, a}, {}));
    SP_TRY(piecewise(im, x, ax, im.output(0)));
    return okStatus();
  };
  m["Elu"] = [](Importer& im) -> Status {
    SP_ASSIGN(std::string x, im.input(0));
    SP_ASSIGN(std::string n, expm1Scaled(im, x, attrFloat(im, "alpha", 1.0)));
    SP_TRY(piecewise(im, x, n, im.output(0)));
    return okStatus();
  };
  m["Selu"] = [](Importer& im) -> Status {
    SP_ASSIGN(std::string x, im.input(0));
    SP_ASSIGN(std::string n, expm1Scaled(im, x, attrFloat(im, "alpha", 1.67326319217681884765625)));
    SP_ASSIGN(std::string p, piecewise(im, x, n, "", /*le=*/true));
    SP_ASSIGN(std::string g, scalarLike(im, x, attrFloat(im, "gamma", 1.05070102214813232421875)));
    SP_TRY(im.emit1(OpKind::Mul, {p, g}, {}, im.output(0)));
    return okStatus();
  };
  m["CastLike"] = [](Importer& im) -> Status {
    SP_ASSIGN(std::string x, im.input(0));
    SP_ASSIGN(std::string like, im.input(1));
    SP_TRY(im.emit1(OpKind::Cast, {x}, {{"to", im.val(like).type.dtype}}, im.output(0)));
    return okStatus();
  };
  m["Tan"] = [](Importer& im) -> Status {
    SP_ASSIGN(std::string x, im.input(0));
    SP_ASSIGN(std::string sn, im.emit1(OpKind::Sin, {x}, {}));
    SP_ASSIGN(std::string cs, im.emit1(OpKind::Cos, {x}, {}));
    SP_TRY(im.emit1(OpKind::Div, {sn, cs}, {}, im.output(0)));
    return okStatus();
  };
  for (bool isSinh : {true, false})
    m[isSinh ? "Sinh" : "Cosh"] = [isSinh](Importer& im) -> Status {
      SP_ASSIGN(std::string x, im.input(0));
      SP_ASSIGN(std::string ep, im.emit1(OpKind::Exp, {x}, {}));
      SP_ASSIGN(std::string nx, im.emit1(OpKind::Neg, {x}, {}));
      SP_ASSIGN(std::string en, im.emit1(OpKind::Exp, {nx}, {}));
      SP_ASSIGN(std::string c, im.emit1(isSinh ? OpKind::Sub : OpKind::Add, {ep, en}, {}));
      SP_ASSIGN(std::string half, scalarLike(im, x, 0.5));
      SP_TRY(im.emit1(OpKind::Mul, {c, half}, {}, im.output(0)));
      return okStatus();
    };
  m["Celu"] = [](Importer& im) -> Status {
    SP_ASSIGN(std::string x, im.input(0));
    double alpha = attrFloat(im, "alpha", 1.0);
    SP_ASSIGN(std::string a, scalarLike(im, x, alpha));
    SP_ASSIGN(std::string xa, im.emit1(OpKind::Div, {x, a}, {}));
    SP_ASSIGN(std::string n, expm1Scaled(im, xa, alpha));
    SP_ASSIGN(std::string zero, scalarLike(im, x, 0));
    SP_ASSIGN(std::string neg, im.emit1(OpKind::Min, {n, zero}, {}));
    SP_ASSIGN(std::string pos, im.emit1(OpKind::Relu, {x}, {}));
    SP_TRY(im.emit1(OpKind::Add, {pos, neg}, {}, im.output(0)));
    return okStatus();
  };
  m["ThresholdedRelu"] = [](Importer& im) -> Status {
    SP_ASSIGN(std::string x, im.input(0));
    SP_ASSIGN(std::string a, scalarLike(im, x, attrFloat(im, "alpha", 1.0)));
    SP_ASSIGN(std::string zero, scalarLike(im, x, 0));
    SP_ASSIGN(std::string c, im.emit1(OpKind::Gt, {x, a}, {}));
    SP_TRY(im.emit1(OpKind::Where, {c, x, zero}, {}, im.output(0)));
    return okStatus();
  };
  m["PRelu"] = [](Importer& im) -> Status {
    SP_ASSIGN(std::string x, im.input(0));
    SP_ASSIGN(std::string slope, im.input(1));
    SP_ASSIGN(std::string sx, im.emit1(OpKind::Mul, {x, slope}, {}));
    SP_TRY(piecewise(im, x, sx, im.output(0)));
    return okStatus();
  };
  m["IsNaN"] = [](Importer& im) -> Status {
    SP_ASSIGN(std::string x, im.input(0));
    SP_TRY(im.emit1(OpKind::Ne, {x, x}, {}, im.output(0)));
    return okStatus();
  };
  // Tile: unsqueeze a repeat axis before each dim, expand it, merge.
  m["Tile"] = [](Importer& im) -> Status {
    SP_ASSIGN(std::string x, im.input(0));
    SP_ASSIGN(auto reps, im.constInts(1, "repeats"));
    ir::Shape s = im.val(x).type.shape;
    if (reps.size() != s.size())
      return im.err("onnx-bad-attr-input", "Tile: " + std::to_string(reps.size()) +
                                               " repeats for rank " + std::to_string(s.size()));
    std::vector<int64_t> axes;
    ir::Shape wide, out;
    for (size_t i = 0; i < s.size(); ++i) {
      axes.push_back(int64_t(2 * i));
      wide.push_back(Dim(reps[i]));
      wide.push_back(s[i]);
      out.push_back(Dim(reps[i]) * s[i]);
    }
    SP_ASSIGN(std::string u, im.emit1(OpKind::Unsqueeze, {x}, {{"axes", axes}}));
    SP_ASSIGN(std::string e, im.emit1(OpKind::Expand, {u}, {{"shape", wide}}));
    SP_TRY(im.emit1(OpKind::Reshape, {e}, {{"shape", out}}, im.output(0)));
    return okStatus();
  };
}

}  // namespace sp::frontend::onnx_detail
