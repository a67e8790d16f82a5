#pragma once
// INTERNAL to rewrite/smt/: the Context's state. Included only by
// rewrite/smt/*.cpp - the one place Z3 headers may appear.
#include <z3++.h>

#include <map>
#include <set>
#include <string>
#include <vector>

#include "rewrite/smt/smt.h"

namespace sp::smt {

struct FoldInfo {
  FoldOp op;
  z3::expr var, lo, hi, body;
};

struct Context::Impl {
  z3::context z;
  std::vector<z3::expr> terms;
  std::map<std::string, uint32_t> vars;   // name -> term id
  std::vector<z3::func_decl> funcs;
  std::map<std::string, uint32_t> funcByName;
  std::map<unsigned, FoldInfo> folds;     // placeholder ast id -> fold
  // (op, body id) -> (function, body): the body is kept so its id stays unique.
  std::map<std::pair<int, unsigned>, std::pair<z3::func_decl, z3::expr>> abstractions;
  int freshCounter = 0;
  // Functions standing for exp (Context::exp): ast ids of their decls.
  std::set<unsigned> expFuncs;
  // During check(): facts of real exp about the abstracted sum folds
  // (n >= 1 implies F(n, ..) > 0 for a positive body).
  std::vector<z3::expr> positive;
  bool isExp(const z3::expr& e) const {
    return e.is_app() && e.num_args() == 1 && expFuncs.count(Z3_get_ast_id(z, e.decl())) > 0;
  }
  // A product (quotient, sum) of exponentials and positive numerals.
  bool positiveTerm(const z3::expr& e) const;
  Stats stats;
  std::string lastReason;

  uint32_t put(z3::expr e);
  // During check(): variables equal by an assumption `x == y`, replaced by
  // one representative everywhere (variable elimination; equisatisfiable).
  z3::expr_vector eqFrom{z}, eqTo{z};
  z3::expr canon(const z3::expr& e) {
    return eqFrom.empty() ? e : z3::expr(e).substitute(eqFrom, eqTo);
  }

  unsigned astId(const z3::expr& e) const { return Z3_get_ast_id(z, e); }
  // Runs one solver query: is `f` satisfiable? Counts it in stats.
  z3::check_result solve(const z3::expr_vector& fs, unsigned timeoutMs, z3::model* model);
  // Is `goal` implied by `ctx`? (A small internal query; false if unknown.)
  bool implied(const std::vector<z3::expr>& ctx, const z3::expr& goal, unsigned timeoutMs);
  // Replaces every fold placeholder in e by a sound abstraction.
  z3::expr normalize(const z3::expr& e, std::vector<z3::expr>& ctx, unsigned timeoutMs,
                     bool* abstracted);
};

}  // namespace sp::smt
