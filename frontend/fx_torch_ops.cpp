// The one table of torch-level callables (Dynamo graphs) and their
// translation onto the ATen table (fx_ops.cpp). An entry lists the
// callables it covers (functions by qualified name, Tensor methods as
// `Tensor.<name>`, Python operators as `operator.<name>`), their Python
// signature, and the ATen call(s) they become:
//
//   params:  `name` required, `name=DEFAULT` optional, `*name` varargs (a
//            lone list/tuple argument is taken as the list, so `x.view(4, 8)`
//            and `x.view((4, 8))` agree; parameters after it are keyword
//            only), `*` keyword-only marker, `-name[=DEFAULT]` accepted and
//            ignored (device, layout, ...: no effect on values), `!name=DEFAULT`
//            accepted only at its default (anything else is rejected, never
//            dropped), `a/b` a keyword alias. A method's receiver is the
//            first parameter.
//   targets: alternatives `[COND, ...] aten.<op>.<overload>(ARGS)` separated
//            by ` | `, the first whose conditions hold is taken; ARGS are
//            parameter names or literals, `kw=ARG` passes a keyword argument;
//            COND is `p:tensor`, `p:number`, `p:int`, `p:list`, `p==LIT`,
//            `p!=LIT`. `@name` is a lowering of several ATen steps (fx_torch_lower.cpp).
//
// The ATen mappings read their operands by schema position or name and
// take the result type from the capture's declaration, so a translation only
// has to put the arguments in the ATen schema.
#include "frontend/fx_torch_ops.h"

#include <algorithm>
#include <cstdlib>
#include <functional>
#include <limits>
#include <map>
#include <set>

#include "frontend/fx_ops.h"

