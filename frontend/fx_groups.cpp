// c10d group ids -> IR groups: the mesh file and `--fx-group` flags
// (docs/fx-import.md, "Process groups"), and the group sizes mappings use.
#include <charconv>
#include <fstream>
#include <sstream>

#include "frontend/fx_emit.h"
#include "frontend/fx_groups.h"

namespace sp::frontend {

namespace {

bool isIdent(const std::string& s) {
  if (s.empty()) return false;
  for (char c : s)
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '_' && c != '-' && c != '.') return false;
  return true;
}

std::string trim(const std::string& s) {
  size_t a = s.find_first_not_of(" \t\r");
  size_t b = s.find_last_not_of(" \t\r");
  return a == std::string::npos ? "" : s.substr(a, b - a + 1);
}

// "[0, 1] [2, 3]" -> {{0, 1}, {2, 3}}.
Result<ir::GroupPartition> parsePartition(const std::string& text) {
  ir::GroupPartition out;
  size_t p = 0;
  while ((p = text.find_first_not_of(" \t,", p)) != std::string::npos) {
    if (text[p] != '[') return makeError("fx-group-spec", "expected '[' in rank list '" + text + "'");
    size_t q = text.find(']', p);
    if (q == std::string::npos) return makeError("fx-group-spec", "missing ']' in rank list '" + text + "'");
    std::vector<int64_t> members;
    std::stringstream ss(text.substr(p + 1, q - p - 1));
    std::string tok;
    while (std::getline(ss, tok, ',')) {
      tok = trim(tok);
      int64_t r = -1;
      auto [e, ec] = std::from_chars(tok.data(), tok.data() + tok.size(), r);
      if (ec != std::errc() || e != tok.data() + tok.size() || r < 0)
        return makeError("fx-group-spec", "'" + tok + "' is not a rank in '" + text + "'");
      members.push_back(r);
    }
    if (members.empty()) return makeError("fx-group-spec", "empty rank list in '" + text + "'");
    out.push_back(std::move(members));
    p = q + 1;
  }
  return out;
}

}  // namespace

Status addGroupSpec(FxOptions& opts, const std::string& spec) {
  size_t eq = spec.find('=');
  if (eq == std::string::npos)
    return makeError("fx-group-spec", "group mapping '" + spec + "' must be ID=GROUP");
  std::string id = trim(spec.substr(0, eq)), rhs = trim(spec.substr(eq + 1));
  if (id.empty() || rhs.empty())
    return makeError("fx-group-spec", "group mapping '" + spec + "' must be ID=GROUP");
  if (opts.groups.count(id)) return makeError("fx-group-spec", "c10d group '" + id + "' is mapped twice");
  if (rhs[0] == '[') {
    SP_ASSIGN(auto part, parsePartition(rhs));
    std::string name = "c10d_" + id;
    opts.namedGroups[name] = std::move(part);
    opts.groups[id] = name;
    return okStatus();
  }
  std::stringstream ss(rhs);
  std::string axis;
  while (std::getline(ss, axis, '+'))
    if (!isIdent(axis)) return makeError("fx-group-spec", "'" + rhs + "' is not an axis name, axes joined by '+', 'world', 'self' or rank lists");
  opts.groups[id] = rhs;
  return okStatus();
}

Status parseMeshText(FxOptions& opts, const std::string& text, const std::string& path) {
  std::istringstream in(text);
  std::string raw;
  bool haveMesh = false;
  for (int ln = 1; std::getline(in, raw); ++ln) {
    std::string where = path + ":" + std::to_string(ln);
    std::string line = trim(raw.substr(0, raw.find('#')));
    if (line.empty()) continue;
    auto located = [&](Error e) { return makeError(e.id, e.message, where); };
    if (line.rfind("mesh ", 0) == 0) {
      if (haveMesh) return makeError("fx-mesh", "a second 'mesh' line", where);
      haveMesh = true;
      std::stringstream ss(line.substr(5));
      std::string ax;
      while (ss >> ax) {
        size_t eq = ax.find('=');
        int64_t n = 0;
        std::string name = eq == std::string::npos ? "" : ax.substr(0, eq);
        auto [e, ec] = std::from_chars(ax.data() + eq + 1, ax.data() + ax.size(), n);
        if (!isIdent(name) || ec != std::errc() || e != ax.data() + ax.size() || n < 1)
          return makeError("fx-mesh", "mesh axis '" + ax + "' must be NAME=SIZE with SIZE >= 1", where);
        if (opts.mesh.axis(name)) return makeError("fx-mesh", "mesh axis '" + name + "' is declared twice", where);
        opts.mesh.axes.push_back({name, n});
      }
      if (opts.mesh.axes.empty()) return makeError("fx-mesh", "'mesh' needs at least one NAME=SIZE axis", where);
    } else if (line.rfind("group ", 0) == 0) {
      if (auto st = addGroupSpec(opts, line.substr(6)); !st) return located(st.error());
    } else {
      return makeError("fx-mesh", "expected 'mesh AXIS=SIZE ...' or 'group ID = GROUP', got '" + line + "'", where);
    }
  }
  return okStatus();
}

Status loadMeshFile(FxOptions& opts, const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return makeError("fx-io", "cannot read mesh file '" + path + "'");
  std::stringstream ss;
  ss << in.rdbuf();
  return parseMeshText(opts, ss.str(), path);
}

namespace fx {

// The IR group a c10d id maps to: listed ids map as told; without any
// mapping every id is the whole world; with a mapping, an unlisted id is an
// error rather than a guess, except in a world of one rank, where every
// group can only be that rank.
Result<std::string> Emitter::groupFor(const std::string& c10dGroup) const {
  auto it = opts.groups.find(c10dGroup);
  if (it != opts.groups.end()) return it->second;
  if (opts.groups.empty()) return opts.defaultGroup;
  if (worldSize == 1) return std::string("self");
  std::string known;
  for (const auto& [id, g] : opts.groups) known += (known.empty() ? "" : ", ") + id + "=" + g;
  return error("fx-group", "c10d group '" + c10dGroup + "' is not mapped (mapped: " + known +
                               "); add --fx-group " + c10dGroup + "=AXIS or a 'group' line to the mesh file");
}

Result<int64_t> Emitter::groupSize(const std::string& group) const {
  // A capture of one rank (a sequential run) can only reach itself; the
  // mesh, which describes the distributed program, does not apply to it.
  if (group == "self" || worldSize == 1) return int64_t(1);
  ir::Mesh mesh = opts.mesh;
  if (mesh.axes.empty()) mesh.axes.push_back({"world", worldSize});
  if (mesh.worldSize() != worldSize) {
    return error("fx-group", "group '" + group + "' is not defined for a capture of " +
                                 std::to_string(worldSize) + " rank(s) under a mesh of " +
                                 std::to_string(mesh.worldSize()) + " ranks");
  }
  auto m = ir::groupMembers(mesh, opts.namedGroups, group, rank);
  if (!m) return error("fx-group", m.error().message);
  return int64_t(m->size());
}

}  // namespace fx
}  // namespace sp::frontend
