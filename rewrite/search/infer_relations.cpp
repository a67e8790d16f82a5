// Proposed input relations from names and shapes, one comprehension line
// per D input covering all ranks, for review with printRelations.
//
// Which S input a D input relates to: the S input or parameter of the same
// name; for a dropout stream (`<node>_rng`, docs/fx-import.md) with no
// namesake, the S stream of the dropout at the same source line, else the
// one at the same position among the streams. Dynamo's lifted module
// constants (`_tensor_constantN`) are numbered per capture, so a namesake in
// S means nothing: a D constant left without a value is declared unrelated,
// with the reason.
//
// A sharded weight whose consumers cut its split dim into blocks (vLLM's
// merged QKV and gate_up projections, GPT-2's c_attn: the matmul output is
// split into q, k, v) is laid out per block: rank r holds its shard of each
// block, [q_r | k_r | v_r], read from the cut points of the split dim in S
// and in D (see blockCuts); a block with fewer shards than ranks (KV heads
// when TP exceeds them) is held by consecutive ranks. Cut points that fit
// neither that nor one contiguous shard per rank are an error asking for a
// relation file.
#include <algorithm>
#include <set>

#include "rewrite/verify/verify.h"

namespace sp::rewrite {

namespace {

struct Proposal {
  bool replicated = false;
  std::string axis;  // sharded: mesh axis
  int64_t dim = 0;
  int64_t extent = 0;   // shard extent
  int64_t holders = 1;  // consecutive ranks of the axis holding the same shard
  // The dim is no whole fraction of S's: a shard of each of several blocks
  // with different shard counts (vLLM's QKV when TP exceeds the KV heads),
  // which blocksOf must find.
  bool blocksOnly = false;
};

bool startsWith(const std::string& s, const std::string& p) { return s.compare(0, p.size(), p) == 0; }
bool endsWith(const std::string& s, const std::string& p) {
  return s.size() >= p.size() && s.compare(s.size() - p.size(), p.size(), p) == 0;
}

bool isLeaf(const ir::Graph& g, const std::string& name) {
  auto v = g.findValue(name);
  return v && g.value(*v).kind != ir::ValueKind::NodeOutput;
}

// "file:line" of the first node reading a leaf (the dropout of a stream).
std::string readerSite(const ir::Graph& g, const std::string& name) {
  auto v = g.findValue(name);
  if (!v || g.users(*v).empty()) return "";
  const ir::SourceLoc& l = g.node(g.users(*v).front()).loc;
  return l.file.empty() || l.line == 0 ? "" : l.file + ":" + std::to_string(l.line);
}

std::vector<std::string> streams(const ir::Graph& g) {
  std::vector<std::string> out;
  for (ir::ValueId v : g.inputs())
    if (endsWith(g.value(v).name, "_rng")) out.push_back(g.value(v).name);
  return out;
}

// The S stream of a D dropout stream without a namesake.
Result<std::string> matchStream(const ir::Graph& seq, const ir::Graph& d, const std::string& name) {
  std::vector<std::string> ss = streams(seq), ds = streams(d);
  std::string site = readerSite(d, name);
  std::vector<std::string> sameSite;
  for (const auto& s : ss)
    if (!site.empty() && readerSite(seq, s) == site) sameSite.push_back(s);
  if (sameSite.size() == 1) return sameSite[0];
  if (ss.size() == ds.size())
    for (size_t i = 0; i < ds.size(); ++i)
      if (ds[i] == name) return ss[i];
  return makeError("unmatched-input", "D dropout stream '" + name + "' has no S stream of the same name, " +
                                          std::to_string(sameSite.size()) + " S streams read at its source line " +
                                          (site.empty() ? "(unknown)" : site) + ", and S has " +
                                          std::to_string(ss.size()) + " streams where D has " +
                                          std::to_string(ds.size()));
}

// Replicated, or one dim split evenly over one mesh axis.
Result<Proposal> propose(const ir::TensorType& st, const ir::TensorType& dt, const ir::Program& dist, int64_t r,
                         const std::string& name, const std::string& sname) {
  Proposal p;
  if (dt.shape == st.shape) {
    p.replicated = true;
    return p;
  }
  if (dt.shape.size() != st.shape.size())
    return makeError("unmatched-input", "rank " + std::to_string(r) + ": D input '" + name + "' " + dt.str() +
                                            " has rank " + std::to_string(dt.shape.size()) + ", S " + st.str() +
                                            " has rank " + std::to_string(st.shape.size()));
  std::vector<Proposal> found;
  size_t differing = 0;
  for (size_t d = 0; d < st.shape.size(); ++d) {
    if (dt.shape[d] == st.shape[d]) continue;
    ++differing;
    for (const auto& a : dist.mesh().axes) {
      if (a.size < 2 || !dt.shape[d].isConcrete()) continue;
      if (dt.shape[d] * ir::Dim(a.size) == st.shape[d]) {
        found.push_back({false, a.name, int64_t(d), dt.shape[d].value()});
        continue;
      }
      // Fewer shards than ranks (KV heads when TP exceeds them): c shards,
      // each held by a.size / c consecutive ranks, Megatron's layout (rank
      // r holds KV head r / (TP / kv_heads)). Proposed, never trusted: the
      // verifier checks it like any relation.
      for (int64_t c = 2; c < a.size; ++c)
        if (a.size % c == 0 && dt.shape[d] * ir::Dim(c) == st.shape[d])
          found.push_back({false, a.name, int64_t(d), dt.shape[d].value(), a.size / c});
    }
  }
  if (differing == 1 && found.size() == 1) return found[0];
  // No axis divides the dim: blocks of different shard counts, over the one
  // mesh axis with more than one rank.
  std::vector<const ir::MeshAxis*> multi;
  for (const auto& a : dist.mesh().axes)
    if (a.size >= 2) multi.push_back(&a);
  for (size_t d = 0; differing == 1 && found.empty() && multi.size() == 1 && d < st.shape.size(); ++d)
    if (dt.shape[d] != st.shape[d] && dt.shape[d].isConcrete() && st.shape[d].isConcrete() &&
        dt.shape[d].value() < st.shape[d].value()) {
      Proposal b{false, multi[0]->name, int64_t(d), dt.shape[d].value()};
      b.blocksOnly = true;
      return b;
    }
  std::string axes;
  for (const auto& f : found) axes += (axes.empty() ? " (" : ", ") + f.axis;
  if (found.size() > 1) {
    // Each reading as the line the file takes, to pick from: the dim's size
    // cannot tell which axis splits it, the user's launch can.
    axes += "; write the relation in a file and pass --relation), one of:";
    for (const auto& f : found) {
      std::string idx = "idx(r," + f.axis + ")" + (f.holders > 1 ? "/" + std::to_string(f.holders) : "");
      axes += (&f == &found[0] ? " `" : "; `") + std::string("for r in ") + f.axis + ": dist[r]." + name +
              " = slice(seq." + sname + ", dim=" + std::to_string(f.dim) + ", start=" + idx + "*" +
              std::to_string(f.extent) + ", end=(" + idx + "+1)*" + std::to_string(f.extent) + ")`";
    }
  }
  return makeError("unmatched-input",
                   "rank " + std::to_string(r) + ": D input '" + name + "' " + dt.str() + " vs S " + st.str() + ": " +
                       (differing != 1 ? std::to_string(differing) + " dims differ"
                                       : std::to_string(found.size()) + " mesh axes divide the dim" + axes) +
                       " (tried: same shape, one dim split over a mesh axis, shards held by consecutive ranks)");
}

// Where the ops reading leaf `v` cut its dim `dim`: the offsets (other than
// 0 and the extent) at which a slice or split takes that dim apart, followed
// through transposes, reshapes that keep the dim whole, elementwise ops
// (bias adds), and matmuls that carry it to their output (a weight's output
// features). Megatron's fused QKV is viewed per head before its split, so
// the dim is not whole there and no cut is seen: one contiguous shard.
std::set<int64_t> blockCuts(const ir::Graph& g, ir::ValueId v, int64_t dim) {
  std::set<int64_t> cuts;
  std::vector<std::pair<ir::ValueId, int64_t>> work{{v, dim}};
  std::set<std::pair<ir::ValueId, int64_t>> seen;
  auto extent = [&](ir::ValueId x, int64_t d) {
    const ir::Dim& e = g.value(x).type.shape[size_t(d)];
    return e.isConcrete() ? e.value() : -1;
  };
  // The dim of `out` that holds dim d of `in` under a reshape: same extent
  // and the same number of elements before it.
  auto reshaped = [&](ir::ValueId in, int64_t d, ir::ValueId out) -> int64_t {
    const ir::Shape &a = g.value(in).type.shape, &b = g.value(out).type.shape;
    auto before = [](const ir::Shape& s, size_t k) -> std::optional<ir::Dim> {
      return ir::numElements(ir::Shape(s.begin(), s.begin() + int64_t(k)));
    };
    auto pa = before(a, size_t(d));
    for (size_t j = 0; j < b.size(); ++j)
      if (b[j] == a[size_t(d)] && pa && before(b, j) == pa) return int64_t(j);
    return -1;
  };
  while (!work.empty()) {
    auto [x, d] = work.back();
    work.pop_back();
    if (!seen.insert({x, d}).second) continue;
    int64_t e = extent(x, d), rank = int64_t(g.value(x).type.shape.size());
    if (e < 0) continue;
    for (ir::NodeId u : g.users(x)) {
      const ir::Node& n = g.node(u);
      if (n.outputs.empty()) continue;
      ir::ValueId out = n.outputs[0];
      int64_t outRank = int64_t(g.value(out).type.shape.size());
      size_t pos = size_t(std::find(n.inputs.begin(), n.inputs.end(), x) - n.inputs.begin());
      auto follow = [&](int64_t od) {
        if (od >= 0 && od < outRank) work.push_back({out, od});
      };
      auto norm = [&](int64_t a) { return a < 0 ? a + rank : a; };
      switch (ir::opInfo(n.op).category) {
        case ir::OpCategory::Unary:
        case ir::OpCategory::Binary:
        case ir::OpCategory::Ternary:
        case ir::OpCategory::Random:
          follow(d + outRank - rank);
          continue;
        default:
          break;
      }
      switch (n.op) {
        case ir::OpKind::Transpose: {
          const auto& perm = ir::attrInts(n.attrs, "perm");
          for (size_t p = 0; p < perm.size(); ++p)
            if (perm[p] == d) follow(int64_t(p));
          break;
        }
        case ir::OpKind::Reshape:
        case ir::OpKind::Squeeze:
        case ir::OpKind::Unsqueeze:
          follow(reshaped(x, d, out));
          break;
        case ir::OpKind::MatMul:
          if (rank >= 2 && pos == 1 && d == rank - 1) follow(outRank - 1);       // weight [in, out]: features
          else if (rank >= 2 && pos == 0 && d == rank - 2) follow(outRank - 2);  // rows
          else if (d < rank - 2) follow(d + outRank - rank);                     // batch dims
          break;
        case ir::OpKind::Gemm: {
          bool ta = ir::attrInt(n.attrs, "trans_a") != 0, tb = ir::attrInt(n.attrs, "trans_b") != 0;
          if (pos == 1 && d == (tb ? 0 : 1)) follow(1);
          if (pos == 0 && d == (ta ? 1 : 0)) follow(0);
          if (pos == 2) follow(d + 2 - rank);
          break;
        }
        case ir::OpKind::Slice: {
          const auto& axes = ir::attrInts(n.attrs, "axes");
          const auto& starts = ir::attrInts(n.attrs, "starts");
          const auto& ends = ir::attrInts(n.attrs, "ends");
          for (size_t i = 0; i < starts.size(); ++i) {
            int64_t a = axes.empty() ? int64_t(i) : norm(axes[i]);
            if (a != d) continue;
            for (int64_t c : {starts[i], ends[i]}) {
              if (c < 0) c += e;
              c = std::clamp<int64_t>(c, 0, e);
              if (c > 0 && c < e) cuts.insert(c);
            }
          }
          break;
        }
        case ir::OpKind::Split: {
          if (norm(ir::attrInt(n.attrs, "axis")) != d) break;
          int64_t at = 0;
          for (int64_t sz : ir::attrInts(n.attrs, "sizes")) {
            at += sz;
            if (at > 0 && at < e) cuts.insert(at);
          }
          break;
        }
        default:
          break;
      }
    }
  }
  return cuts;
}

std::string cutsStr(const std::set<int64_t>& c) {
  std::string s;
  for (int64_t x : c) s += (s.empty() ? "" : ", ") + std::to_string(x);
  return "[" + s + "]";
}

// A sharded D input read in blocks: per block, its offset and extent in S,
// its extent on a rank, and how many consecutive ranks hold each shard.
struct Block {
  int64_t offset, extent, shard, holders;
};

// The blocks of a sharded input from the cut points of its split dim in S
// and on the D ranks; empty: one contiguous shard per rank (p as proposed).
Result<std::vector<Block>> blocksOf(const ir::Graph& seq, const std::string& sname, const ir::Program& dist,
                                    const std::vector<int64_t>& ranks, const std::string& name, const Proposal& p) {
  std::set<int64_t> sc = blockCuts(seq, *seq.findValue(sname), p.dim);
  if (sc.empty() && !p.blocksOnly) return std::vector<Block>{};
  const ir::Graph& g0 = dist.rank(ranks[0]);
  std::set<int64_t> dc = blockCuts(g0, *g0.findValue(name), p.dim);
  for (int64_t r : ranks)
    if (blockCuts(dist.rank(r), *dist.rank(r).findValue(name), p.dim) != dc)
      return makeError("unmatched-input", "D input '" + name + "' is cut differently on rank " + std::to_string(r) +
                                              " than on rank " + std::to_string(ranks[0]));
  int64_t full = seq.value(*seq.findValue(sname)).type.shape[size_t(p.dim)].value();
  int64_t axisSize = dist.mesh().axis(p.axis)->size;
  // One contiguous shard per rank: D's cuts are, on every rank, S's cuts
  // inside that rank's shard (not the union over the ranks: with q, k and v
  // of 64 rows each over 2 ranks of 96, the union {32, 64} equals D's cuts
  // while each shard holds one cut).
  bool contiguous = p.holders == 1;
  for (int64_t i = 0; contiguous && i * p.extent < full; ++i) {
    std::set<int64_t> inShard;
    for (int64_t c : sc)
      if (c > i * p.extent && c < (i + 1) * p.extent) inShard.insert(c - i * p.extent);
    contiguous = inShard == dc;
  }
  // Per block: S's cuts and D's cut the same number of blocks, and each
  // block's S extent is a multiple of its D extent that divides the axis.
  std::vector<int64_t> sb{0}, db{0};
  sb.insert(sb.end(), sc.begin(), sc.end());
  sb.push_back(full);
  db.insert(db.end(), dc.begin(), dc.end());
  db.push_back(p.extent);
  std::vector<Block> blocks;
  bool blocked = sb.size() == db.size();
  for (size_t i = 0; blocked && i + 1 < sb.size(); ++i) {
    int64_t se = sb[i + 1] - sb[i], de = db[i + 1] - db[i];
    blocked = de > 0 && se % de == 0 && axisSize % (se / de) == 0;
    if (blocked) blocks.push_back({sb[i], se, de, axisSize / (se / de)});
  }
  if (blocked && blocks.size() > 1 && !contiguous) return blocks;
  if (contiguous && !p.blocksOnly) return std::vector<Block>{};
  return makeError("unmatched-input",
                   "D input '" + name + "' needs a relation: S cuts its dim " + std::to_string(p.dim) + " at " +
                       cutsStr(sc) + ", each rank's shard at " + cutsStr(dc) +
                       ", which is " + (p.blocksOnly ? "" : "neither one contiguous shard per rank nor ") +
                       "a shard of each block over " + p.axis + "; write the relation in a file and pass --relation");
}

// for r in AXIS: dist[r].x = slice(seq.s, dim=D, start=idx(r,AXIS)*K, end=(idx(r,AXIS)+1)*K)
// (idx(r,AXIS)/H for a shard held by H consecutive ranks)
Status addRelation(RelationFile& f, const std::string& name, const std::string& sname, const Proposal& p,
                   const std::vector<Block>& blocks, const std::vector<int64_t>& ranks, int64_t world) {
  InputRelation ir;
  ir.name = name;
  bool allRanks = int64_t(ranks.size()) == world;
  if (p.replicated && allRanks) {
    ir.allRanks = true;
    ir.expr = Rel::seq(sname);
    f.inputs.push_back(ir);
    return okStatus();
  }
  if (p.replicated) {
    for (int64_t r : ranks) {
      InputRelation one = ir;
      one.rank = IntExpr::constant(r);
      one.expr = Rel::seq(sname);
      f.inputs.push_back(one);
    }
    return okStatus();
  }
  if (!allRanks)
    return makeError("unmatched-input", "D input '" + name + "' is sharded over " + p.axis + " but exists only on some ranks");
  ir.loopVar = "r";
  ir.loopDomain.group = p.axis;
  ir.rank = IntExpr::var("r");
  // A block's shard: offset + [i, i+1) * shard, with i the shard index
  // (the rank's index, over the ranks holding each shard).
  auto shardOf = [&](int64_t offset, int64_t shard, int64_t holders) {
    IntExpr idx = IntExpr::index(IntExpr::var("r"), p.axis);
    if (holders > 1) idx = idx.divC(holders);
    IntExpr start = idx * shard, end = (idx + IntExpr::constant(1)) * shard;
    if (offset != 0) {
      start = start + IntExpr::constant(offset);
      end = end + IntExpr::constant(offset);
    }
    return Rel::slice(Rel::seq(sname), p.dim, start, end);
  };
  if (blocks.empty()) {
    ir.expr = shardOf(0, p.extent, p.holders);
  } else {
    std::vector<RelPtr> parts;
    for (const Block& b : blocks) parts.push_back(shardOf(b.offset, b.shard, b.holders));
    ir.expr = Rel::concat(p.dim, std::move(parts));
  }
  f.inputs.push_back(ir);
  return okStatus();
}

}  // namespace

Result<RelationFile> inferRelations(const ir::Graph& seq, const ir::Program& dist) {
  RelationFile f;
  // D input names in first-appearance order (rank 0 first).
  std::vector<std::string> order;
  std::map<std::string, std::vector<int64_t>> ranksOf;
  for (int64_t r = 0; r < dist.worldSize(); ++r) {
    const auto& g = dist.rank(r);
    std::vector<ir::ValueId> leaves = g.inputs();
    leaves.insert(leaves.end(), g.params().begin(), g.params().end());
    for (ir::ValueId v : leaves) {
      const std::string& n = g.value(v).name;
      if (!ranksOf.count(n)) order.push_back(n);
      ranksOf[n].push_back(r);
    }
  }
  for (const auto& name : order) {
    int64_t r0 = ranksOf[name][0];
    const ir::Graph& g0 = dist.rank(r0);
    if (startsWith(name, "_tensor_constant") && g0.value(*g0.findValue(name)).kind == ir::ValueKind::Param) {
      f.unrelated.push_back({name, "module constant self." + name + " (" + g0.value(*g0.findValue(name)).type.str() +
                                       ", read at " + (readerSite(g0, name).empty() ? "?" : readerSite(g0, name)) +
                                       ") has no value in the capture: pass --fx-constant " + name +
                                       "=VALUE, or list its source site",
                             ""});
      continue;
    }
    std::string sname = name;
    if (!isLeaf(seq, name)) {
      if (!endsWith(name, "_rng"))
        return makeError("unmatched-input", "D input '" + name + "' (rank " + std::to_string(r0) +
                                                ") has no S input or parameter of the same name");
      SP_ASSIGN(sname, matchStream(seq, g0, name));
    }
    const ir::TensorType& st = seq.value(*seq.findValue(sname)).type;
    std::optional<Proposal> common;
    for (int64_t r : ranksOf[name]) {
      const auto& dt = dist.rank(r).value(*dist.rank(r).findValue(name)).type;
      SP_ASSIGN(Proposal p, propose(st, dt, dist, r, name, sname));
      if (common && (common->replicated != p.replicated || common->axis != p.axis || common->dim != p.dim ||
                     common->holders != p.holders || common->blocksOnly != p.blocksOnly))
        return makeError("unmatched-input", "D input '" + name + "' is related differently on different ranks");
      common = p;
    }
    std::vector<Block> blocks;
    if (!common->replicated) {
      SP_ASSIGN(blocks, blocksOf(seq, sname, dist, ranksOf[name], name, *common));
    }
    SP_TRY(addRelation(f, name, sname, *common, blocks, ranksOf[name], dist.worldSize()));
  }
  return f;
}

}  // namespace sp::rewrite
