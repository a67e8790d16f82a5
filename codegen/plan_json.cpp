// The JSON form of a plan (docs/plan.md). Types and attribute values are
// strings in the text IR's literal syntax, parsed by the same reader.
#include <nlohmann/json.hpp>

#include "codegen/plan.h"
#include "ir/text.h"
#include "ir/text_reader.h"

namespace sp::codegen {

namespace {

using nlohmann::json;
using nlohmann::ordered_json;

ordered_json locJson(const ir::SourceLoc& l) {
  ordered_json j = ordered_json::object();
  if (!l.file.empty()) j["file"] = l.file;
  if (l.line > 0) j["line"] = l.line;
  if (!l.detail.empty()) j["detail"] = l.detail;
  return j;
}

}  // namespace

std::string printPlanJson(const Plan& p) {
  ordered_json j;
  j["format"] = "shardproof-plan";
  j["version"] = kPlanVersion;
  j["program"] = p.program;
  j["rank"] = p.rank;
  j["world"] = p.world;
  j["mesh"] = ordered_json::array();
  for (const auto& a : p.mesh.axes) j["mesh"].push_back({{"name", a.name}, {"size", a.size}});
  j["groups"] = ordered_json::object();
  for (const auto& [n, part] : p.groups) j["groups"][n] = part;
  j["bindings"] = ordered_json::object();
  for (const auto& [n, v] : p.bindings) j["bindings"][n] = v;
  j["arena_bytes"] = p.arenaBytes;
  j["streams"] = p.streams;
  j["buffers"] = ordered_json::array();
  for (const PlanBuffer& b : p.buffers) {
    ordered_json bj{{"name", b.name}, {"type", ir::formatType(b.type)}, {"kind", bufferKindName(b.kind)},
                    {"offset", b.offset}, {"bytes", b.bytes}};
    if (!b.dataFile.empty()) bj["data"] = b.dataFile;
    j["buffers"].push_back(std::move(bj));
  }
  j["steps"] = ordered_json::array();
  for (const PlanStep& s : p.steps) {
    ordered_json sj{{"kind", stepKindName(s.kind)}, {"stream", s.stream}};
    if (s.kind == StepKind::Wait) {
      sj["for"] = s.waitFor;
      j["steps"].push_back(std::move(sj));
      continue;
    }
    sj["name"] = s.name;
    sj["op"] = ir::opName(s.op);
    sj["inputs"] = ordered_json::array();
    for (int b : s.inputs) sj["inputs"].push_back(p.buffers[size_t(b)].name);
    sj["outputs"] = ordered_json::array();
    for (int b : s.outputs) sj["outputs"].push_back(p.buffers[size_t(b)].name);
    sj["attrs"] = ordered_json::object();
    for (const auto& [n, v] : s.attrs) {
      if (s.kind == StepKind::Collective && n == "group") continue;
      sj["attrs"][n] = ir::formatAttr(v);
    }
    if (s.kind == StepKind::Collective) {
      sj["comm"] = ir::attrStr(s.attrs, "group");
      sj["members"] = s.members;
    }
    if (s.kind == StepKind::Send || s.kind == StepKind::Recv) sj["pair"] = {{"rank", s.pairRank}, {"step", s.pairStep}};
    if (!s.loc.empty()) sj["loc"] = locJson(s.loc);
    j["steps"].push_back(std::move(sj));
  }
  j["outputs"] = ordered_json::array();
  for (int o : p.outputs) j["outputs"].push_back(p.buffers[size_t(o)].name);
  // Names and locations are bytes; JSON strings are UTF-8: invalid bytes
  // become U+FFFD (the text form keeps them).
  return j.dump(1, ' ', false, ordered_json::error_handler_t::replace) + "\n";
}

namespace {

// Typed access to a parsed document; errors carry the JSON path.
class JsonReader {
 public:
  explicit JsonReader(std::string file) : file_(std::move(file)) {}

