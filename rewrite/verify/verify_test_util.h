#pragma once
// Test helpers shared by the verify() and witness tests: the cases of
// rewrite/testdata/verify as parsed S, D and relations.
#include <fstream>
#include <sstream>
#include <string>

#include "ir/text.h"
#include "rewrite/verify/verify.h"

namespace sp::rewrite::testutil {

inline std::string readFile(const std::string& name) {
  std::ifstream in(std::string(SP_SOURCE_DIR) + "/rewrite/testdata/verify/" + name);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

struct Case {
  ir::Graph seq;
  ir::Program dist;
  RelationFile rel;
};

inline Case load(const std::string& s, const std::string& d, const std::string& r) {
  auto g = ir::parseGraph(readFile(s), s);
  auto p = ir::parseProgram(readFile(d), d);
  auto f = parseRelations(readFile(r), r);
  SP_ASSERT(g.ok(), g.ok() ? "" : g.error().str());
  SP_ASSERT(p.ok(), p.ok() ? "" : p.error().str());
  SP_ASSERT(f.ok(), f.ok() ? "" : f.error().str());
  return Case{std::move(*g), std::move(*p), std::move(*f)};
}

}  // namespace sp::rewrite::testutil
