#pragma once
// A training step as one graph: AOTAutograd splits a step into a forward
// graph, whose outputs are the user outputs followed by the tensors saved for
// backward, and a backward graph, whose inputs are those saved tensors (same
// order) followed by the tangents (inputs named `tangents_*`), and whose
// outputs are the gradients of the forward's inputs. joinTrainingStep wires
// the backward's saved-tensor inputs to the forward's outputs, so verifying
// the joined S against the joined D checks forward and backward together:
// the saved tensors need no relation of their own (they are whatever the
// forward computed), only the tangents do, like any other input.
//
// The joined graph: the forward's inputs, then the tangents; the forward's
// nodes, then the backward's, whose values are renamed `bw_<name>` where a
// forward value has the name; outputs: the user outputs, then the gradients,
// named `grad_<forward input>` when the backward returns one gradient per
// forward input (AOTAutograd's order), else as the backward names them.
#include "ir/program.h"

namespace sp::ir {

Result<Graph> joinTrainingStep(const Graph& fw, const Graph& bw);
// Rank by rank; both programs must have the same world, mesh and groups.
Result<Program> joinTrainingStep(const Program& fw, const Program& bw);

}  // namespace sp::ir