  Error err(const std::string& path, const std::string& msg) const {
    return makeError("bad-plan", path + ": " + msg, file_);
  }
  Result<const json*> field(const json& obj, const std::string& path, const char* key, bool optional = false) const {
    if (!obj.is_object()) return err(path, "expected an object");
    auto it = obj.find(key);
    if (it == obj.end()) {
      if (optional) return static_cast<const json*>(nullptr);
      return err(path, "missing field '" + std::string(key) + "'");
    }
    return &*it;
  }
  Result<int64_t> integer(const json& j, const std::string& path, int64_t lo = 0, int64_t hi = INT64_MAX) const {
    if (!j.is_number_integer()) return err(path, "expected an integer");
    if (j.is_number_unsigned() && j.get<uint64_t>() > uint64_t(INT64_MAX)) return err(path, "integer out of range");
    int64_t v = j.get<int64_t>();
    if (v < lo || v > hi) return err(path, std::to_string(v) + " is out of range [" + std::to_string(lo) + ", " + std::to_string(hi) + "]");
    return v;
  }
  Result<std::string> string(const json& j, const std::string& path) const {
    if (!j.is_string()) return err(path, "expected a string");
    return j.get<std::string>();
  }
  Result<int64_t> intField(const json& obj, const std::string& path, const char* key, int64_t lo = 0,
                           int64_t hi = INT64_MAX) const {
    SP_ASSIGN(const json* j, field(obj, path, key));
    return integer(*j, path + "." + key, lo, hi);
  }
  Result<std::string> strField(const json& obj, const std::string& path, const char* key) const {
    SP_ASSIGN(const json* j, field(obj, path, key));
    return string(*j, path + "." + key);
  }
  Result<std::vector<int64_t>> ranks(const json& j, const std::string& path) const {
    if (!j.is_array()) return err(path, "expected an array of ranks");
    std::vector<int64_t> out;
    for (size_t i = 0; i < j.size(); ++i) {
      SP_ASSIGN(int64_t r, integer(j[i], path + "[" + std::to_string(i) + "]", 0, int64_t(1) << 20));
      out.push_back(r);
    }
    return out;
  }

  // A text IR literal in a string: a type or an attribute value of `op`.
  template <typename F>
  auto literal(const std::string& text, const std::string& path, F read) const -> decltype(read(std::declval<ir::text::TokenReader&>())) {
    auto toks = ir::text::lex(text, path);
    if (!toks) return err(path, toks.error().message);
    ir::text::TokenReader r(std::move(*toks), path);
    auto v = read(r);
    if (!v) return err(path, v.error().message);
    if (r.peek().kind != ir::text::Tok::Eof) return err(path, "unexpected " + ir::text::describe(r.peek()) + " after the value");
    return v;
  }

