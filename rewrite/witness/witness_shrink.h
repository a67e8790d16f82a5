#pragma once
// A smaller witness that still refutes the program as written.
//
// A witness runs S and D at the model's size: a Megatron capture's logits
// alone are gigabytes. Many dims of a model are "row" dims that every op
// treats row by row: batch, and whatever a program flattens batch into.
// Pick an extent n of S's inputs and label every input dim of that extent.
// An abstract interpretation over S, the relations and D checks, op by op,
// that each value v satisfies
//
//     v(full inputs) = n^k · E(v(shrunk inputs))
//
// where the full inputs are the shrunk ones with every labeled row repeated
// n times, E repeats each labeled dim's rows the same way (a labeled dim of
// extent outer·n·inner holds outer·inner shrunk rows, repeated along the
// middle factor), and k counts sums over labeled dims (a mean, max or min
// over n equal rows is the row; a sum is n times it). Each op has a transfer
// rule; an op with none, a labeled dim sliced, gathered along, concatenated
// along, log-softmaxed over or mixed with an unlabeled dim of the same
// extent, or a nonlinear op applied to a scaled value ends the analysis for
// that n. A layer or RMS norm over labeled dims is the repeated norm (the
// mean and variance of n copies are the row's), a softmax over one the
// repeated softmax over n (k = -1; attention's product with the values sums
// the copies back). A leaf with several dims of extent n (seq = hidden in
// [s, b, h]) is tried with all of them labeled, only the first, or only the
// last: the others are that extent by chance.
//
// Dims that the input relations cut in slices of n (a data-parallel rank's
// batch) are labeled as blocks (outer = the number of slices): cuts,
// concats and gathers of whole blocks keep their labels, and the relations
// are rewritten to the shrunk bounds.
//
// Where it goes through, S and D are rebuilt with every labeled dim at
// outer·inner (reshape, expand, slice, split and recv attributes rewritten,
// shapes re-inferred and checked against the labels), so a difference the shrunk
// witness finds between an S output and D's rebuild of it, both with the
// same labels and the same k, is a difference of the full-size program on
// the repeated inputs: a refutation at the program's own size.
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "rewrite/engine/engine_verify.h"

namespace sp::rewrite {

// Per dim: unlabeled (outer == 0), or extent outer·n·inner with the rows
// repeated along the n factor.
struct RowLabel {
  int64_t outer = 0, inner = 0;
  bool on() const { return outer > 0; }
  bool operator==(const RowLabel& o) const { return outer == o.outer && inner == o.inner; }
};

struct RowLabels {
  std::vector<RowLabel> dims;
  int k = 0;  // the value is n^k times the repeated shrunk value
  bool operator==(const RowLabels& o) const { return dims == o.dims && k == o.k; }
  bool any() const;
};

class ShrunkWitness {
 public:
  const ir::Graph& seq() const { return seq_; }
  const ir::Program& dist() const { return dist_; }
  // The extents shrunk, in order (batch, then sequence where both shrink).
  std::vector<int64_t> extents() const;
  // "S's dims of extent 8 (primals_18 dim 0, ...) run at 1": for reports.
  const std::string& note() const { return note_; }

  // The input relations, one per rank, and the expect lines, at the shrunk
  // sizes (slices of whole blocks of repeated rows cut at the shrunk bounds).
  const RelationFile& rel() const { return rel_; }
  const std::map<std::string, RelPtr>& expected() const { return expected_; }

  // Does a difference between S value `seqName` and a rebuild of it hold at
  // full size? Yes when, at every shrink, the rebuild's labels and k equal
  // the S value's: its expect line, or a natural rebuild from D outputs.
  bool transfersExpected(const std::string& seqName) const;
  bool transfers(const std::string& seqName, const Candidate& c) const;

  // The analysis; nullopt (with `why`) when no extent shrinks both programs.
  // `expected`: the concretized expect lines. Shrinks again on the result
  // while another extent does (at most 3).
  static std::optional<ShrunkWitness> make(const ir::Graph& seq, const ir::Program& dist, const RelationFile& rel,
                                           const std::map<std::string, RelPtr>& expected, std::string* why = nullptr);

 private:
  // One shrink: its extent and every value's labels.
  struct Level {
    int64_t n = 0;
    std::map<std::string, RowLabels> seq;               // by S value name
    std::vector<std::map<std::string, RowLabels>> dist;  // per rank, by D value name
    std::map<std::string, bool> expectOk;               // by S value name
  };
  ir::Graph seq_;
  ir::Program dist_;
  RelationFile rel_;
  std::map<std::string, RelPtr> expected_;
  RankSpace ranks_;
  std::string note_;
  std::vector<Level> levels_;
};

}  // namespace sp::rewrite
