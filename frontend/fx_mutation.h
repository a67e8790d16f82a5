#pragma once
// In-place mutation in torch-level graphs (`x.add_(y)`, `x /= y`): the
// importer gives each mutation its out-of-place value and rebinds the
// mutated name, and every name that is the same tensor, to it. That is
// exact only when no other live value shares the tensor's storage: a view
// taken of it earlier, the value it is a view of, or a graph input (whose
// new value would be a side effect the import drops). The tracker records,
// per FX name, which storage it may share and with which layout, and
// refuses the mutations it cannot model.
//
// One case of views is modeled: a view taken by a subscript of basic items
// (`g = x[i]`, ints, constant slices, None, Ellipsis) that is mutated and
// then written back into its base by a subscript assignment of the same
// index (`x[i] = g`), as FX prints Python's `x[i] += v` (getitem, iadd,
// setitem). Between the two statements nothing reads the base; the
// assignment overwrites the whole region the view covers, so afterwards
// the base is its new value (the assignment's), and the view, an exact
// alias of the assigned value, is its own.
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "frontend/fx_parser.h"

namespace sp::frontend::fx {

class AliasTracker {
 public:
  // Reads of each name by statement index of m's body (the return included).
  explicit AliasTracker(const Module& m);

  // A graph input or module attribute: its storage is the caller's.
  void input(const std::string& name);
  void fresh(const std::string& name);
  // The same tensor as `of` (an alias line, the result of an in-place op).
  void same(const std::string& name, const std::string& of);
  // May share storage with `of` in another layout (a view, or `of` itself
  // when torch returns its input unchanged). Unknown `of`: fresh.
  void view(const std::string& name, const std::string& of);
  // `name = of[index]` with basic items only: a view of `of` that a
  // subscript assignment of the same index writes back (see above); any
  // other index is view(). (An advanced index copies: the caller makes
  // that result fresh.)
  void subscript(const std::string& name, const std::string& of, const Expr& index);
  // Result `name` of tuple `tuple`: a view of what the tuple's call viewed
  // (split, chunk, unbind), else fresh (topk, max).
  void piece(const std::string& name, const std::string& tuple);
  bool tracked(const std::string& name) const { return cells_.count(name) > 0; }

  // The names to rebind to the new value when statement `at` (node `node`)
  // mutates `name`: its exact aliases, itself included. fx-unsupported when
  // the mutation would be visible through a value the import cannot update
  // (a graph input's storage; another layout of the storage read at or
  // after `at`), except the reads the write-back of a subscript view makes
  // exact (above): the base of a mutated view, first read again by the
  // assignment that writes the view back; a view of exactly the region an
  // assignment writes, read by it as its value or later as the value's
  // exact alias.
  Result<std::vector<std::string>> mutate(const std::string& name, size_t at, const std::string& node,
                                          const std::string& loc) const;
  // A mutation of `name` whose new value the import leaves out (a partial
  // import, fx_partial.h): every name that may share its storage, in any
  // layout, itself included, since all of them may see it. fx-unsupported
  // for a graph input's storage, as mutate().
  Result<std::vector<std::string>> mutateUnknown(const std::string& name, const std::string& node,
                                                 const std::string& loc) const;

 private:
  // Where a subscript view came from: the layout of its base and the index.
  struct Origin {
    int layout = 0;
    Expr index;
  };
  struct Cell {
    int storage = 0, layout = 0;
    bool isView = false;  // made by view(): its pieces are views too
    std::optional<Origin> origin;  // made by subscript() with basic items
  };
  Cell& add(const std::string& name, int storage, int layout);
  const Cell* cell(const Expr& x) const;
  bool writtenBackBase(const Cell& view, const Cell& other, size_t at) const;
  bool writtenRegion(const Cell& base, const Cell& other, size_t at) const;
  const Module& m_;
  std::map<std::string, Cell> cells_;
  std::set<int> inputs_;  // storages the caller owns
  std::map<std::string, std::vector<size_t>> reads_;  // statement indices, ascending
  int next_ = 0;
};

}  // namespace sp::frontend::fx