 private:
  std::string file_;
};

Result<json> parseJson(const std::string& text, const std::string& file) {
  json j = json::parse(text, nullptr, false);
  if (!j.is_discarded()) return j;
  // Re-parse only to locate the error: nlohmann reports its byte offset.
  size_t byte = 0;
  std::string what = "invalid JSON";
  try {
    json again = json::parse(text);
    (void)again;
  } catch (const json::parse_error& e) {
    byte = e.byte;
    what = e.what();
    if (auto k = what.find("syntax error"); k != std::string::npos) what = what.substr(k);
  }
  int line = 1, col = 1;
  for (size_t i = 0; i + 1 < byte && i < text.size(); ++i) {
    if (text[i] == '\n') { ++line; col = 1; } else { ++col; }
  }
  return makeError("bad-plan", what, file + ":" + std::to_string(line) + ":" + std::to_string(col));
}

Result<PlanStep> stepFromJson(const JsonReader& in, const json& sj, const std::string& at, const Plan& p) {
  PlanStep s;
  SP_ASSIGN(std::string kind, in.strField(sj, at, "kind"));
  SP_ASSIGN(int64_t stream, in.intField(sj, at, "stream", 0, 63));
  s.stream = int(stream);
  if (kind == "wait") {
    s.kind = StepKind::Wait;
    SP_ASSIGN(int64_t f, in.intField(sj, at, "for", 0, 63));
    s.waitFor = int(f);
    return s;
  }
  if (kind == "kernel") s.kind = StepKind::Kernel;
  else if (kind == "collective") s.kind = StepKind::Collective;
  else if (kind == "send") s.kind = StepKind::Send;
  else if (kind == "recv") s.kind = StepKind::Recv;
  else return in.err(at + ".kind", "'" + kind + "' is not kernel, collective, send, recv or wait");
  SP_ASSIGN(s.name, in.strField(sj, at, "name"));
  SP_ASSIGN(std::string opName, in.strField(sj, at, "op"));
  auto op = ir::opByName(opName);
  if (!op) return in.err(at + ".op", "unknown op '" + opName + "'");
  s.op = *op;
  for (const char* key : {"inputs", "outputs"}) {
    SP_ASSIGN(const json* list, in.field(sj, at, key));
    if (!list->is_array()) return in.err(at + "." + key, "expected an array of buffer names");
    for (size_t i = 0; i < list->size(); ++i) {
      std::string path = at + "." + key + "[" + std::to_string(i) + "]";
      SP_ASSIGN(std::string n, in.string((*list)[i], path));
      auto b = p.findBuffer(n);
      if (!b) return in.err(path, "no buffer named '" + n + "'");
      (std::string(key) == "inputs" ? s.inputs : s.outputs).push_back(*b);
    }
  }
  SP_ASSIGN(const json* attrs, in.field(sj, at, "attrs"));
  if (!attrs->is_object()) return in.err(at + ".attrs", "expected an object");
  const ir::OpInfo& info = ir::opInfo(s.op);
  for (const auto& [n, v] : attrs->items()) {
    std::string path = at + ".attrs." + n;
    const ir::AttrSpec* spec = info.attr(n);
    if (!spec || (s.kind == StepKind::Collective && n == "group"))
      return in.err(path, "no attribute '" + n + "' for " + opName);
    SP_ASSIGN(std::string text, in.string(v, path));
    SP_ASSIGN(ir::AttrValue av, in.literal(text, path, [&](ir::text::TokenReader& r) { return r.attrValue(*spec, info.name); }));
    s.attrs[n] = std::move(av);
  }
  if (s.kind == StepKind::Collective) {
    SP_ASSIGN(std::string comm, in.strField(sj, at, "comm"));
    s.attrs["group"] = comm;
    SP_ASSIGN(const json* members, in.field(sj, at, "members"));
    SP_ASSIGN(s.members, in.ranks(*members, at + ".members"));
  }
  auto complete = ir::completeAttrs(s.op, s.attrs);
  if (!complete) return in.err(at + ".attrs", complete.error().message);
  s.attrs = std::move(*complete);
  if (s.kind == StepKind::Send || s.kind == StepKind::Recv) {
    SP_ASSIGN(const json* pair, in.field(sj, at, "pair"));
    SP_ASSIGN(int64_t pr, in.intField(*pair, at + ".pair", "rank", 0, int64_t(1) << 20));
    SP_ASSIGN(int64_t ps, in.intField(*pair, at + ".pair", "step", 0, int64_t(1) << 30));
    s.pairRank = int(pr);
    s.pairStep = int(ps);
  }
  SP_ASSIGN(const json* loc, in.field(sj, at, "loc", true));
  if (loc) {
    if (!loc->is_object()) return in.err(at + ".loc", "expected an object");
    SP_ASSIGN(const json* f, in.field(*loc, at + ".loc", "file", true));
    SP_ASSIGN(const json* l, in.field(*loc, at + ".loc", "line", true));
    SP_ASSIGN(const json* d, in.field(*loc, at + ".loc", "detail", true));
    if (f) {
      SP_ASSIGN(s.loc.file, in.string(*f, at + ".loc.file"));
    }
    if (l) {
      SP_ASSIGN(int64_t line, in.integer(*l, at + ".loc.line", 0, INT32_MAX));
      s.loc.line = int(line);
    }
    if (d) {
      SP_ASSIGN(s.loc.detail, in.string(*d, at + ".loc.detail"));
    }
  }
  return s;
}

}  // namespace

Result<Plan> parsePlanJson(const std::string& text, const std::string& file) {
  SP_ASSIGN(json j, parseJson(text, file));
  JsonReader in(file);
  Plan p;
  p.file = file;
  SP_ASSIGN(std::string format, in.strField(j, "", "format"));
  if (format != "shardproof-plan") return in.err(".format", "'" + format + "' is not shardproof-plan");
  SP_ASSIGN(int64_t version, in.intField(j, "", "version"));
  if (version != kPlanVersion) return in.err(".version", "plan format version " + std::to_string(version) + " is not " + std::to_string(kPlanVersion));
  SP_ASSIGN(p.program, in.strField(j, "", "program"));
  SP_ASSIGN(p.rank, in.intField(j, "", "rank", 0, int64_t(1) << 20));
  SP_ASSIGN(p.world, in.intField(j, "", "world", 1, int64_t(1) << 20));
  SP_ASSIGN(const json* mesh, in.field(j, "", "mesh"));
  if (!mesh->is_array()) return in.err(".mesh", "expected an array");
  for (size_t i = 0; i < mesh->size(); ++i) {
    std::string at = ".mesh[" + std::to_string(i) + "]";
    ir::MeshAxis a;
    SP_ASSIGN(a.name, in.strField((*mesh)[i], at, "name"));
    SP_ASSIGN(a.size, in.intField((*mesh)[i], at, "size", 1, int64_t(1) << 20));
    p.mesh.axes.push_back(std::move(a));
  }
  SP_ASSIGN(const json* groups, in.field(j, "", "groups"));
  if (!groups->is_object()) return in.err(".groups", "expected an object");
  for (const auto& [n, part] : groups->items()) {
    std::string at = ".groups." + n;
    if (!part.is_array()) return in.err(at, "expected an array of rank lists");
    for (size_t i = 0; i < part.size(); ++i) {
      SP_ASSIGN(auto rs, in.ranks(part[i], at + "[" + std::to_string(i) + "]"));
      p.groups[n].push_back(std::move(rs));
    }
  }
  SP_ASSIGN(const json* binds, in.field(j, "", "bindings"));
  if (!binds->is_object()) return in.err(".bindings", "expected an object");
  for (const auto& [n, v] : binds->items()) {
    SP_ASSIGN(p.bindings[n], in.integer(v, ".bindings." + n, 0, ir::kMaxElements));
  }
  SP_ASSIGN(p.arenaBytes, in.intField(j, "", "arena_bytes"));
  SP_ASSIGN(int64_t streams, in.intField(j, "", "streams", 1, 64));
  p.streams = int(streams);
  SP_ASSIGN(const json* bufs, in.field(j, "", "buffers"));
  if (!bufs->is_array()) return in.err(".buffers", "expected an array");
  for (size_t i = 0; i < bufs->size(); ++i) {
    std::string at = ".buffers[" + std::to_string(i) + "]";
    const json& bj = (*bufs)[i];
    PlanBuffer b;
    SP_ASSIGN(b.name, in.strField(bj, at, "name"));
    if (p.findBuffer(b.name)) return in.err(at + ".name", "buffer '" + b.name + "' is declared twice");
    SP_ASSIGN(std::string type, in.strField(bj, at, "type"));
    SP_ASSIGN(b.type, in.literal(type, at + ".type", [](ir::text::TokenReader& r) { return r.type(); }));
    SP_ASSIGN(std::string kind, in.strField(bj, at, "kind"));
    if (kind == "input") b.kind = BufferKind::Input;
    else if (kind == "param") b.kind = BufferKind::Param;
    else if (kind == "temp") b.kind = BufferKind::Temp;
    else return in.err(at + ".kind", "'" + kind + "' is not input, param or temp");
    SP_ASSIGN(b.offset, in.intField(bj, at, "offset"));
    SP_ASSIGN(b.bytes, in.intField(bj, at, "bytes"));
    SP_ASSIGN(const json* data, in.field(bj, at, "data", true));
    if (data) {
      SP_ASSIGN(b.dataFile, in.string(*data, at + ".data"));
    }
    p.buffers.push_back(std::move(b));
  }
  SP_ASSIGN(const json* steps, in.field(j, "", "steps"));
  if (!steps->is_array()) return in.err(".steps", "expected an array");
  for (size_t i = 0; i < steps->size(); ++i) {
    SP_ASSIGN(PlanStep s, stepFromJson(in, (*steps)[i], ".steps[" + std::to_string(i) + "]", p));
    p.steps.push_back(std::move(s));
  }
  SP_ASSIGN(const json* outs, in.field(j, "", "outputs"));
  if (!outs->is_array()) return in.err(".outputs", "expected an array");
  for (size_t i = 0; i < outs->size(); ++i) {
    std::string at = ".outputs[" + std::to_string(i) + "]";
    SP_ASSIGN(std::string n, in.string((*outs)[i], at));
    auto b = p.findBuffer(n);
    if (!b) return in.err(at, "no buffer named '" + n + "'");
    p.outputs.push_back(*b);
  }
  SP_TRY(checkPlan(p));
  return p;
}

}  // namespace sp::codegen
