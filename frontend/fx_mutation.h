#pragma once
// In-place mutation in torch-level graphs (`x.add_(y)`, `x /= y`): the
// importer gives each mutation its out-of-place value and rebinds the
// mutated name, and every name that is the same tensor, to it. That is
// exact only when no other live value shares the tensor's storage: a view
// taken of it earlier, the value it is a view of, or a graph input (whose
// new value would be a side effect the import drops). The tracker records,
// per FX name, which storage it may share and with which layout, and
// refuses the mutations it cannot model.
#include <map>
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
  // Result `name` of tuple `tuple`: a view of what the tuple's call viewed
  // (split, chunk, unbind), else fresh (topk, max).
  void piece(const std::string& name, const std::string& tuple);
  bool tracked(const std::string& name) const { return cells_.count(name) > 0; }

  // The names to rebind to the new value when statement `at` (node `node`)
  // mutates `name`: its exact aliases, itself included. fx-unsupported when
  // the mutation would be visible through a value the import cannot update
  // (a graph input's storage; another layout of the storage read at or
  // after `at`).
  Result<std::vector<std::string>> mutate(const std::string& name, size_t at, const std::string& node,
                                          const std::string& loc) const;

 private:
  struct Cell {
    int storage = 0, layout = 0;
    bool isView = false;  // made by view(): its pieces are views too
  };
  Cell& add(const std::string& name, int storage, int layout);
  std::map<std::string, Cell> cells_;
  std::set<int> inputs_;  // storages the caller owns
  std::map<std::string, size_t> lastRead_;
  int next_ = 0;
};

}  // namespace sp::frontend::fx
