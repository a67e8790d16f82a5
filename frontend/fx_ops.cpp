// The one table of ATen and c10d ops the torch.fx importer maps (framework
// kernels such as apex and vLLM are decomposition files, frontend/decomp).
// Each entry names a mapping function that emits IR nodes; semantics and
// limits of each mapping are documented in docs/fx-import.md.
#include "frontend/fx_ops.h"

namespace sp::frontend::fx {

namespace {

const OpMapping kOps[] = {
    // ---- layout ----
    {"aten.view.default", mapView, 0},
    {"aten._unsafe_view.default", mapView, 0},
    {"aten.reshape.default", mapView, 0},
    // torch 1.13's make_fx: reshape as a view with the strides it computed
    // (the logical row-major order of its input, whatever the strides say)
    {"aten._reshape_alias.default", mapView, 0},
    {"aten.t.default", mapT, 0},
    {"aten.transpose.int", mapTranspose, 0},
    {"aten.permute.default", mapPermute, 0},
    {"aten.expand.default", mapExpand, 0},
    {"aten.unsqueeze.default", mapUnsqueeze, 0},
    {"aten.squeeze.dim", mapSqueeze, 0},
    {"aten.squeeze.dims", mapSqueeze, 0},
    {"aten.squeeze.default", mapSqueeze, 0},
    {"aten.cat.default", mapCat, 0},
    {"aten.stack.default", mapStack, 0},
    {"aten.unbind.int", mapUnbind, 1},
    {"aten.split.Tensor", mapSplit, 1},
    {"aten.chunk.default", mapChunk, 1},
    {"aten.narrow.default", mapNarrow, 0},
    {"aten.flatten.using_ints", mapView, 0},
    {"aten.unflatten.int", mapView, 0},
    {"aten.split_with_sizes.default", mapSplitWithSizes, 1},
    {"aten.slice.Tensor", mapSlice, 0},
    {"aten.slice_scatter.default", mapSliceScatter, 0},
    {"aten.slice_backward.default", mapSliceBackward, 0},
    {"aten.select.int", mapSelect, 0},
    {"aten.index.Tensor", mapIndex, 0},
    {"aten.index_put.default", mapIndexPut, 0},
    {"aten.index_select.default", mapIndexSelect, 0},
    {"aten.gather.default", mapGatherDim, 0},
    {"aten.repeat.default", mapRepeat, 0},
    {"aten.repeat_interleave.Tensor", mapRepeatInterleave, 0},
    {"aten.repeat_interleave.self_int", mapRepeatInterleave, 0},
    {"aten.embedding.default", mapEmbedding, 0},
    // ---- copies (identity in a functional graph) ----
    {"aten.clone.default", mapIdentity, 0},
    {"aten.detach.default", mapIdentity, 0},
    {"aten.alias.default", mapIdentity, 0},
    {"aten.lift_fresh_copy.default", mapIdentity, 0},
    {"aten.contiguous.default", mapIdentity, 0},
    {"aten._to_copy.default", mapIdentity, 0},
    {"aten.to.dtype", mapIdentity, 0},
    {"aten.to.dtype_layout", mapIdentity, 0},
    {"aten.type_as.default", mapIdentity, 0},
    {"aten.copy.default", mapCopy, 0},
    // ---- elementwise ----
    {"aten.add.Tensor", mapAdd, 0},
    {"aten.add.Scalar", mapAdd, 0},
    {"aten.sub.Tensor", mapSub, 0},
    {"aten.sub.Scalar", mapSub, 0},
    {"aten.rsub.Tensor", mapRsub, 0},
    {"aten.rsub.Scalar", mapRsub, 0},
    {"aten.mul.Tensor", mapMul, 0},
    {"aten.mul.Scalar", mapMul, 0},
    {"aten.div.Tensor", mapDiv, 0},
    {"aten.div.Scalar", mapDiv, 0},
    {"aten.div.Tensor_mode", mapDivMode, 0},
    {"aten.pow.Tensor_Scalar", mapPow, 0},
    {"aten.pow.Tensor_Tensor", mapPow, 0},
    {"aten.pow.Scalar", mapPowScalarBase, 0},
    {"aten.exp.default", mapUnaryFloat, 0},
    {"aten.log.default", mapUnaryFloat, 0},
    {"aten.sigmoid.default", mapUnaryFloat, 0},
    {"aten.tanh.default", mapUnaryFloat, 0},
    {"aten.sqrt.default", mapUnaryFloat, 0},
    {"aten.rsqrt.default", mapUnaryFloat, 0},
    {"aten.reciprocal.default", mapUnaryFloat, 0},
    {"aten.erf.default", mapUnaryFloat, 0},
    {"aten.sin.default", mapUnaryFloat, 0},
    {"aten.cos.default", mapUnaryFloat, 0},
    {"aten.silu.default", mapUnaryFloat, 0},
    {"aten.relu.default", mapUnaryFloat, 0},
    {"aten.neg.default", mapUnaryFloat, 0},
    {"aten.abs.default", mapUnaryFloat, 0},
    {"aten.floor.default", mapUnaryFloat, 0},
    {"aten.ceil.default", mapUnaryFloat, 0},
    {"aten.sign.default", mapUnaryFloat, 0},
    {"aten.log1p.default", mapLog1p, 0},
    {"aten.maximum.default", mapMaximum, 0},
    {"aten.minimum.default", mapMaximum, 0},
    {"aten.clamp_min.default", mapClampBound, 0},
    {"aten.clamp_max.default", mapClampBound, 0},
    {"aten.gelu.default", mapGelu, 0},
    {"aten.triu.default", mapTriangle, 0},
    {"aten.tril.default", mapTriangle, 0},
    {"aten.clamp.default", mapClamp, 0},
    {"aten.lt.Tensor", mapCompare, 0},
    {"aten.lt.Scalar", mapCompare, 0},
    {"aten.le.Tensor", mapCompare, 0},
    {"aten.le.Scalar", mapCompare, 0},
    {"aten.gt.Tensor", mapCompare, 0},
    {"aten.gt.Scalar", mapCompare, 0},
    {"aten.ge.Tensor", mapCompare, 0},
    {"aten.ge.Scalar", mapCompare, 0},
    {"aten.eq.Tensor", mapCompare, 0},
    {"aten.eq.Scalar", mapCompare, 0},
    {"aten.ne.Tensor", mapCompare, 0},
    {"aten.ne.Scalar", mapCompare, 0},
    {"aten.bitwise_or.Tensor", mapLogical, 0},
    {"aten.bitwise_and.Tensor", mapLogical, 0},
    {"aten.bitwise_xor.Tensor", mapLogical, 0},
    {"aten.logical_or.default", mapLogical, 0},
    {"aten.logical_and.default", mapLogical, 0},
    {"aten.logical_xor.default", mapLogical, 0},
    {"aten.bitwise_not.default", mapNot, 0},
    {"aten.logical_not.default", mapNot, 0},
    {"aten.where.self", mapWhere, 0},
    {"aten.where.ScalarSelf", mapWhere, 0},
    {"aten.where.ScalarOther", mapWhere, 0},
    {"aten.where.Scalar", mapWhere, 0},
    {"aten.masked_fill.Scalar", mapMaskedFill, 0},
    {"aten.masked_fill.Tensor", mapMaskedFill, 0},
    // ---- reductions and softmax ----
    {"aten.sum.default", mapReduce, 0},
    {"aten.sum.dim_IntList", mapReduce, 0},
    {"aten.mean.default", mapReduce, 0},
    {"aten.mean.dim", mapReduce, 0},
    {"aten.amax.default", mapReduce, 0},
    {"aten.amin.default", mapReduce, 0},
    {"aten.max.default", mapReduce, 0},
    {"aten.min.default", mapReduce, 0},
    {"aten.max.dim", mapMaxMinDim, 2},
    {"aten.topk.default", mapTopK, 2},
    {"aten.min.dim", mapMaxMinDim, 2},
    {"aten.argmax.default", mapArgMax, 0},
    {"aten._softmax.default", mapSoftmax, 0},
    {"aten._log_softmax.default", mapSoftmax, 0},
    // torch.export's training IR keeps these undecomposed
    {"aten.softmax.int", mapSoftmax, 0},
    {"aten.log_softmax.int", mapSoftmax, 0},
    // ---- linear algebra, normalization, randomness ----
    {"aten.mm.default", mapMatMul, 0},
    {"aten.bmm.default", mapMatMul, 0},
    {"aten.matmul.default", mapMatMul, 0},
    {"aten.addmm.default", mapAddMM, 0},
    {"aten.baddbmm.default", mapAddMM, 0},
    {"aten.linear.default", mapLinear, 0},
    {"aten.scaled_dot_product_attention.default", mapSdpa, 0},
    {"aten._scaled_dot_product_flash_attention_for_cpu.default", mapSdpa, 2},
    {"aten._scaled_dot_product_efficient_attention.default", mapSdpa, 4},
    {"aten._scaled_dot_product_flash_attention.default", mapSdpa, 9},
    {"aten._scaled_dot_product_flash_attention_for_cpu_backward.default", mapSdpaBackward, 3},
    {"aten._scaled_dot_product_flash_attention_backward.default", mapSdpaBackward, 3},
    {"aten._scaled_dot_product_efficient_attention_backward.default", mapSdpaBackward, 4},
    {"aten.native_layer_norm.default", mapLayerNorm, 3},
    {"aten.native_dropout.default", mapDropout, 2},
    {"aten.layer_norm.default", mapLayerNorm, 0},
    {"aten.rms_norm.default", mapRmsNorm, 0},
    {"aten.dropout.default", mapDropout, 0},
    {"aten.nll_loss_forward.default", mapNllLossForward, 2},
    // ---- factories ----
    {"aten.zeros.default", mapFactory, 0},
    {"aten.ones.default", mapFactory, 0},
    {"aten.empty.memory_format", mapFactory, 0},
    {"aten.full.default", mapFactory, 0},
    {"aten.zeros_like.default", mapFactory, 0},
    {"aten.ones_like.default", mapFactory, 0},
    {"aten.empty_like.default", mapFactory, 0},
    {"aten.full_like.default", mapFactory, 0},
    {"aten.new_zeros.default", mapFactory, 0},
    {"aten.new_ones.default", mapFactory, 0},
    {"aten.new_empty.default", mapFactory, 0},
    {"aten.new_empty_strided.default", mapFactory, 0},
    {"aten.empty_strided.default", mapFactory, 0},
    {"aten.new_full.default", mapFactory, 0},
    {"aten.scalar_tensor.default", mapFactory, 0},
    {"aten.fill.Scalar", mapFactory, 0},
    {"aten.fill_.Scalar", mapFillInPlace, 0},
    {"aten.arange.default", mapArange, 0},
    // ---- compositions (fx_ops_compose.cpp, fx_ops_einsum.cpp) ----
    {"aten.cumsum.default", mapCumsum, 0},
    {"aten.constant_pad_nd.default", mapConstantPad, 0},
    {"aten.one_hot.default", mapOneHot, 0},
    {"aten.index_add.default", mapIndexAdd, 0},
    {"aten.einsum.default", mapEinsum, 0},
    {"aten.arange.start", mapArange, 0},
    {"aten.arange.start_step", mapArange, 0},
    // ---- backward ----
    {"aten._softmax_backward_data.default", mapSoftmaxBackward, 0},
    {"aten._log_softmax_backward_data.default", mapLogSoftmaxBackward, 0},
    {"aten.gelu_backward.default", mapGeluBackward, 0},
    {"aten.sigmoid_backward.default", mapSigmoidBackward, 0},
    {"aten.silu_backward.default", mapSiluBackward, 0},
    {"aten.tanh_backward.default", mapTanhBackward, 0},
    {"aten.threshold_backward.default", mapThresholdBackward, 0},
    {"aten.native_dropout_backward.default", mapDropoutBackward, 0},
    {"aten.native_layer_norm_backward.default", mapLayerNormBackward, 3},
    {"aten.embedding_dense_backward.default", mapEmbeddingBackward, 0},
    {"aten.nll_loss_backward.default", mapNllLossBackward, 0},
    // ---- collectives (torch.distributed._functional_collectives) ----
    {"_c10d_functional.all_reduce.default", mapCollective, 0},
    {"_c10d_functional.all_gather_into_tensor.default", mapCollective, 0},
    {"_c10d_functional.reduce_scatter_tensor.default", mapCollective, 0},
    {"_c10d_functional.all_to_all_single.default", mapCollective, 0},
    {"_c10d_functional.broadcast.default", mapCollective, 0},
    {"_c10d_functional.wait_tensor.default", mapIdentity, 0},
    {"c10d_functional.all_reduce.default", mapCollective, 0},
    {"c10d_functional.all_gather_into_tensor.default", mapCollective, 0},
    {"c10d_functional.reduce_scatter_tensor.default", mapCollective, 0},
    {"c10d_functional.all_to_all_single.default", mapCollective, 0},
    {"c10d_functional.broadcast.default", mapCollective, 0},
    {"c10d_functional.wait_tensor.default", mapIdentity, 0},
};

}  // namespace

const OpMapping* findOpMapping(const std::string& name) {
  for (const auto& m : kOps)
    if (name == m.name) return &m;
  return nullptr;
}

std::vector<std::string> mappedOpNames() {
  std::vector<std::string> out;
  for (const auto& m : kOps) out.emplace_back(m.name);
  return out;
}

std::string baseName(const std::string& op) {
  size_t a = op.find('.');
  size_t b = op.rfind('.');
  if (a == std::string::npos || a == b) return op;
  return op.substr(a + 1, b - a - 1);
}

std::string overloadName(const std::string& op) {
  size_t b = op.rfind('.');
  return b == std::string::npos ? "" : op.substr(b + 1);
}

}  // namespace sp::frontend::fx
