// TEMPORARY during bring-up: definitions not yet written. Each entry is
// deleted when its real definition lands; the file goes away when empty.
#include "ir/op.h"

namespace sp::ir {

Status kernelMatMul(OpKind op, const AttrMap&, std::span<const Tensor>, std::vector<Tensor>&) { return makeError("unimplemented", std::string(opName(op)) + ": kernel not written yet"); }
Status kernelGemm(OpKind op, const AttrMap&, std::span<const Tensor>, std::vector<Tensor>&) { return makeError("unimplemented", std::string(opName(op)) + ": kernel not written yet"); }
Status kernelReduce(OpKind op, const AttrMap&, std::span<const Tensor>, std::vector<Tensor>&) { return makeError("unimplemented", std::string(opName(op)) + ": kernel not written yet"); }
Status kernelArg(OpKind op, const AttrMap&, std::span<const Tensor>, std::vector<Tensor>&) { return makeError("unimplemented", std::string(opName(op)) + ": kernel not written yet"); }
Status kernelSoftmax(OpKind op, const AttrMap&, std::span<const Tensor>, std::vector<Tensor>&) { return makeError("unimplemented", std::string(opName(op)) + ": kernel not written yet"); }
Status kernelLayerNorm(OpKind op, const AttrMap&, std::span<const Tensor>, std::vector<Tensor>&) { return makeError("unimplemented", std::string(opName(op)) + ": kernel not written yet"); }
Status kernelRmsNorm(OpKind op, const AttrMap&, std::span<const Tensor>, std::vector<Tensor>&) { return makeError("unimplemented", std::string(opName(op)) + ": kernel not written yet"); }
Status kernelScatterElements(OpKind op, const AttrMap&, std::span<const Tensor>, std::vector<Tensor>&) { return makeError("unimplemented", std::string(opName(op)) + ": kernel not written yet"); }
Status kernelTrilu(OpKind op, const AttrMap&, std::span<const Tensor>, std::vector<Tensor>&) { return makeError("unimplemented", std::string(opName(op)) + ": kernel not written yet"); }
Status kernelConstant(OpKind op, const AttrMap&, std::span<const Tensor>, std::vector<Tensor>&) { return makeError("unimplemented", std::string(opName(op)) + ": kernel not written yet"); }
Status kernelRange(OpKind op, const AttrMap&, std::span<const Tensor>, std::vector<Tensor>&) { return makeError("unimplemented", std::string(opName(op)) + ": kernel not written yet"); }
Status kernelTopK(OpKind op, const AttrMap&, std::span<const Tensor>, std::vector<Tensor>&) { return makeError("unimplemented", std::string(opName(op)) + ": kernel not written yet"); }
Status kernelOneHot(OpKind op, const AttrMap&, std::span<const Tensor>, std::vector<Tensor>&) { return makeError("unimplemented", std::string(opName(op)) + ": kernel not written yet"); }
Status kernelCrossEntropy(OpKind op, const AttrMap&, std::span<const Tensor>, std::vector<Tensor>&) { return makeError("unimplemented", std::string(opName(op)) + ": kernel not written yet"); }
Status kernelDropout(OpKind op, const AttrMap&, std::span<const Tensor>, std::vector<Tensor>&) { return makeError("unimplemented", std::string(opName(op)) + ": kernel not written yet"); }

}  // namespace sp::ir