namespace sp::frontend::fx {

namespace {

// Whether a callable's result may share storage with its first argument
// (torch returns a view, or the input itself when nothing changes:
// `x.contiguous()`, `x.float()` of an f32 tensor). In-place mutation
// through aliases is checked with it (fx_mutation.h).
// ViewIfOne: a view of its tensor argument when it has exactly one (einsum
// of one operand without a sum returns it permuted), else fresh.
enum class Alias { Fresh, View, ViewIfOne };

struct TorchOp {
  const char* names;
  const char* params;
  const char* targets;
  Alias alias = Alias::Fresh;
};

constexpr Alias kView = Alias::View;
constexpr Alias kViewIfOne = Alias::ViewIfOne;

#define FACTORY_KW "-out=None, dtype=None, -layout=None, -device=None, -pin_memory=False, -requires_grad=False"
#define UNARY(n) {"torch." #n " Tensor." #n, "input", "aten." #n ".default(input)"}

const TorchOp kTorchOps[] = {
    // ---- layout ----
    {"Tensor.view", "input, *size", "[size:dtype] @unsupported | aten.view.default(input, size)", kView},
    {"torch.reshape Tensor.reshape", "input, *shape", "aten.reshape.default(input, shape)", kView},
    {"torch.permute Tensor.permute", "input, *dims", "aten.permute.default(input, dims)", kView},
    {"torch.transpose Tensor.transpose torch.swapaxes Tensor.swapaxes", "input, dim0, dim1",
     "aten.transpose.int(input, dim0, dim1)", kView},
    {"torch.t Tensor.t", "input", "aten.t.default(input)", kView},
    {"Tensor.expand", "input, *size", "aten.expand.default(input, size)", kView},
    {"Tensor.expand_as", "input, -other", "aten.expand.default(input)", kView},
    {"torch.unsqueeze Tensor.unsqueeze", "input, dim", "aten.unsqueeze.default(input, dim)", kView},
    {"torch.squeeze Tensor.squeeze", "input, dim=None",
     "[dim!=None] aten.squeeze.dim(input, dim) | aten.squeeze.default(input)", kView},
    {"torch.flatten Tensor.flatten", "input, start_dim=0, end_dim=-1",
     "aten.flatten.using_ints(input, start_dim, end_dim)", kView},
    {"torch.unflatten Tensor.unflatten", "input, dim, sizes", "aten.unflatten.int(input, dim, sizes)", kView},
    {"torch.cat torch.concat", "tensors, dim=0", "aten.cat.default(tensors, dim)"},
    {"torch.stack", "tensors, dim=0", "aten.stack.default(tensors, dim)"},
    {"torch.split torch.functional.split Tensor.split", "tensor, split_size_or_sections/split_size, dim=0",
     "[split_size_or_sections:list] aten.split_with_sizes.default(tensor, split_size_or_sections, dim) | "
     "aten.split.Tensor(tensor, split_size_or_sections, dim)", kView},
    {"torch.chunk Tensor.chunk", "input, chunks, dim=0", "aten.chunk.default(input, chunks, dim)", kView},
    {"torch.narrow Tensor.narrow", "input, dim, start, length", "aten.narrow.default(input, dim, start, length)", kView},
    {"torch.unbind Tensor.unbind", "input, dim=0", "aten.unbind.int(input, dim)", kView},
    {"torch.select Tensor.select", "input, dim, index", "aten.select.int(input, dim, index)", kView},
    {"torch.index_select Tensor.index_select", "input, dim, index", "aten.index_select.default(input, dim, index)"},
    {"torch.gather Tensor.gather", "input, dim, index, *, !sparse_grad=False", "aten.gather.default(input, dim, index)"},
    {"Tensor.repeat", "input, *repeats", "aten.repeat.default(input, repeats)"},
    {"torch.index_add Tensor.index_add", "input, dim, index, source, *, alpha=1",
     "aten.index_add.default(input, dim, index, source, alpha=alpha)"},
    {"torch.nn.functional.pad torch._C._nn.pad", "input, pad, mode='constant', value=None",
     "[mode=='constant'] aten.constant_pad_nd.default(input, pad, value)"},
    {"torch.nn.functional.one_hot torch._C._nn.one_hot", "tensor/input, num_classes=-1",
     "aten.one_hot.default(tensor, num_classes)"},
    {"torch.repeat_interleave Tensor.repeat_interleave", "input, repeats, dim=None, *, -output_size=None",
     "[repeats:int] aten.repeat_interleave.self_int(input, repeats, dim)"},
    {"operator.getitem", "input, index", "@index", kView},
    // `x[i] = v`: in place on x (mutatesFirst)
    {"operator.setitem", "input, index, value", "@setitem"},
    {"torch.nn.functional.embedding", "input, weight, -padding_idx=None, !max_norm=None, -norm_type=2.0, "
     "-scale_grad_by_freq=False, -sparse=False", "aten.embedding.default(weight, input)"},
    // ---- copies and dtype conversions (the declared type says the dtype) ----
    {"Tensor.contiguous Tensor.detach torch.detach operator.pos", "input, -memory_format=None",
     "aten.clone.default(input)", kView},
    {"torch.clone Tensor.clone", "input, -memory_format=None", "aten.clone.default(input)"},
    {"Tensor.float Tensor.half Tensor.bfloat16 Tensor.double Tensor.long Tensor.int Tensor.bool",
     "input, -memory_format=None", "aten._to_copy.default(input)", kView},
    {"Tensor.to", "input, -a=None, -b=None, -c=None, *, -dtype=None, -device=None, -non_blocking=False, -copy=False, "
     "-memory_format=None", "aten._to_copy.default(input)", kView},
    {"Tensor.type_as", "input, -other", "aten._to_copy.default(input)", kView},
    // in place by name (`_`); other in-place forms derive from their
    // out-of-place entry (inPlaceBase below)
    {"Tensor.copy_", "input, src, -non_blocking=False", "aten.copy.default(input, src)"},
    {"Tensor.zero_ torch.zero_", "input", "aten.zeros_like.default(input)"},
    {"Tensor.fill_ torch.fill_ torch.fill", "input, value", "[value:number] aten.fill.Scalar(input, value)"},
    // x.type() without a dtype is the type's name, a string
    {"Tensor.type", "input, dtype=None, -non_blocking=False", "[dtype!=None] aten._to_copy.default(input)", kView},
    // ---- elementwise ----
    {"operator.add torch.add Tensor.add", "input, other, *, alpha=1", "aten.add.Tensor(input, other, alpha)"},
    {"operator.sub torch.sub Tensor.sub torch.subtract", "input, other, *, alpha=1",
     "aten.sub.Tensor(input, other, alpha)"},
    {"torch.rsub Tensor.rsub", "input, other, *, alpha=1", "aten.rsub.Tensor(input, other, alpha)"},
    {"operator.mul torch.mul Tensor.mul torch.multiply", "input, other", "aten.mul.Tensor(input, other)"},
    {"operator.truediv torch.div Tensor.div torch.divide torch.true_divide", "input, other, *, rounding_mode=None",
     "[rounding_mode!=None] aten.div.Tensor_mode(input, other, rounding_mode=rounding_mode) | "
     "aten.div.Tensor(input, other)"},
    {"operator.floordiv torch.floor_divide", "input, other",
     "aten.div.Tensor_mode(input, other, rounding_mode='floor')"},
    {"operator.pow torch.pow Tensor.pow", "input, exponent",
     "[input:number] aten.pow.Scalar(input, exponent) | [exponent:tensor] aten.pow.Tensor_Tensor(input, exponent) | "
     "aten.pow.Tensor_Scalar(input, exponent)"},
    {"operator.neg torch.neg Tensor.neg torch.negative", "input", "aten.neg.default(input)"},
    UNARY(exp), UNARY(log), UNARY(sqrt), UNARY(rsqrt), UNARY(reciprocal), UNARY(sin), UNARY(cos),
    UNARY(abs), UNARY(floor), UNARY(ceil), UNARY(sign), UNARY(log1p),
    {"torch.erf Tensor.erf torch.special.erf", "input", "aten.erf.default(input)"},
    {"torch.sigmoid Tensor.sigmoid torch.nn.functional.sigmoid", "input", "aten.sigmoid.default(input)"},
    {"torch.tanh Tensor.tanh torch.nn.functional.tanh", "input", "aten.tanh.default(input)"},
    {"torch.nn.functional.silu", "input, !inplace=False", "aten.silu.default(input)"},
    {"torch.relu Tensor.relu torch.nn.functional.relu", "input, !inplace=False", "aten.relu.default(input)"},
    {"torch.nn.functional.gelu torch._C._nn.gelu", "input, approximate='none'",
     "aten.gelu.default(input, approximate=approximate)"},
    {"torch.clamp Tensor.clamp torch.clip Tensor.clip", "input, min=None, max=None",
     "aten.clamp.default(input, min, max)"},
    {"torch.clamp_min Tensor.clamp_min", "input, min", "aten.clamp_min.default(input, min)"},
    {"torch.clamp_max Tensor.clamp_max", "input, max", "aten.clamp_max.default(input, max)"},
    {"torch.maximum Tensor.maximum", "input, other", "aten.maximum.default(input, other)"},
    {"torch.minimum Tensor.minimum", "input, other", "aten.minimum.default(input, other)"},
    {"torch.triu Tensor.triu", "input, diagonal=0", "aten.triu.default(input, diagonal)"},
    {"torch.tril Tensor.tril", "input, diagonal=0", "aten.tril.default(input, diagonal)"},
    {"operator.lt torch.lt Tensor.lt", "input, other", "aten.lt.Tensor(input, other)"},
    {"operator.le torch.le Tensor.le", "input, other", "aten.le.Tensor(input, other)"},
    {"operator.gt torch.gt Tensor.gt", "input, other", "aten.gt.Tensor(input, other)"},
    {"operator.ge torch.ge Tensor.ge", "input, other", "aten.ge.Tensor(input, other)"},
    {"operator.eq torch.eq Tensor.eq", "input, other", "aten.eq.Tensor(input, other)"},
    {"operator.ne torch.ne Tensor.ne", "input, other", "aten.ne.Tensor(input, other)"},
    {"torch.logical_and Tensor.logical_and", "input, other", "aten.logical_and.default(input, other)"},
    {"torch.logical_or Tensor.logical_or", "input, other", "aten.logical_or.default(input, other)"},
    {"torch.logical_not Tensor.logical_not", "input", "aten.logical_not.default(input)"},
    {"torch.logical_xor Tensor.logical_xor", "input, other", "aten.logical_xor.default(input, other)"},
    {"operator.and_ torch.bitwise_and Tensor.bitwise_and", "input, other", "aten.bitwise_and.Tensor(input, other)"},
    {"operator.or_ torch.bitwise_or Tensor.bitwise_or", "input, other", "aten.bitwise_or.Tensor(input, other)"},
    {"operator.xor torch.bitwise_xor Tensor.bitwise_xor", "input, other", "aten.bitwise_xor.Tensor(input, other)"},
    {"operator.invert torch.bitwise_not Tensor.bitwise_not", "input", "aten.bitwise_not.default(input)"},
    // torch.where(condition) alone is nonzero: its size depends on values
    {"torch.where", "condition, input=None, other=None",
     "[input==None] @data_dependent | aten.where.self(condition, input, other)"},
    {"torch.nonzero Tensor.nonzero torch.argwhere Tensor.argwhere torch.masked_select Tensor.masked_select "
     "torch.unique Tensor.unique", "input, *args", "@data_dependent"},
    {"torch.masked_fill Tensor.masked_fill", "input, mask, value",
     "[value:tensor] aten.masked_fill.Tensor(input, mask, value) | aten.masked_fill.Scalar(input, mask, value)"},
    // ---- reductions and softmax ----
    {"torch.sum Tensor.sum", "input, dim=None, keepdim=False, *, dtype=None",
     "[dim!=None] aten.sum.dim_IntList(input, dim, keepdim, dtype=dtype) | "
     "[keepdim==True] aten.sum.dim_IntList(input, [], keepdim, dtype=dtype) | aten.sum.default(input, dtype=dtype)"},
    {"torch.mean Tensor.mean", "input, dim=None, keepdim=False, *, dtype=None",
     "[dim!=None] aten.mean.dim(input, dim, keepdim, dtype=dtype) | "
     "[keepdim==True] aten.mean.dim(input, [], keepdim, dtype=dtype) | aten.mean.default(input, dtype=dtype)"},
    {"torch.amax Tensor.amax", "input, dim=[], keepdim=False", "aten.amax.default(input, dim, keepdim)"},
    {"torch.amin Tensor.amin", "input, dim=[], keepdim=False", "aten.amin.default(input, dim, keepdim)"},
    {"torch.max Tensor.max", "input, dim/other=None, keepdim=False",
     "[dim:tensor] aten.maximum.default(input, dim) | [dim!=None] aten.max.dim(input, dim, keepdim) | "
     "aten.max.default(input)"},
    {"torch.min Tensor.min", "input, dim/other=None, keepdim=False",
     "[dim:tensor] aten.minimum.default(input, dim) | [dim!=None] aten.min.dim(input, dim, keepdim) | "
     "aten.min.default(input)"},
    {"torch.argmax Tensor.argmax", "input, dim=None, keepdim=False", "aten.argmax.default(input, dim, keepdim)"},
    {"torch.topk Tensor.topk", "input, k, dim=-1, largest=True, sorted=True",
     "aten.topk.default(input, k, dim, largest, sorted)"},
    {"torch.cumsum Tensor.cumsum", "input, dim, *, dtype=None", "aten.cumsum.default(input, dim, dtype=dtype)"},
    {"torch.softmax Tensor.softmax", "input, dim, dtype=None",
     "aten.softmax.int(input, dim, dtype)"},
    {"torch.nn.functional.softmax", "input, dim, -_stacklevel=3, dtype=None", "aten.softmax.int(input, dim, dtype)"},
    {"torch.log_softmax Tensor.log_softmax", "input, dim, dtype=None", "aten.log_softmax.int(input, dim, dtype)"},
    {"torch.nn.functional.log_softmax", "input, dim, -_stacklevel=3, dtype=None",
     "aten.log_softmax.int(input, dim, dtype)"},
    // ---- linear algebra, normalization, attention, randomness, losses ----
    {"torch.matmul operator.matmul Tensor.matmul", "input, other", "aten.matmul.default(input, other)"},
    {"torch.mm Tensor.mm", "input, mat2", "aten.mm.default(input, mat2)"},
    {"torch.bmm Tensor.bmm", "input, mat2", "aten.bmm.default(input, mat2)"},
    {"torch.addmm Tensor.addmm", "input, mat1, mat2, *, beta=1, alpha=1",
     "aten.addmm.default(input, mat1, mat2, beta=beta, alpha=alpha)"},
    {"torch.baddbmm Tensor.baddbmm", "input, batch1, batch2, *, beta=1, alpha=1",
     "aten.baddbmm.default(input, batch1, batch2, beta=beta, alpha=alpha)"},
    {"torch.einsum torch.functional.einsum", "equation, *operands", "aten.einsum.default(equation, operands)",
     kViewIfOne},
    {"torch._C._nn.linear torch.nn.functional.linear", "input, weight, bias=None",
     "aten.linear.default(input, weight, bias)"},
    {"torch._C._nn.scaled_dot_product_attention torch.nn.functional.scaled_dot_product_attention",
     "query, key, value, attn_mask=None, dropout_p=0.0, is_causal=False, *, scale=None, enable_gqa=False",
     "aten.scaled_dot_product_attention.default(query, key, value, attn_mask, dropout_p, is_causal, scale=scale, "
     "enable_gqa=enable_gqa)"},
    {"torch.nn.functional.layer_norm torch.layer_norm", "input, normalized_shape, weight=None, bias=None, eps=1e-05, "
     "-cudnn_enable=True", "aten.layer_norm.default(input, normalized_shape, weight, bias, eps)"},
    {"torch.nn.functional.rms_norm torch.rms_norm", "input, normalized_shape, weight=None, eps=None",
     "aten.rms_norm.default(input, normalized_shape, weight, eps)"},
    {"torch.nn.functional.dropout", "input, p=0.5, training=True, !inplace=False",
     "[training==False] aten.clone.default(input) | [p==0] aten.clone.default(input) | "
     "aten.dropout.default(input, p, training)", kView},
    {"torch.dropout", "input, p, train", "aten.dropout.default(input, p, train)", kView},
    {"torch.nn.functional.cross_entropy", "input, target, weight=None, !size_average=None, ignore_index=-100, "
     "!reduce=None, reduction='mean', !label_smoothing=0.0", "@cross_entropy"},
    {"torch.nn.functional.nll_loss", "input, target, weight=None, !size_average=None, ignore_index=-100, "
     "!reduce=None, reduction='mean'", "@nll_loss"},
    // ---- factories ----
    {"torch.zeros", "*size, " FACTORY_KW, "aten.zeros.default(size, dtype=dtype)"},
    {"torch.ones", "*size, " FACTORY_KW, "aten.ones.default(size, dtype=dtype)"},
    {"torch.empty", "*size, " FACTORY_KW ", -memory_format=None", "aten.empty.memory_format(size, dtype=dtype)"},
    {"torch.full", "size, fill_value, *, " FACTORY_KW, "aten.full.default(size, fill_value, dtype=dtype)"},
    {"torch.zeros_like", "input, *, " FACTORY_KW ", -memory_format=None", "aten.zeros_like.default(input)"},
    {"torch.ones_like", "input, *, " FACTORY_KW ", -memory_format=None", "aten.ones_like.default(input)"},
    {"torch.full_like", "input, fill_value, *, " FACTORY_KW ", -memory_format=None",
     "aten.full_like.default(input, fill_value)"},
    {"Tensor.new_zeros", "input, *size, " FACTORY_KW, "aten.new_zeros.default(input, size)"},
    {"Tensor.new_ones", "input, *size, " FACTORY_KW, "aten.new_ones.default(input, size)"},
    {"Tensor.new_full", "input, size, fill_value, *, " FACTORY_KW, "aten.new_full.default(input, size, fill_value)"},
    {"torch.arange", "start, end=None, step=None, *, " FACTORY_KW,
     "[end==None] aten.arange.default(start) | [step==None] aten.arange.start(start, end) | "
     "aten.arange.start_step(start, end, step)"},
};

#undef UNARY
#undef FACTORY_KW

// ---------------------------------------------------------------- the parsed table

struct Param {
  std::vector<std::string> names;  // the name, then keyword aliases
  enum class Mode { Required, Optional, Fixed, Ignored, VarArgs } mode = Mode::Required;
  Expr dflt;  // None unless given
  bool kwOnly = false;
};

struct Cond {
  std::string param, test;  // test: tensor number int list dtype == !=
  Expr lit;
};

struct TArg {
  std::string kw;     // empty: positional
  std::string param;  // empty: the literal
  Expr lit;
};

struct Target {
  std::vector<Cond> conds;
  std::string op;  // "aten.view.default" or "@hook"
  std::vector<TArg> args;
};

struct Entry {
  std::vector<std::string> names;
  std::vector<Param> params;
  std::vector<Target> targets;
  Alias alias = Alias::Fresh;
};

std::string trim(std::string s) {
  size_t a = s.find_first_not_of(' ');
  size_t b = s.find_last_not_of(' ');
  return a == std::string::npos ? "" : s.substr(a, b - a + 1);
}

std::vector<std::string> splitOn(const std::string& s, const std::string& sep) {
  std::vector<std::string> out;
  size_t at = 0;
  while (true) {
    size_t n = s.find(sep, at);
    out.push_back(trim(s.substr(at, n == std::string::npos ? std::string::npos : n - at)));
    if (n == std::string::npos) return out;
    at = n + sep.size();
  }
}

// A table literal: None, True, False, ints, floats, 'strings', [], torch.<dtype>.
Expr literal(const std::string& t) {
  Expr e;
  if (t == "None") return e;
  if (t == "True" || t == "False") {
    e.kind = Expr::Kind::Bool;
    e.b = t == "True";
  } else if (t.size() >= 2 && t.front() == '\'' && t.back() == '\'') {
    e.kind = Expr::Kind::Str;
    e.s = t.substr(1, t.size() - 2);
  } else if (t == "[]") {
    e.kind = Expr::Kind::List;
  } else if (t.rfind("torch.", 0) == 0) {
    e.kind = Expr::Kind::Dotted;
    e.s = t;
  } else {
    char* end = nullptr;
    bool isFloat = t.find_first_of(".e") != std::string::npos;
    if (isFloat) {
      e.kind = Expr::Kind::Float;
      e.f = std::strtod(t.c_str(), &end);
    } else {
      e.kind = Expr::Kind::Int;
      e.i = std::strtoll(t.c_str(), &end, 10);
    }
    SP_ASSERT(!t.empty() && end == t.c_str() + t.size(), "torch-level table: bad literal '" + t + "'");
  }
  return e;
}

Entry parseEntry(const TorchOp& op) {
  Entry en;
  en.alias = op.alias;
  for (const auto& n : splitOn(op.names, " "))
    if (!n.empty()) en.names.push_back(n);
  bool kwOnly = false;
  for (std::string p : splitOn(op.params, ",")) {
    if (p == "*") {
      kwOnly = true;
      continue;
    }
    Param q;
    q.kwOnly = kwOnly;
    if (p[0] == '*') {
      q.mode = Param::Mode::VarArgs;
      p = p.substr(1);
      kwOnly = true;
    } else if (p[0] == '-') {
      q.mode = Param::Mode::Ignored;
      p = p.substr(1);
    } else if (p[0] == '!') {
      q.mode = Param::Mode::Fixed;
      p = p.substr(1);
    }
    size_t eq = p.find('=');
    SP_ASSERT(q.mode != Param::Mode::Fixed || eq != std::string::npos,
              "torch-level table: fixed parameter '" + p + "' without a default");
    if (eq != std::string::npos) {
      if (q.mode == Param::Mode::Required) q.mode = Param::Mode::Optional;
      q.dflt = literal(trim(p.substr(eq + 1)));
      p = trim(p.substr(0, eq));
    }
    q.names = splitOn(p, "/");
    en.params.push_back(std::move(q));
  }
  auto isParam = [&](const std::string& n) {
    return std::any_of(en.params.begin(), en.params.end(), [&](const Param& q) { return q.names[0] == n; });
  };
  for (std::string alt : splitOn(op.targets, " | ")) {
    Target t;
    if (alt[0] == '[') {
      size_t close = alt.find(']');
      for (const auto& c : splitOn(alt.substr(1, close - 1), ",")) {
        Cond k;
        size_t at;
        if ((at = c.find("==")) != std::string::npos || (at = c.find("!=")) != std::string::npos) {
          k.param = trim(c.substr(0, at));
          k.test = c.substr(at, 2);
          k.lit = literal(trim(c.substr(at + 2)));
        } else {
          at = c.find(':');
          SP_ASSERT(at != std::string::npos, "torch-level table: bad condition '" + c + "'");
          k.param = c.substr(0, at);
          k.test = c.substr(at + 1);
        }
        SP_ASSERT(isParam(k.param), "torch-level table: condition on unknown parameter '" + k.param + "'");
        t.conds.push_back(std::move(k));
      }
      alt = trim(alt.substr(close + 1));
    }
    size_t open = alt.find('(');
    t.op = alt.substr(0, open);
    if (open != std::string::npos) {
      SP_ASSERT(alt.back() == ')', "torch-level table: bad target '" + alt + "'");
      std::string inner = alt.substr(open + 1, alt.size() - open - 2);
      for (const auto& a : splitOn(inner, ",")) {
        if (a.empty()) continue;
        TArg x;
        std::string v = a;
        if (size_t eq = a.find('='); eq != std::string::npos) {
          x.kw = trim(a.substr(0, eq));
          v = trim(a.substr(eq + 1));
        }
        if (isParam(v)) x.param = v;
        else x.lit = literal(v);
        t.args.push_back(std::move(x));
      }
    }
    en.targets.push_back(std::move(t));
  }
  return en;
}

const std::vector<Entry>& entries() {
  static const std::vector<Entry> kEntries = [] {
    std::vector<Entry> out;
    for (const auto& op : kTorchOps) out.push_back(parseEntry(op));
    return out;
  }();
  return kEntries;
}

const Entry* findEntry(const std::string& name) {
  static const std::map<std::string, const Entry*> kByName = [] {
    std::map<std::string, const Entry*> m;
    for (const auto& en : entries())
      for (const auto& n : en.names) {
        SP_ASSERT(!m.count(n), "torch-level table: '" + n + "' has two entries");
        m[n] = &en;
      }
    return m;
  }();
  auto it = kByName.find(name);
  return it == kByName.end() ? nullptr : it->second;
}

// ---------------------------------------------------------------- binding

using Bound = std::map<std::string, Expr>;

bool same(const Expr& a, const Expr& b) {
  if (a.isNumber() && b.isNumber()) return a.number() == b.number();
  if (a.kind != b.kind) return false;
  switch (a.kind) {
    case Expr::Kind::None: return true;
    case Expr::Kind::Str: case Expr::Kind::Name: case Expr::Kind::Dotted: return a.s == b.s;
    case Expr::Kind::List: case Expr::Kind::Tuple:
      if (a.items.size() != b.items.size()) return false;
      for (size_t k = 0; k < a.items.size(); ++k)
        if (!same(a.items[k], b.items[k])) return false;
      return true;
    default: return false;
  }
}

Result<Bound> bindArgs(Emitter& e, const Entry& en, const std::vector<Expr>& pos, const std::vector<Kwarg>& kws) {
  Bound b;
  size_t next = 0;
  for (const auto& p : en.params) {
    if (p.mode == Param::Mode::VarArgs) {
      if (pos.size() - next == 1 && (pos[next].kind == Expr::Kind::List || pos[next].kind == Expr::Kind::Tuple)) {
        b[p.names[0]] = pos[next++];
      } else if (next < pos.size()) {
        Expr list;
        list.kind = Expr::Kind::List;
        list.items.assign(pos.begin() + long(next), pos.end());
        b[p.names[0]] = std::move(list);
        next = pos.size();
      }
      continue;
    }
    if (!p.kwOnly && next < pos.size()) b[p.names[0]] = pos[next++];
  }
  if (next < pos.size())
    return e.error("fx-arg", "takes at most " + std::to_string(next) + " positional arguments, got " +
                                 std::to_string(pos.size()));
  for (const auto& [k, v] : kws) {
    const Param* hit = nullptr;
    for (const auto& p : en.params)
      if (std::find(p.names.begin(), p.names.end(), k) != p.names.end()) hit = &p;
    if (!hit) return e.error("fx-arg", "unexpected keyword argument '" + k + "' (= " + v.str() + ")");
    if (b.count(hit->names[0])) return e.error("fx-arg", "argument '" + k + "' given twice");
    b[hit->names[0]] = v;
  }
  for (const auto& p : en.params) {
    const std::string& n = p.names[0];
    if (!b.count(n)) {
      if (p.mode == Param::Mode::Required) return e.error("fx-arg", "missing argument '" + n + "'");
      b[n] = p.dflt;
    }
    if (p.mode == Param::Mode::Fixed && !same(b[n], p.dflt))
      return e.error("fx-unsupported", "argument " + n + " = " + b[n].str() + " is not supported (only " +
                                           p.dflt.str() + ")");
  }
  return b;
}

bool holds(const Emitter& e, const Cond& c, const Bound& b) {
  const Expr& v = b.at(c.param);
  if (c.test == "==") return same(v, c.lit);
  if (c.test == "!=") return !same(v, c.lit);
  if (c.test == "tensor") return isTensorValue(e, v);
  if (c.test == "number") return v.isNumber();
  if (c.test == "int") return v.kind == Expr::Kind::Int;
  if (c.test == "list") return v.kind == Expr::Kind::List || v.kind == Expr::Kind::Tuple;
  if (c.test == "dtype")
    return v.items.size() == 1 && v.kind == Expr::Kind::List && v.items[0].kind == Expr::Kind::Dotted &&
           dtypeFromTorchName(v.items[0].s).has_value();
  SP_ASSERT(false, "torch-level table: unknown condition '" + c.test + "'");
  return false;
}

}  // namespace

namespace {

// The table key of a call (`Tensor.<m>` for a method of a value, whose
// receiver becomes the first argument), its description for messages and
// its positional arguments.
struct Keyed {
  std::string key, what;
  std::vector<Expr> pos;
  std::vector<Kwarg> kwargs;
};

Keyed keyOf(const Emitter& e, const Expr& call) {
  Keyed k{call.s, "torch-level call " + call.s, call.items, call.kwargs};
  // `x.view(...)`: a method of the value x, its receiver the first argument.
  if (size_t dot = call.s.find('.'); dot != std::string::npos) {
    std::string recv = call.s.substr(0, dot);
    if (e.env.count(recv) || e.attrs.count(recv) || e.syms.count(recv)) {
      k.key = "Tensor." + call.s.substr(dot + 1);
      k.what = "Tensor method '" + call.s.substr(dot + 1) + "' (" + call.s + "(...))";
      Expr r;
      r.kind = Expr::Kind::Name;
      r.s = recv;
      k.pos.insert(k.pos.begin(), std::move(r));
    }
  }
  return k;
}

// Whether a callable mutates its first argument: Python's in-place
// operators (`operator.iadd`, what `x += y` calls), subscript assignment
// (`operator.setitem`) and torch's trailing underscore (`Tensor.add_`,
// `torch.relu_`; not dunders, nor Python's `operator.and_`).
bool mutatesFirst(const std::string& key) {
  static const std::map<std::string, std::string> kOps = inPlaceOperators();
  if (kOps.count(key) || key == "operator.setitem") return true;
  if (key.rfind("operator.", 0) == 0) return false;  // `operator.and_` is `&`
  std::string last = key.substr(key.rfind('.') + 1);
  return last.size() > 1 && last.back() == '_' && last[last.size() - 2] != '_' && last[0] != '_';
}

// The entry of an in-place callable without its own: the out-of-place one
// (`Tensor.add_` -> `Tensor.add`, then `torch.add`; `operator.iadd` ->
// `operator.add`).
const Entry* inPlaceBase(const std::string& key) {
  static const std::map<std::string, std::string> kOps = inPlaceOperators();
  if (auto it = kOps.find(key); it != kOps.end()) return findEntry(it->second);
  if (!mutatesFirst(key)) return nullptr;
  std::string base = key.substr(0, key.size() - 1);
  if (const Entry* en = findEntry(base)) return en;
  if (base.rfind("Tensor.", 0) == 0) return findEntry("torch." + base.substr(7));
  return nullptr;
}

// `F.relu(x, inplace = True)`: an entry's `inplace` parameter passed True
// (by keyword or position) makes the call in place on its first argument;
// the index of that argument in the call, or -1 for the keyword, if so.
std::optional<int> inplaceFlag(const Entry& en, const Keyed& k) {
  auto isTrue = [](const Expr& v) { return v.kind == Expr::Kind::Bool && v.b; };
  for (size_t i = 0; i < en.params.size(); ++i) {
    if (en.params[i].names[0] != "inplace") continue;
    for (size_t j = 0; j < k.kwargs.size(); ++j)
      if (k.kwargs[j].first == "inplace" && isTrue(k.kwargs[j].second)) return -1 - int(j);
    if (!en.params[i].kwOnly && i < k.pos.size() && isTrue(k.pos[i])) return int(i);
  }
  return std::nullopt;
}

}  // namespace

std::map<std::string, std::string> inPlaceOperators() {
  return {{"operator.iadd", "operator.add"},       {"operator.isub", "operator.sub"},
          {"operator.imul", "operator.mul"},       {"operator.itruediv", "operator.truediv"},
          {"operator.ifloordiv", "operator.floordiv"}, {"operator.ipow", "operator.pow"},
          {"operator.iand", "operator.and_"},      {"operator.ior", "operator.or_"},
          {"operator.ixor", "operator.xor"}};
}

namespace {

const char* const kAtenViews[] = {"view", "_unsafe_view", "reshape", "_reshape_alias", "t", "transpose", "permute",
                                  "expand", "unsqueeze", "squeeze", "unbind", "split", "split_with_sizes", "chunk",
                                  "narrow", "flatten", "unflatten", "slice", "select", "detach", "alias",
                                  "contiguous", "to", "type_as", "as_strided", "diagonal", "unfold", "view_as",
                                  "expand_as", "wait_tensor", "lift_fresh", "real", "imag"};

}  // namespace

TorchCallInfo torchCallInfo(const Emitter& e, const Expr& call) {
  TorchCallInfo info;
  if (call.kind != Expr::Kind::Call) return info;
  auto firstName = [](const std::vector<Expr>& pos) -> std::optional<std::string> {
    if (pos.empty() || pos[0].kind != Expr::Kind::Name) return std::nullopt;
    return pos[0].s;
  };
  if (!isTorchLevelCall(call)) {
    // an ATen call in a torch-level graph: the views of the ATen table
    std::string op = call.s.substr(10);
    std::string base = op.substr(op.find('.') + 1);
    base = base.substr(0, base.find('.'));
    for (const char* v : kAtenViews)
      if (base == v) info.viewOf = firstName(call.items);
    return info;
  }
  Keyed k = keyOf(e, call);
  const Entry* en = findEntry(k.key);
  // an in-place call no entry translates is reported as unsupported
  if (mutatesFirst(k.key) && (en || inPlaceBase(k.key))) {
    info.mutates = true;
    info.viewOf = firstName(k.pos);
    info.inPlaceView = (en ? en : inPlaceBase(k.key))->alias == Alias::View;
    return info;
  }
  if (en && inplaceFlag(*en, k)) {
    info.mutates = true;
    info.viewOf = firstName(k.pos);
    return info;
  }
  // the tensor arguments, in order (einsum's after the equation, maybe in a list)
  std::vector<std::string> tensors;
  std::function<void(const std::vector<Expr>&)> collect = [&](const std::vector<Expr>& xs) {
    for (const auto& x : xs) {
      if (isTensorValue(e, x)) tensors.push_back(x.s);
      else if (x.kind == Expr::Kind::List || x.kind == Expr::Kind::Tuple) collect(x.items);
    }
  };
  collect(k.pos);
  if (en && en->alias == Alias::View) info.viewOf = firstName(k.pos);
  if (en && en->alias == Alias::ViewIfOne && tensors.size() == 1) info.viewOf = tensors[0];
  return info;
}

std::optional<ir::DType> inPlaceComputeType(Emitter& e, const Expr& call) {
  if (!isTorchLevelCall(call)) return std::nullopt;
  Keyed k = keyOf(e, call);
  const Entry* en = findEntry(k.key);
  if (!en) en = inPlaceBase(k.key);
  if (!en || en->params.empty()) return std::nullopt;
  auto b = bindArgs(e, *en, k.pos, k.kwargs);
  if (!b.ok()) return std::nullopt;  // the translation reports it
  const Target* t = nullptr;
  for (const auto& x : en->targets) {
    bool ok = true;
    for (const auto& c : x.conds) ok = ok && holds(e, c, *b);
    if (ok) {
      t = &x;
      break;
    }
  }
  if (!t) return std::nullopt;
  auto operand = [&](const std::string& param) -> std::optional<Emitter::Operand> {
    const Expr& v = b->at(param);
    Emitter::Operand o;
    if (v.kind == Expr::Kind::Name && e.env.count(v.s)) {
      o.t = e.env.at(v.s);
    } else if (v.isNumber()) {
      o.value = v.number();
      o.isInt = v.kind == Expr::Kind::Int;
      o.isBool = v.kind == Expr::Kind::Bool;
    } else {
      return std::nullopt;
    }
    return o;
  };
  static const std::set<std::string> kBinary = {
      "aten.add.Tensor",      "aten.sub.Tensor",         "aten.mul.Tensor",         "aten.div.Tensor",
      "aten.div.Tensor_mode", "aten.pow.Tensor_Tensor", "aten.pow.Tensor_Scalar"};
  static const std::set<std::string> kUnaryFloat = {
      "aten.exp.default",  "aten.log.default", "aten.sqrt.default",    "aten.rsqrt.default", "aten.reciprocal.default",
      "aten.sin.default",  "aten.cos.default", "aten.erf.default",     "aten.sigmoid.default", "aten.tanh.default",
      "aten.log1p.default"};
  const std::string& self = en->params[0].names[0];
  if (t->op == "aten.clamp.default" || t->op == "aten.clamp_min.default" || t->op == "aten.clamp_max.default") {
    // number bounds take part in the promotion (an integer tensor clamped
    // to 0.5 computes in f32)
    auto a = operand(self);
    if (!a || !a->t) return std::nullopt;
    std::vector<Emitter::Operand> ops{*a};
    for (size_t k = 1; k < en->params.size(); ++k) {
      const Expr& v = b->at(en->params[k].names[0]);
      if (v.kind == Expr::Kind::None) continue;
      auto o = operand(en->params[k].names[0]);
      if (!o) return std::nullopt;
      ops.push_back(*o);
    }
    return resultType(ops);
  }
  if (kBinary.count(t->op) && en->params.size() > 1) {
    auto a = operand(self), c = operand(en->params[1].names[0]);
    if (!a || !c || !a->t) return std::nullopt;
    ir::DType rt = resultType({*a, *c});
    if (t->op == "aten.div.Tensor" && !ir::isFloat(rt)) rt = ir::DType::F32;
    return rt;
  }
  if (kUnaryFloat.count(t->op)) {
    auto a = operand(self);
    if (!a || !a->t) return std::nullopt;
    return ir::isFloat(a->t->dtype()) ? a->t->dtype() : ir::DType::F32;
  }
  // comparisons and logical ops compute a bool, which an in-place one
  // writes into x's dtype as 1 and 0 (`x.lt_(y)`, `x.logical_not_()`)
  static const std::set<std::string> kBool = {
      "aten.lt.Tensor", "aten.le.Tensor", "aten.gt.Tensor", "aten.ge.Tensor", "aten.eq.Tensor", "aten.ne.Tensor",
      "aten.logical_and.default", "aten.logical_or.default", "aten.logical_xor.default",
      "aten.logical_not.default"};
  if (kBool.count(t->op)) return ir::DType::Bool;
  return std::nullopt;
}

bool isTorchLevelCall(const Expr& call) {
  return call.kind == Expr::Kind::Call && call.s.rfind("torch.ops.", 0) != 0;
}

Result<std::vector<AtenStep>> translateTorchCall(Emitter& e, const Expr& call, const std::string& target) {
  Keyed k = keyOf(e, call);
  const std::string& key = k.key;
  const std::string& what = k.what;
  std::vector<Expr>& pos = k.pos;
  e.op = key;
  e.nodeName = target;
  const Entry* en = findEntry(key);
  if (!en) en = inPlaceBase(key);
  if (!en)
    return makeError("fx-unsupported-op",
                     "unsupported " + what + " (node '" + target +
                         "'): no entry of the torch-level table translates it to ATen ops (docs/fx-import.md, "
                         "\"Dynamo torch-level graphs\")",
                     e.captureLoc);
  // `inplace = True`: the importer gives the in-place meaning
  // (torchCallInfo); the value is the call's without it
  std::vector<Kwarg>& kwargs = k.kwargs;
  if (auto at = inplaceFlag(*en, k)) {
    if (*at >= 0) pos.erase(pos.begin() + *at);
    else kwargs.erase(kwargs.begin() + (-1 - *at));
  }
  SP_ASSIGN(Bound b, bindArgs(e, *en, pos, kwargs));
  for (const auto& t : en->targets) {
    bool ok = true;
    for (const auto& c : t.conds) ok = ok && holds(e, c, b);
    if (!ok) continue;
    if (t.op == "@index") return lowerTensorIndex(e, b.at("input"), b.at("index"), target, call);
    if (t.op == "@setitem") return lowerSetItem(e, b.at("input"), b.at("index"), b.at("value"), target, call);
    if (t.op == "@cross_entropy" || t.op == "@nll_loss")
      return lowerNllLoss(e, {b.at("input"), b.at("target"), b.at("weight"), b.at("ignore_index"), b.at("reduction")},
                          t.op == "@cross_entropy", target, call);
    if (t.op == "@unsupported") break;
    if (t.op == "@data_dependent")
      return makeError("fx-data-dependent",
                       what + " (node '" + target + "') returns a tensor whose size depends on tensor values "
                           "(how many elements are nonzero, selected or distinct), not on input shapes, so S and D "
                           "cannot be related; a model with a static size there is needed",
                       e.captureLoc);
    std::vector<Expr> items;
    std::vector<Kwarg> kws;
    for (const auto& a : t.args) {
      Expr v = a.param.empty() ? a.lit : b.at(a.param);
      if (a.kw.empty()) items.push_back(std::move(v));
      else kws.emplace_back(a.kw, std::move(v));
    }
    AtenStep st;
    st.op = t.op;
    st.call = atenCallExpr(t.op, std::move(items), std::move(kws), call);
    return std::vector<AtenStep>{std::move(st)};
  }
  std::string args;
  for (const auto& [n, v] : b) args += (args.empty() ? "" : ", ") + n + " = " + v.str();
  return makeError("fx-unsupported-op",
                   "unsupported " + what + " (node '" + target + "') with these arguments (" + args +
                       "): no form of its torch-level table entry takes them",
                   e.captureLoc);
}

std::vector<TorchEntry> torchLevelEntries() {
  std::vector<TorchEntry> out;
  for (const auto& en : entries()) {
    TorchEntry t{en.names, {}};
    for (const auto& x : en.targets)
      if (x.op != "@unsupported" && std::find(t.aten.begin(), t.aten.end(), x.op) == t.aten.end())
        t.aten.push_back(x.op);
    out.push_back(std::move(t));
  }
  return out;
}

}  // namespace sp::frontend::fx
