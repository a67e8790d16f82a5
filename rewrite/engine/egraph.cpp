#include "rewrite/engine/egraph.h"

#include <algorithm>
#include <limits>

namespace sp::rewrite {

namespace {
thread_local int64_t tWork = 0;
}

int64_t threadSearchWork() { return tWork; }
void addSearchWork(int64_t units) { tWork += units; }

bool Budget::past(std::chrono::steady_clock::time_point deadline) const {
  return std::chrono::steady_clock::now() > deadline || (workUntil > 0 && tWork > workUntil);
}

std::string_view stopReasonName(StopReason r) {
  switch (r) {
    case StopReason::Saturated: return "saturated";
    case StopReason::IterationLimit: return "iteration-limit";
    case StopReason::NodeLimit: return "node-limit";
    case StopReason::TimeLimit: return "time-limit";
    case StopReason::GoalReached: return "goal-reached";
  }
  return "?";
}

size_t ENodeHash::operator()(const ENode& n) const {
  uint64_t h = 1469598103934665603ull ^ uint64_t(uint32_t(n.op));
  auto mix = [&h](uint64_t v) { h = (h ^ v) * 1099511628211ull; };
  for (int64_t d : n.data) mix(uint64_t(d));
  mix(0x9e3779b97f4a7c15ull);
  for (ClassId k : n.kids) mix(uint64_t(uint32_t(k)));
  return size_t(h);
}

ClassId EGraph::find(ClassId c) const {
  while (parent_[size_t(c)] != c) {
    parent_[size_t(c)] = parent_[size_t(parent_[size_t(c)])];
    c = parent_[size_t(c)];
  }
  return c;
}

ENode EGraph::canonicalize(ENode n) const {
  for (ClassId& k : n.kids) k = find(k);
  if (n.kids.size() > 1 && isCommutative(n.op)) std::sort(n.kids.begin(), n.kids.end());
  return n;
}

std::optional<ClassId> EGraph::lookup(ENode n) const {
  n = canonicalize(std::move(n));
  auto it = memo_.find(n);
  if (it == memo_.end()) return std::nullopt;
  return find(it->second);
}

ClassId EGraph::add(ENode n, const ir::TensorType& type) {
  ++tWork;
  n = canonicalize(std::move(n));
  if (auto it = memo_.find(n); it != memo_.end()) {
    ClassId c = find(it->second);
    SP_ASSERT(classes_[size_t(c)].type == type,
              "e-node re-added with type " + type.str() + " but its class has " +
                  classes_[size_t(c)].type.str());
    return c;
  }
  ClassId id = ClassId(classes_.size());
  parent_.push_back(id);
  classes_.push_back(EClass{{n}, {}, type});
  for (ClassId k : n.kids) classes_[size_t(find(k))].parents.emplace_back(n, id);
  memo_.emplace(std::move(n), id);
  return id;
}

bool EGraph::merge(ClassId a, ClassId b) {
  a = find(a);
  b = find(b);
  if (a == b) return false;
  SP_ASSERT(classes_[size_t(a)].type == classes_[size_t(b)].type,
            "merging classes of types " + classes_[size_t(a)].type.str() + " and " +
                classes_[size_t(b)].type.str());
  // Union by size of the node lists.
  if (classes_[size_t(a)].nodes.size() < classes_[size_t(b)].nodes.size()) std::swap(a, b);
  parent_[size_t(b)] = a;
  EClass& ca = classes_[size_t(a)];
  EClass& cb = classes_[size_t(b)];
  ca.nodes.insert(ca.nodes.end(), cb.nodes.begin(), cb.nodes.end());
  ca.parents.insert(ca.parents.end(), cb.parents.begin(), cb.parents.end());
  cb.nodes.clear();
  cb.parents.clear();
  pending_.push_back(a);
  return true;
}

void EGraph::rebuild() {
  while (!pending_.empty()) {
    std::vector<ClassId> todo;
    todo.swap(pending_);
    for (ClassId& c : todo) c = find(c);
    std::sort(todo.begin(), todo.end());
    todo.erase(std::unique(todo.begin(), todo.end()), todo.end());
    for (ClassId c : todo) {
      auto parents = std::move(classes_[size_t(find(c))].parents);
      // Re-canonicalize parents: congruent parents merge.
      std::unordered_map<ENode, ClassId, ENodeHash> seen;
      for (auto& [pn, pc] : parents) {
        memo_.erase(pn);
        ENode cn = canonicalize(pn);
        auto it = seen.find(cn);
        if (it != seen.end()) {
          merge(it->second, pc);
        } else {
          seen.emplace(cn, find(pc));
        }
      }
      std::vector<std::pair<ENode, ClassId>> fresh;
      for (auto& [cn, pc] : seen) {
        ClassId r = find(pc);
        auto [it, inserted] = memo_.emplace(cn, r);
        if (!inserted && find(it->second) != r) {
          merge(it->second, r);
          r = find(r);
        }
        fresh.emplace_back(cn, r);
      }
      auto& dst = classes_[size_t(find(c))].parents;
      dst.insert(dst.end(), fresh.begin(), fresh.end());
    }
  }
  // Canonicalize and deduplicate the node lists of canonical classes.
  for (size_t i = 0; i < classes_.size(); ++i) {
    if (find(ClassId(i)) != ClassId(i)) continue;
    auto& ns = classes_[i].nodes;
    for (auto& n : ns) n = canonicalize(n);
    std::sort(ns.begin(), ns.end(), [](const ENode& x, const ENode& y) {
      return std::tie(x.op, x.data, x.kids) < std::tie(y.op, y.data, y.kids);
    });
    ns.erase(std::unique(ns.begin(), ns.end()), ns.end());
  }
}

size_t EGraph::numClasses() const {
  size_t n = 0;
  for (size_t i = 0; i < classes_.size(); ++i) n += find(ClassId(i)) == ClassId(i);
  return n;
}

std::vector<ClassId> EGraph::canonicalClasses() const {
  std::vector<ClassId> out;
  for (size_t i = 0; i < classes_.size(); ++i)
    if (find(ClassId(i)) == ClassId(i)) out.push_back(ClassId(i));
  return out;
}

bool EGraph::matchData(const std::vector<PatData>& pd, const std::vector<int64_t>& d,
                       Subst& s) const {
  if (pd.size() != d.size()) return false;
  for (size_t i = 0; i < pd.size(); ++i) {
    if (!pd[i].isVar) {
      if (pd[i].value != d[i]) return false;
      continue;
    }
    auto& slot = s.ints[size_t(pd[i].value)];
    if (slot && *slot != d[i]) return false;
    slot = d[i];
  }
  return true;
}

void EGraph::matchAt(const EPattern& p, ClassId c, Subst s, std::vector<Subst>& out) const {
  c = find(c);
  if (p.isVar) {
    ClassId& slot = s.classes[size_t(p.var)];
    if (slot >= 0 && find(slot) != c) return;
    slot = c;
    out.push_back(std::move(s));
    return;
  }
  for (const ENode& n : classes_[size_t(c)].nodes) {
    if (n.op != p.op || n.kids.size() != p.kids.size()) continue;
    Subst base = s;
    if (!matchData(p.data, n.data, base)) continue;
    // Match children left to right, threading substitutions; a binary
    // commutative node in both orders (its stored order is by class id).
    bool both = n.kids.size() == 2 && isCommutative(n.op) && n.kids[0] != n.kids[1];
    for (int order = 0; order < (both ? 2 : 1); ++order) {
      std::vector<Subst> partial{base};
      for (size_t k = 0; k < p.kids.size() && !partial.empty(); ++k) {
        std::vector<Subst> next;
        for (auto& ps : partial) matchAt(p.kids[k], n.kids[order ? 1 - k : k], std::move(ps), next);
        partial = std::move(next);
      }
      for (auto& ps : partial) out.push_back(std::move(ps));
    }
  }
}

std::vector<std::pair<ClassId, Subst>> EGraph::match(const EPattern& p, int numClassVars,
                                                     int numIntVars) const {
  std::vector<std::pair<ClassId, Subst>> out;
  Subst empty{std::vector<ClassId>(size_t(numClassVars), -1),
              std::vector<std::optional<int64_t>>(size_t(numIntVars))};
  for (ClassId c : canonicalClasses()) {
    std::vector<Subst> found;
    matchAt(p, c, empty, found);
    for (auto& s : found) out.emplace_back(c, std::move(s));
  }
  return out;
}

std::optional<ClassId> EGraph::instantiate(const EPattern& p, const Subst& s, const TypeFn& typeOf) {
  if (p.isVar) {
    ClassId c = s.classes[size_t(p.var)];
    SP_ASSERT(c >= 0, "pattern variable unbound at instantiation");
    return find(c);
  }
  ENode n;
  n.op = p.op;
  for (const auto& d : p.data) {
    if (!d.isVar) {
      n.data.push_back(d.value);
      continue;
    }
    const auto& v = s.ints[size_t(d.value)];
    SP_ASSERT(v.has_value(), "integer pattern variable unbound at instantiation");
    n.data.push_back(*v);
  }
  for (const auto& k : p.kids) {
    auto c = instantiate(k, s, typeOf);
    if (!c) return std::nullopt;
    n.kids.push_back(*c);
  }
  if (auto existing = lookup(n)) return existing;
  auto t = typeOf(n, *this);
  if (!t) return std::nullopt;
  return add(std::move(n), *t);
}

std::map<ClassId, std::pair<double, ENode>> EGraph::extract(const CostFn& cost) const {
  std::map<ClassId, std::pair<double, ENode>> best;
  // Bellman-Ford style relaxation until no class improves.
  bool changed = true;
  while (changed) {
    changed = false;
    for (ClassId c : canonicalClasses()) {
      for (const ENode& n : classes_[size_t(c)].nodes) {
        std::vector<double> kidCosts;
        bool ok = true;
        for (ClassId k : n.kids) {
          auto it = best.find(find(k));
          if (it == best.end()) { ok = false; break; }
          kidCosts.push_back(it->second.first);
        }
        if (!ok) continue;
        auto cst = cost(n, kidCosts);
        if (!cst) continue;
        auto it = best.find(c);
        if (it == best.end() || *cst < it->second.first - 1e-12) {
          best[c] = {*cst, n};
          changed = true;
        }
      }
    }
  }
  return best;
}

std::string EGraph::canonicalText(int32_t leafOp, const std::vector<ClassId>& roots,
                                  std::vector<std::vector<int64_t>>& leaves) const {
  std::vector<int32_t> pos(classes_.size(), -1);
  std::vector<ClassId> order = canonicalClasses();
  for (size_t i = 0; i < order.size(); ++i) pos[size_t(order[i])] = int32_t(i);
  std::map<std::vector<int64_t>, size_t> leafPos;
  std::string out;
  out.reserve(order.size() * 48);
  auto num = [&out](int64_t v) { out += std::to_string(v); out += ','; };
  for (ClassId c : order) {
    const EClass& ec = classes_[size_t(c)];
    out += ec.type.str();
    for (const ENode& n : ec.nodes) {
      out += '(';
      num(n.op);
      if (n.op == leafOp) {
        auto [it, fresh] = leafPos.emplace(n.data, leaves.size());
        if (fresh) leaves.push_back(n.data);
        out += 'L';
        num(int64_t(it->second));
      } else {
        for (int64_t d : n.data) num(d);
      }
      out += '|';
      for (ClassId k : n.kids) num(pos[size_t(find(k))]);
      out += ')';
    }
    out += ';';
  }
  out += "roots:";
  for (ClassId r : roots) num(pos[size_t(find(r))]);
  return out;
}

}  // namespace sp::rewrite
