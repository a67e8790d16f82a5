// Decomposition files: parsing, the library, and inlining a decomposition
// at a call (arguments bound, `${...}` substituted, the body parsed as a
// text IR graph and its nodes copied into the capture's graph).
#include "frontend/fx_decomp.h"

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>

#include "frontend/fx_decomp_expr.h"
#include "frontend/fx_ops.h"
#include "ir/text.h"

#ifndef SP_DECOMP_DIR
#define SP_DECOMP_DIR "frontend/decomp"
#endif

namespace sp::frontend::fx {

namespace fs = std::filesystem;

namespace {

std::string trim(const std::string& s) {
  size_t a = s.find_first_not_of(" \t\r");
  size_t b = s.find_last_not_of(" \t\r");
  return a == std::string::npos ? "" : s.substr(a, b - a + 1);
}

std::vector<std::string> splitList(const std::string& s) {
  std::vector<std::string> out;
  std::stringstream ss(s);
  std::string item;
  while (std::getline(ss, item, ',')) out.push_back(trim(item));
  return out;
}

bool isName(const std::string& s) {
  if (s.empty() || std::isdigit(static_cast<unsigned char>(s[0]))) return false;
  return std::all_of(s.begin(), s.end(), [](unsigned char c) { return std::isalnum(c) || c == '_'; });
}

// "%x" -> "x"; "" when not a %name.
std::string valueName(const std::string& s) { return s.size() > 1 && s[0] == '%' && isName(s.substr(1)) ? s.substr(1) : ""; }

Status parseHeaderLine(Decomposition& d, const std::string& key, const std::string& rest,
                       const std::string& where) {
  auto bad = [&](const std::string& m) { return makeError("fx-decomp-syntax", m, where); };
  if (key == "args") {
    for (const auto& a : splitList(rest)) {
      DecompArg arg;
      std::string n = trim(a.substr(0, a.find('=')));
      if (a.find('=') != std::string::npos) arg.dflt = trim(a.substr(a.find('=') + 1));
      arg.tensor = !n.empty() && n[0] == '%';
      // `%result|out`: one argument under several names (schemas differ by version).
      for (size_t bar; (bar = n.rfind('|')) != std::string::npos; n = trim(n.substr(0, bar))) {
        std::string alias = trim(n.substr(bar + 1));
        if (!isName(alias)) return bad("bad argument alias '" + alias + "' in '" + a + "'");
        arg.aliases.insert(arg.aliases.begin(), alias);
      }
      arg.name = arg.tensor ? valueName(n) : n;
      if (!isName(arg.name)) return bad("bad argument '" + a + "' (expected %tensor or name [= default])");
      if (arg.tensor && arg.dflt) return bad("tensor argument '" + n + "' cannot have a default");
      d.args.push_back(std::move(arg));
    }
  } else if (key == "outputs") {
    for (const auto& o : splitList(rest)) {
      if (o == "None") {  // a result slot the kernel leaves empty; reading it is an error
        d.outputs.emplace_back();
        continue;
      }
      if (valueName(o).empty()) return bad("output '" + o + "' must be a %value of the body or None");
      d.outputs.push_back(valueName(o));
    }
  } else if (key == "mutates") {
    for (const auto& m : splitList(rest)) {
      size_t arrow = m.find("->");
      std::string a = trim(m.substr(0, arrow)), v = arrow == std::string::npos ? "" : valueName(trim(m.substr(arrow + 2)));
      if (!isName(a) || v.empty()) return bad("'" + m + "' must be ARG -> %value");
      d.mutates.emplace_back(a, v);
    }
  } else if (key == "require") {
    size_t colon = rest.rfind(" : ");
    if (colon == std::string::npos) return bad("require needs 'EXPR : message'");
    std::string msg = trim(rest.substr(colon + 3));
    if (msg.size() >= 2 && msg.front() == '"' && msg.back() == '"') msg = msg.substr(1, msg.size() - 2);
    d.requires_.emplace_back(trim(rest.substr(0, colon)), msg);
  } else {
    return bad("unknown header line '" + key + "' (expected args, outputs, mutates, require or '{')");
  }
  return okStatus();
}

Status checkDecomp(const Decomposition& d) {
  std::string where = d.file + ":" + std::to_string(d.line);
  std::set<std::string> names;
  for (const auto& a : d.args) {
    std::vector<std::string> all = a.aliases;
    all.insert(all.begin(), a.name);
    for (const auto& n : all)
      if (!names.insert(n).second)
        return makeError("fx-decomp-syntax", "argument name '" + n + "' is declared twice", where);
  }
  if (d.outputs.empty() && d.mutates.empty())
    return makeError("fx-decomp-syntax", "decomposition of " + d.op + " has no outputs and mutates nothing", where);
  for (const auto& mutated : d.mutates) {
    const std::string& a = mutated.first;  // not a structured binding: clang 14 cannot capture one
    bool found = std::any_of(d.args.begin(), d.args.end(), [&](const DecompArg& x) { return x.name == a && x.tensor; });
    if (!found) return makeError("fx-decomp-syntax", "mutated '" + a + "' is not a tensor argument", where);
  }
  return okStatus();
}

}  // namespace

const DecompArg* Decomposition::findArg(const std::string& name) const {
  for (const auto& a : args)
    if (a.name == name || std::find(a.aliases.begin(), a.aliases.end(), name) != a.aliases.end()) return &a;
  return nullptr;
}

Result<std::vector<Decomposition>> parseDecompFile(const std::string& text, const std::string& path) {
  std::vector<Decomposition> out;
  std::istringstream in(text);
  std::string raw;
  std::optional<Decomposition> cur;
  bool inBody = false;
  int ln = 0;
  while (std::getline(in, raw)) {
    ++ln;
    std::string where = path + ":" + std::to_string(ln);
    std::string line = trim(inBody ? raw : raw.substr(0, raw.find('#')));
    if (inBody) {
      if (line == "}") {
        inBody = false;
        SP_TRY(checkDecomp(*cur));
        out.push_back(std::move(*cur));
        cur.reset();
      } else {
        cur->body += raw + "\n";
      }
      continue;
    }
    if (line.empty()) continue;
    std::string key = line.substr(0, line.find(' '));
    std::string rest = trim(line.substr(key.size()));
    if (key == "decomp") {
      if (cur) return makeError("fx-decomp-syntax", "'decomp' before the body '{' of " + cur->op, where);
      if (rest.empty() || rest.find(' ') != std::string::npos)
        return makeError("fx-decomp-syntax", "expected 'decomp NAMESPACE.OP.OVERLOAD'", where);
      cur.emplace();
      cur->op = rest;
      cur->file = path;
      cur->line = ln;
    } else if (!cur) {
      return makeError("fx-decomp-syntax", "expected 'decomp NAMESPACE.OP.OVERLOAD', got '" + line + "'", where);
    } else if (line == "{") {
      inBody = true;
      cur->bodyLine = ln + 1;
    } else {
      SP_TRY(parseHeaderLine(*cur, key, rest, where));
    }
  }
  if (cur) return makeError("fx-decomp-syntax", "decomposition of " + cur->op + " has no closing '}' line",
                            path + ":" + std::to_string(cur->line));
  return out;
}

std::string defaultDecompDir() {
  if (const char* e = std::getenv("SHARDPROOF_DECOMP_DIR"); e && *e) return e;
  return SP_DECOMP_DIR;
}

Result<DecompLibrary> DecompLibrary::load(const std::vector<std::string>& dirs) {
  DecompLibrary lib;
  for (const auto& dir : dirs) {
    std::error_code ec;
    std::vector<std::string> files;
    for (const auto& ent : fs::directory_iterator(dir, ec))
      if (ent.is_regular_file() && ent.path().extension() == ".decomp") files.push_back(ent.path().string());
    if (ec) return makeError("fx-decomp-io", "cannot list decomposition directory '" + dir + "': " + ec.message());
    std::sort(files.begin(), files.end());
    std::map<std::string, std::string> here;  // op -> where, within this directory
    for (const auto& f : files) {
      std::ifstream in(f, std::ios::binary);
      std::stringstream ss;
      ss << in.rdbuf();
      if (!in) return makeError("fx-decomp-io", "cannot read decomposition file '" + f + "'");
      SP_ASSIGN(auto ds, parseDecompFile(ss.str(), f));
      for (auto& d : ds) {
        std::string where = d.file + ":" + std::to_string(d.line);
        if (findOpMapping(d.op))
          return makeError("fx-decomp-duplicate", d.op + " is mapped by the importer itself; a decomposition cannot replace it", where);
        if (auto it = here.find(d.op); it != here.end())
          return makeError("fx-decomp-duplicate", d.op + " is declared twice (first at " + it->second + ")", where);
        here[d.op] = where;
        lib.byOp_.emplace(d.op, std::move(d));  // earlier directories win
      }
    }
  }
  return lib;
}

const Decomposition* DecompLibrary::find(const std::string& op) const {
  auto it = byOp_.find(op);
  return it == byOp_.end() ? nullptr : &it->second;
}

std::vector<std::string> DecompLibrary::ops() const {
  std::vector<std::string> out;
  for (const auto& [op, _] : byOp_) out.push_back(op);
  return out;
}

}  // namespace sp::frontend::fx
