#pragma once
// `x[mask] += v` as FX prints Python's augmented assignment with a boolean
// mask (docs/fx-import.md, "Augmented subscript assignment"):
//
//   getitem: "f32[u0, 8]" = x[mask]
//   getitem += v;  iadd: "f32[u0, 8]" = getitem
//   x[mask] = iadd;  setitem = x
//
// The getitem alone has a data-dependent size (as many rows as the mask has
// true values), but the three together are where(mask, x + v, x): the
// in-place operators computed on a copy of all of x (their operands
// broadcast to every row alike) and written back where the mask is true.
// That is exact when the mask covers x's leading dims exactly (torch's rule
// for a mask index), v broadcasts to the selected elements' shape for any
// count of them (its dim at the count 1 or absent), and the copy is read
// only by the chain: each in-place operator on the latest result, then the
// subscript assignment of the same mask into x, and nothing after it.
#include <cstddef>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "frontend/fx_emit.h"
#include "frontend/fx_parser.h"

namespace sp::frontend::fx {

struct MaskedUpdate {
  size_t getitem = 0, setitem = 0;   // statement indices in the body
  std::vector<size_t> updates;       // the in-place operators, in order
  std::string base, mask;            // x and the mask, as named by the getitem
  std::set<std::string> copy;        // the getitem's name and the in-place results
  // set by the importer: the getitem was read as the copy of x (the mask
  // fits x); its own error (fx-data-dependent) if a later step does not fit
  bool active = false;
  std::optional<Error> getitemError;
};

// The chains in a body, by the index of each of their statements
// (syntactic: the names each statement reads and writes).
std::map<size_t, MaskedUpdate*> indexMaskedUpdates(const Module& m, std::vector<MaskedUpdate>& found);

// Whether `mask` indexes x as the chain needs: b8, covering x's leading dims.
bool maskFits(const TRef& x, const TRef& mask);
// Whether in-place operand `v` (a tensor, or nullopt for a number) of the
// chain broadcasts to the selected elements' shape for any count of them.
bool operandFits(const TRef& x, const TRef& mask, const std::optional<TRef>& v);
// where(mask, value, x), the mask unsqueezed over x's dims after it.
TRef maskedWrite(Emitter& e, const TRef& x, const TRef& mask, const TRef& value);

}  // namespace sp::frontend::fx
