#include "frontend/fx_partial.h"

#include <algorithm>

namespace sp::frontend {

std::string FxDroppedOutput::str() const {
  return "output '" + name + "' was left out: it depends on " + op + " (node '" + node + "') at " + location +
         ", whose result size depends on tensor values";
}

namespace fx {

size_t DroppedValues::addCause(DropCause c) {
  causes_.push_back(std::move(c));
  return causes_.size() - 1;
}

void DroppedValues::drop(const std::string& name, size_t cause) {
  auto [it, fresh] = dropped_.emplace(name, cause);
  if (!fresh) it->second = std::min(it->second, cause);
}

std::optional<size_t> DroppedValues::causeOf(const std::string& name) const {
  auto it = dropped_.find(name);
  if (it == dropped_.end()) return std::nullopt;
  return it->second;
}

std::optional<size_t> DroppedValues::reads(const Expr& v) const {
  std::optional<size_t> best;
  auto note = [&](const std::string& name) {
    if (auto c = causeOf(name); c && (!best || *c < *best)) best = c;
  };
  if (v.kind == Expr::Kind::Name) note(v.s);
  if ((v.kind == Expr::Kind::Call || v.kind == Expr::Kind::Dotted) && v.s.find('.') != std::string::npos)
    note(v.s.substr(0, v.s.find('.')));
  for (const auto& i : v.items)
    if (auto c = reads(i); c && (!best || *c < *best)) best = c;
  for (const auto& [k, x] : v.kwargs)
    if (auto c = reads(x); c && (!best || *c < *best)) best = c;
  return best;
}

std::optional<std::string> atenMutatedArg(const Expr& v) {
  if (v.kind != Expr::Kind::Call || v.s.rfind("torch.ops.", 0) != 0 || v.items.empty() ||
      v.items[0].kind != Expr::Kind::Name)
    return std::nullopt;
  // torch.ops.<ns>.<op>[.<overload>]
  std::string rest = v.s.substr(10);
  size_t a = rest.find('.');
  if (a == std::string::npos) return std::nullopt;
  std::string op = rest.substr(a + 1, rest.find('.', a + 1) - a - 1);
  if (op.size() < 2 || op.back() != '_') return std::nullopt;
  return v.items[0].s;
}

bool isCollectiveCall(const Expr& v) {
  if (v.kind != Expr::Kind::Call) return false;
  if (v.s.find("wait_tensor") != std::string::npos) return false;
  return v.s.find("c10d") != std::string::npos || v.s.find("torch.distributed") != std::string::npos;
}

}  // namespace fx
}  // namespace sp::frontend
