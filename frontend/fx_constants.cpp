// Values of Dynamo-lifted tensor constants: flags, `x[mask] = literal` source
// lines, and the shipped table of known framework sites.
#include "frontend/fx_constants.h"

#include <charconv>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <regex>
#include <sstream>

#ifndef SP_FRONTEND_DATA_DIR
#define SP_FRONTEND_DATA_DIR "frontend/data"
#endif

namespace sp::frontend {

std::string defaultConstantSitesPath() {
  if (const char* e = std::getenv("SHARDPROOF_FX_CONSTANTS"); e) return e;
  return std::string(SP_FRONTEND_DATA_DIR) + "/tensor_constants.txt";
}

std::string FxConstantNote::str() const {
  std::string s = "tensor constant '" + name + "' (" + type.str() + ") at " + capture + ":" +
                  std::to_string(line);
  if (!value) return s + " has no known value (" + origin + ")";
  std::ostringstream v;
  v.precision(17);
  v << *value;
  return s + " = " + v.str() + " from " + origin;
}

namespace fx {

namespace {

std::optional<double> parseNumber(const std::string& t) {
  if (t == "True") return 1.0;
  if (t == "False") return 0.0;
  double v = 0;
  const char* b = t.data();
  const char* e = b + t.size();
  if (!t.empty() && *b == '+') ++b;
  auto [p, ec] = std::from_chars(b, e, v);
  if (ec != std::errc() || p != e) return std::nullopt;
  return v;
}

// Can `v` be stored in `t` exactly (as torch would when writing the literal)?
bool fits(double v, ir::DType t) {
  if (ir::isFloat(t)) return true;
  if (t == ir::DType::Bool) return v == 0 || v == 1;
  return v == double(int64_t(v));
}

bool suffixAtBoundary(const std::string& path, const std::string& suffix) {
  if (!path.ends_with(suffix)) return false;
  return path.size() == suffix.size() || path[path.size() - suffix.size() - 1] == '/';
}

}  // namespace

Result<std::vector<ConstantSite>> parseConstantSites(const std::string& text, const std::string& path) {
  std::vector<ConstantSite> out;
  std::istringstream in(text);
  std::string raw;
  std::string base = std::filesystem::path(path).filename().string();
  for (int ln = 1; std::getline(in, raw); ++ln) {
    std::string where = path + ":" + std::to_string(ln);
    std::string line = raw.substr(0, raw.find('#'));
    std::istringstream ws(line);
    std::string site, dtype, value, extra;
    if (!(ws >> site)) continue;
    if (!(ws >> dtype >> value) || (ws >> extra))
      return makeError("fx-constant-sites", "expected 'PATH:LINE DTYPE VALUE', got '" + raw + "'", where);
    size_t colon = site.rfind(':');
    int siteLine = 0;
    if (colon == std::string::npos ||
        std::from_chars(site.data() + colon + 1, site.data() + site.size(), siteLine).ec != std::errc() ||
        siteLine <= 0)
      return makeError("fx-constant-sites", "site '" + site + "' must be PATH:LINE", where);
    auto dt = ir::parseDType(dtype == "b8" ? "bool" : dtype);
    if (!dt) return makeError("fx-constant-sites", "unknown dtype '" + dtype + "'", where);
    auto v = parseNumber(value);
    if (!v || !fits(*v, *dt))
      return makeError("fx-constant-sites", "value '" + value + "' is not a " + dtype + " number", where);
    ConstantSite s{site.substr(0, colon), siteLine, *dt, *v, base + ":" + std::to_string(ln)};
    for (const auto& o : out)
      if (o.pathSuffix == s.pathSuffix && o.line == s.line && o.dtype == s.dtype)
        return makeError("fx-constant-sites", "site " + site + " " + dtype + " is listed twice (first at " +
                                                  o.where + "): a site must have one value",
                         where);
    out.push_back(std::move(s));
  }
  return out;
}

Result<std::vector<ConstantSite>> loadConstantSites(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return makeError("fx-io", "cannot read the tensor constant sites file '" + path + "'");
  std::stringstream ss;
  ss << in.rdbuf();
  return parseConstantSites(ss.str(), path);
}

std::optional<double> assignedLiteral(const std::string& code) {
  static const std::regex kAssign(
      R"(^\s*[A-Za-z_][A-Za-z0-9_.]*\s*\[[^\]=]+\]\s*=\s*([-+]?[0-9][0-9.eE+-]*|True|False)\s*(#.*)?$)");
  std::smatch m;
  if (!std::regex_match(code, m, kAssign)) return std::nullopt;
  return parseNumber(m[1].str());
}

std::optional<std::pair<double, std::string>> resolveConstant(const ConstantQuery& q,
                                                              const FxOptions& opts,
                                                              const std::vector<ConstantSite>& sites,
                                                              std::string& why) {
  std::string file = std::filesystem::path(q.capture).filename().string();
  for (const std::string& key : {file + ":" + q.attr, q.attr}) {
    auto it = opts.constantValues.find(key);
    if (it == opts.constantValues.end()) continue;
    if (!fits(it->second, q.type.dtype)) {
      why = "--fx-constant " + key + " is not a " + std::string(ir::dtypeName(q.type.dtype)) + " value";
      return std::nullopt;
    }
    return std::make_pair(it->second, "--fx-constant " + key);
  }
  std::string site = q.src.file + ":" + std::to_string(q.src.line);
  if (auto v = assignedLiteral(q.code); v && fits(*v, q.type.dtype))
    return std::make_pair(*v, "the source line " + site + ": '" + q.code + "'");
  for (const auto& s : sites)
    if (s.line == q.src.line && s.dtype == q.type.dtype && suffixAtBoundary(q.src.file, s.pathSuffix))
      return std::make_pair(s.value, "the known site " + s.pathSuffix + ":" + std::to_string(s.line) + " (" +
                                         s.where + ")");
  why = q.src.file.empty() ? "the capture gives no source line"
                           : "no --fx-constant value, no literal in '" + q.code + "' and no known site " + site;
  return std::nullopt;
}

}  // namespace fx
}  // namespace sp::frontend
