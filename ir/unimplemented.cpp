// TEMPORARY during bring-up: definitions not yet written. Each entry is
// deleted when its real definition lands; the file goes away when empty.
#include "ir/op.h"

namespace sp::ir {

Result<std::vector<TensorType>> inferUnary(const InferCtx& c) { return makeError("unimplemented", std::string(opName(c.op)) + ": shape function not written yet"); }
Result<std::vector<TensorType>> inferCast(const InferCtx& c) { return makeError("unimplemented", std::string(opName(c.op)) + ": shape function not written yet"); }
Result<std::vector<TensorType>> inferBinary(const InferCtx& c) { return makeError("unimplemented", std::string(opName(c.op)) + ": shape function not written yet"); }
Result<std::vector<TensorType>> inferCompare(const InferCtx& c) { return makeError("unimplemented", std::string(opName(c.op)) + ": shape function not written yet"); }
Result<std::vector<TensorType>> inferWhere(const InferCtx& c) { return makeError("unimplemented", std::string(opName(c.op)) + ": shape function not written yet"); }
Result<std::vector<TensorType>> inferMatMul(const InferCtx& c) { return makeError("unimplemented", std::string(opName(c.op)) + ": shape function not written yet"); }
Result<std::vector<TensorType>> inferGemm(const InferCtx& c) { return makeError("unimplemented", std::string(opName(c.op)) + ": shape function not written yet"); }
Result<std::vector<TensorType>> inferReduce(const InferCtx& c) { return makeError("unimplemented", std::string(opName(c.op)) + ": shape function not written yet"); }
Result<std::vector<TensorType>> inferArg(const InferCtx& c) { return makeError("unimplemented", std::string(opName(c.op)) + ": shape function not written yet"); }
Result<std::vector<TensorType>> inferNorm(const InferCtx& c) { return makeError("unimplemented", std::string(opName(c.op)) + ": shape function not written yet"); }
Result<std::vector<TensorType>> inferReshape(const InferCtx& c) { return makeError("unimplemented", std::string(opName(c.op)) + ": shape function not written yet"); }
Result<std::vector<TensorType>> inferTranspose(const InferCtx& c) { return makeError("unimplemented", std::string(opName(c.op)) + ": shape function not written yet"); }
Result<std::vector<TensorType>> inferSlice(const InferCtx& c) { return makeError("unimplemented", std::string(opName(c.op)) + ": shape function not written yet"); }
Result<std::vector<TensorType>> inferConcat(const InferCtx& c) { return makeError("unimplemented", std::string(opName(c.op)) + ": shape function not written yet"); }
Result<std::vector<TensorType>> inferSplit(const InferCtx& c) { return makeError("unimplemented", std::string(opName(c.op)) + ": shape function not written yet"); }
Result<std::vector<TensorType>> inferExpand(const InferCtx& c) { return makeError("unimplemented", std::string(opName(c.op)) + ": shape function not written yet"); }
Result<std::vector<TensorType>> inferSqueeze(const InferCtx& c) { return makeError("unimplemented", std::string(opName(c.op)) + ": shape function not written yet"); }
Result<std::vector<TensorType>> inferUnsqueeze(const InferCtx& c) { return makeError("unimplemented", std::string(opName(c.op)) + ": shape function not written yet"); }
Result<std::vector<TensorType>> inferGather(const InferCtx& c) { return makeError("unimplemented", std::string(opName(c.op)) + ": shape function not written yet"); }
Result<std::vector<TensorType>> inferGatherElements(const InferCtx& c) { return makeError("unimplemented", std::string(opName(c.op)) + ": shape function not written yet"); }
Result<std::vector<TensorType>> inferScatterElements(const InferCtx& c) { return makeError("unimplemented", std::string(opName(c.op)) + ": shape function not written yet"); }
Result<std::vector<TensorType>> inferConstant(const InferCtx& c) { return makeError("unimplemented", std::string(opName(c.op)) + ": shape function not written yet"); }
Result<std::vector<TensorType>> inferRange(const InferCtx& c) { return makeError("unimplemented", std::string(opName(c.op)) + ": shape function not written yet"); }
Result<std::vector<TensorType>> inferTopK(const InferCtx& c) { return makeError("unimplemented", std::string(opName(c.op)) + ": shape function not written yet"); }
Result<std::vector<TensorType>> inferOneHot(const InferCtx& c) { return makeError("unimplemented", std::string(opName(c.op)) + ": shape function not written yet"); }
Result<std::vector<TensorType>> inferCrossEntropy(const InferCtx& c) { return makeError("unimplemented", std::string(opName(c.op)) + ": shape function not written yet"); }
Result<std::vector<TensorType>> inferDropout(const InferCtx& c) { return makeError("unimplemented", std::string(opName(c.op)) + ": shape function not written yet"); }
Result<std::vector<TensorType>> inferAllGather(const InferCtx& c) { return makeError("unimplemented", std::string(opName(c.op)) + ": shape function not written yet"); }
Result<std::vector<TensorType>> inferReduceScatter(const InferCtx& c) { return makeError("unimplemented", std::string(opName(c.op)) + ": shape function not written yet"); }
Result<std::vector<TensorType>> inferAllToAll(const InferCtx& c) { return makeError("unimplemented", std::string(opName(c.op)) + ": shape function not written yet"); }
Result<std::vector<TensorType>> inferSend(const InferCtx& c) { return makeError("unimplemented", std::string(opName(c.op)) + ": shape function not written yet"); }
Result<std::vector<TensorType>> inferRecv(const InferCtx& c) { return makeError("unimplemented", std::string(opName(c.op)) + ": shape function not written yet"); }
Status kernelUnary(OpKind op, const AttrMap&, std::span<const Tensor>, std::vector<Tensor>&) { return makeError("unimplemented", std::string(opName(op)) + ": kernel not written yet"); }
Status kernelCast(OpKind op, const AttrMap&, std::span<const Tensor>, std::vector<Tensor>&) { return makeError("unimplemented", std::string(opName(op)) + ": kernel not written yet"); }
Status kernelBinary(OpKind op, const AttrMap&, std::span<const Tensor>, std::vector<Tensor>&) { return makeError("unimplemented", std::string(opName(op)) + ": kernel not written yet"); }
Status kernelWhere(OpKind op, const AttrMap&, std::span<const Tensor>, std::vector<Tensor>&) { return makeError("unimplemented", std::string(opName(op)) + ": kernel not written yet"); }
Status kernelMatMul(OpKind op, const AttrMap&, std::span<const Tensor>, std::vector<Tensor>&) { return makeError("unimplemented", std::string(opName(op)) + ": kernel not written yet"); }
Status kernelGemm(OpKind op, const AttrMap&, std::span<const Tensor>, std::vector<Tensor>&) { return makeError("unimplemented", std::string(opName(op)) + ": kernel not written yet"); }
Status kernelReduce(OpKind op, const AttrMap&, std::span<const Tensor>, std::vector<Tensor>&) { return makeError("unimplemented", std::string(opName(op)) + ": kernel not written yet"); }
Status kernelArg(OpKind op, const AttrMap&, std::span<const Tensor>, std::vector<Tensor>&) { return makeError("unimplemented", std::string(opName(op)) + ": kernel not written yet"); }
Status kernelSoftmax(OpKind op, const AttrMap&, std::span<const Tensor>, std::vector<Tensor>&) { return makeError("unimplemented", std::string(opName(op)) + ": kernel not written yet"); }
Status kernelLayerNorm(OpKind op, const AttrMap&, std::span<const Tensor>, std::vector<Tensor>&) { return makeError("unimplemented", std::string(opName(op)) + ": kernel not written yet"); }
Status kernelRmsNorm(OpKind op, const AttrMap&, std::span<const Tensor>, std::vector<Tensor>&) { return makeError("unimplemented", std::string(opName(op)) + ": kernel not written yet"); }
Status kernelReshape(OpKind op, const AttrMap&, std::span<const Tensor>, std::vector<Tensor>&) { return makeError("unimplemented", std::string(opName(op)) + ": kernel not written yet"); }
Status kernelTranspose(OpKind op, const AttrMap&, std::span<const Tensor>, std::vector<Tensor>&) { return makeError("unimplemented", std::string(opName(op)) + ": kernel not written yet"); }
Status kernelSlice(OpKind op, const AttrMap&, std::span<const Tensor>, std::vector<Tensor>&) { return makeError("unimplemented", std::string(opName(op)) + ": kernel not written yet"); }
Status kernelConcat(OpKind op, const AttrMap&, std::span<const Tensor>, std::vector<Tensor>&) { return makeError("unimplemented", std::string(opName(op)) + ": kernel not written yet"); }
Status kernelSplit(OpKind op, const AttrMap&, std::span<const Tensor>, std::vector<Tensor>&) { return makeError("unimplemented", std::string(opName(op)) + ": kernel not written yet"); }
Status kernelExpand(OpKind op, const AttrMap&, std::span<const Tensor>, std::vector<Tensor>&) { return makeError("unimplemented", std::string(opName(op)) + ": kernel not written yet"); }
Status kernelGather(OpKind op, const AttrMap&, std::span<const Tensor>, std::vector<Tensor>&) { return makeError("unimplemented", std::string(opName(op)) + ": kernel not written yet"); }
Status kernelGatherElements(OpKind op, const AttrMap&, std::span<const Tensor>, std::vector<Tensor>&) { return makeError("unimplemented", std::string(opName(op)) + ": kernel not written yet"); }
Status kernelScatterElements(OpKind op, const AttrMap&, std::span<const Tensor>, std::vector<Tensor>&) { return makeError("unimplemented", std::string(opName(op)) + ": kernel not written yet"); }
Status kernelTrilu(OpKind op, const AttrMap&, std::span<const Tensor>, std::vector<Tensor>&) { return makeError("unimplemented", std::string(opName(op)) + ": kernel not written yet"); }
Status kernelConstant(OpKind op, const AttrMap&, std::span<const Tensor>, std::vector<Tensor>&) { return makeError("unimplemented", std::string(opName(op)) + ": kernel not written yet"); }
Status kernelRange(OpKind op, const AttrMap&, std::span<const Tensor>, std::vector<Tensor>&) { return makeError("unimplemented", std::string(opName(op)) + ": kernel not written yet"); }
Status kernelTopK(OpKind op, const AttrMap&, std::span<const Tensor>, std::vector<Tensor>&) { return makeError("unimplemented", std::string(opName(op)) + ": kernel not written yet"); }
Status kernelOneHot(OpKind op, const AttrMap&, std::span<const Tensor>, std::vector<Tensor>&) { return makeError("unimplemented", std::string(opName(op)) + ": kernel not written yet"); }
Status kernelCrossEntropy(OpKind op, const AttrMap&, std::span<const Tensor>, std::vector<Tensor>&) { return makeError("unimplemented", std::string(opName(op)) + ": kernel not written yet"); }
Status kernelDropout(OpKind op, const AttrMap&, std::span<const Tensor>, std::vector<Tensor>&) { return makeError("unimplemented", std::string(opName(op)) + ": kernel not written yet"); }

}  // namespace sp::ir
