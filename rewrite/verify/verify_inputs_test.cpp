// Input relations checked once per template (checkInputTemplates) against
// the per-rank check (checkInputRelations): wherever the template check
// accepts, every rank's relation is well-typed and in bounds; and the
// plain even split over a group is always accepted.
#include <gtest/gtest.h>

#include <random>
#include <string>

#include "ir/text.h"
#include "rewrite/engine/engine_verify.h"
#include "rewrite/relation/relation_text.h"

namespace sp::rewrite {
namespace {

struct Drawn {
  std::string seq, dist, rel;
};

// One D parameter of k elements per rank on a random mesh, its relation a
// slice of S's parameter of e elements whose start is a random affine form
// in r and idx(r, axis), some of them floor-divided or taken modulo.
Drawn draw(std::mt19937& rng, bool plainSplit) {
  auto pick = [&](int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng); };
  const char* names[] = {"a", "b", "c"};
  int axes = pick(1, 3);
  std::vector<int> size(static_cast<size_t>(axes));
  int world = 1;
  std::string mesh;
  for (int i = 0; i < axes; ++i) {
    size[size_t(i)] = pick(1, 4);
    world *= size[size_t(i)];
    mesh += std::string(i ? ", " : "") + names[i] + " = " + std::to_string(size[size_t(i)]);
  }
  int loop = pick(0, axes - 1);
  int k = pick(1, 4);
  int e = pick(1, 24);
  std::string start;
  if (plainSplit) {
    e = k * size[size_t(loop)];
    start = "idx(r," + std::string(names[loop]) + ")*" + std::to_string(k);
  } else {
    start = std::to_string(pick(0, 6));
    for (int t = pick(0, 3); t-- > 0;) {
      int which = pick(0, axes);  // axes: r itself
      std::string atom = which == axes ? "r" : "idx(r," + std::string(names[which]) + ")";
      if (pick(0, 3) == 0) atom = "(" + atom + (pick(0, 1) ? "/" : "%") + std::to_string(pick(1, 3)) + ")";
      start += (pick(0, 2) ? "+" : "-") + atom + "*" + std::to_string(pick(0, 3));
    }
  }
  int kEnd = pick(0, 5) ? k : pick(0, 5);  // sometimes another size than D's
  Drawn d;
  d.seq = "graph s {\n  param %w: f32[" + std::to_string(e) + "]\n  %y: f32[" + std::to_string(e) +
          "] = neg(%w)\n  output %y\n}\n";
  d.dist = "program d {\n  world " + std::to_string(world) + "\n  mesh [" + mesh + "]\n  rank 0.." +
           std::to_string(world - 1) + " {\n    param %w: f32[" + std::to_string(k) + "]\n    %y: f32[" +
           std::to_string(k) + "] = neg(%w)\n    output %y\n  }\n}\n";
  d.rel = "for r in " + std::string(names[loop]) + ": dist[r].w = slice(seq.w, dim=0, start=" + start + ", end=" + start +
          "+" + std::to_string(kEnd) + ")\n";
  return d;
}

TEST(InputTemplates, AcceptedOnlyWhereEveryRankChecks) {
  std::mt19937 rng(20261126);
  int accepted = 0, perRankOk = 0;
  for (int i = 0; i < 3000; ++i) {
    Drawn d = draw(rng, i % 4 == 0);
    auto seq = ir::parseGraph(d.seq, "s.sp");
    auto dist = ir::parseProgram(d.dist, "d.sp");
    auto rel = parseRelations(d.rel, "r.rel");
    ASSERT_TRUE(seq.ok() && dist.ok()) << d.dist;
    if (!rel.ok()) continue;
    auto full = checkInputRelations(*seq, *dist, *rel);
    perRankOk += full.ok();
    auto t = checkInputTemplates(*seq, *dist, *rel);
    if (t) {
      ++accepted;
      EXPECT_TRUE(full.ok()) << d.dist << d.rel << full.error().str();
    }
    if (i % 4 == 0 && full.ok()) EXPECT_TRUE(t.has_value()) << "an even split is a template: " << d.dist << d.rel;
  }
  EXPECT_GT(accepted, 700);
  EXPECT_GT(perRankOk, accepted);  // the interval bounds are an over-approximation
}

}  // namespace
}  // namespace sp::rewrite
