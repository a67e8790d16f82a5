#pragma once
// The ATen -> IR op mapping table (fx_ops.cpp) and the mapping functions,
// grouped by idea: layout and indexing (fx_ops_layout.cpp), elementwise and
// reductions (fx_ops_math.cpp), linear algebra, normalization, randomness,
// factories and collectives (fx_ops_nn.cpp), backward ops (fx_ops_grad.cpp).
#include <string>

#include "frontend/fx_emit.h"

namespace sp::frontend::fx {

using MapFn = Status (*)(Emitter&);

struct OpMapping {
  const char* name;  // "aten.add.Tensor" (the callee after "torch.ops.")
  MapFn fn;
  int tupleOutputs;  // 0: one tensor result; n > 0: a tuple read with getitem
};

// nullptr if the op is not mapped.
const OpMapping* findOpMapping(const std::string& name);
// Every mapped op name, in table order (for docs and tests).
std::vector<std::string> mappedOpNames();

// ---- fx_ops_layout.cpp ----
// The shape of x[..., mask, ...] for a mask of rank r at dim p, with `n`
// for the count of true values: "[2, n, 8]" (for messages).
std::string maskedShapeStr(const ir::Shape& x, int64_t p, int64_t r);
Status mapView(Emitter&);
Status mapT(Emitter&);
Status mapTranspose(Emitter&);
Status mapPermute(Emitter&);
Status mapExpand(Emitter&);
Status mapUnsqueeze(Emitter&);
Status mapSqueeze(Emitter&);
Status mapCat(Emitter&);
Status mapStack(Emitter&);
Status mapUnbind(Emitter&);
Status mapSplit(Emitter&);
Status mapSplitWithSizes(Emitter&);
Status mapSlice(Emitter&);
Status mapSliceScatter(Emitter&);
Status mapSliceBackward(Emitter&);
Status mapSelect(Emitter&);
Status mapIndex(Emitter&);
Status mapIndexPut(Emitter&);
Status mapIndexSelect(Emitter&);
Status mapGatherDim(Emitter&);
Status mapRepeat(Emitter&);
Status mapRepeatInterleave(Emitter&);
Status mapEmbedding(Emitter&);
Status mapIdentity(Emitter&);
Status mapCopy(Emitter&);

// ---- fx_ops_math.cpp ----
Status mapAdd(Emitter&);
Status mapSub(Emitter&);
Status mapRsub(Emitter&);
Status mapMul(Emitter&);
Status mapDiv(Emitter&);
Status mapDivMode(Emitter&);
Status mapPow(Emitter&);
Status mapPowScalarBase(Emitter&);
Status mapUnaryFloat(Emitter&);
Status mapGelu(Emitter&);
Status mapTriangle(Emitter&);
Status mapClamp(Emitter&);
Status mapClampBound(Emitter&);
Status mapLog1p(Emitter&);
Status mapTopK(Emitter&);
Status mapMaximum(Emitter&);
Status mapCompare(Emitter&);
Status mapLogical(Emitter&);
Status mapNot(Emitter&);
Status mapWhere(Emitter&);
Status mapMaskedFill(Emitter&);
Status mapReduce(Emitter&);
Status mapMaxMinDim(Emitter&);
Status mapArgMax(Emitter&);
Status mapSoftmax(Emitter&);

// ---- fx_ops_nn.cpp ----
Status mapMatMul(Emitter&);
Status mapAddMM(Emitter&);
Status mapLinear(Emitter&);
Status mapSdpa(Emitter&);
Status mapSdpaBackward(Emitter&);
Status mapLayerNorm(Emitter&);
Status mapDropout(Emitter&);
Status mapRmsNorm(Emitter&);
Status mapChunk(Emitter&);
Status mapNarrow(Emitter&);
Status mapFactory(Emitter&);
Status mapFillInPlace(Emitter&);
Status mapArange(Emitter&);
Status mapCollective(Emitter&);
Status mapNllLossForward(Emitter&);

// ---- fx_ops_compose.cpp, fx_ops_einsum.cpp: compositions of IR ops ----
Status mapCumsum(Emitter&);
Status mapConstantPad(Emitter&);
Status mapOneHot(Emitter&);
Status mapIndexAdd(Emitter&);
Status mapEinsum(Emitter&);

// ---- fx_ops_grad.cpp ----
Status mapSoftmaxBackward(Emitter&);
Status mapLogSoftmaxBackward(Emitter&);
Status mapGeluBackward(Emitter&);
Status mapSiluBackward(Emitter&);
Status mapSigmoidBackward(Emitter&);
Status mapTanhBackward(Emitter&);
Status mapThresholdBackward(Emitter&);
Status mapDropoutBackward(Emitter&);
Status mapLayerNormBackward(Emitter&);
Status mapEmbeddingBackward(Emitter&);
Status mapNllLossBackward(Emitter&);

// The op name without namespace and overload: "aten.add.Tensor" -> "add".
std::string baseName(const std::string& op);
std::string overloadName(const std::string& op);

}  // namespace sp::frontend::fx
