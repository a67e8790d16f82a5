#include "tools/commands.h"

#include <spdlog/spdlog.h>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <iostream>
#include <map>
#include <nlohmann/json.hpp>

#include "frontend/load.h"
#include "ir/interpreter.h"
#include "ir/npy.h"
#include "ir/text.h"

namespace sp::tools {

namespace fs = std::filesystem;
using nlohmann::ordered_json;

namespace {

int fail(const Error& e) {
  std::fprintf(stderr, "error: %s\n", e.str().c_str());
  return kExitBadInput;
}

ordered_json shapeJson(const ir::Shape& s) {
  ordered_json a = ordered_json::array();
  for (const ir::Dim& d : s) {
    if (d.isConcrete()) a.push_back(d.coef);
    else a.push_back(d.str());
  }
  return a;
}

ordered_json valueJson(const ir::Graph& g, ir::ValueId v) {
  const ir::Value& val = g.value(v);
  return {{"name", val.name}, {"dtype", std::string(ir::dtypeName(val.type.dtype))},
          {"shape", shapeJson(val.type.shape)}};
}

struct GraphSummary {
  ordered_json json;
  std::string text;
};

GraphSummary summarize(const ir::Graph& g) {
  ordered_json j;
  std::string t;
  j["inputs"] = ordered_json::array();
  for (ir::ValueId v : g.inputs()) j["inputs"].push_back(valueJson(g, v));
  j["outputs"] = ordered_json::array();
  for (ir::ValueId v : g.outputs()) j["outputs"].push_back(valueJson(g, v));
  ir::Dim paramElems(0);
  bool exact = true;
  for (ir::ValueId v : g.params()) {
    auto n = ir::numElements(g.value(v).type.shape);
    if (!n) { exact = false; continue; }
    auto sum = ir::addDims(paramElems, *n);
    if (sum) paramElems = *sum;
    else exact = false;
  }
  if (exact && paramElems.isConcrete()) j["parameters"] = paramElems.coef;
  else j["parameters"] = exact ? ordered_json(paramElems.str()) : ordered_json(nullptr);
  j["parameter_tensors"] = g.params().size();
  std::map<std::string, int64_t> ops;
  for (const ir::Node& n : g.nodes()) ++ops[std::string(ir::opName(n.op))];
  j["ops"] = ordered_json::object();
  for (const auto& [op, c] : ops) j["ops"][op] = c;

  auto line = [&](const char* title, const std::vector<ir::ValueId>& vs) {
    t += std::string(title) + " (" + std::to_string(vs.size()) + "):\n";
    for (ir::ValueId v : vs) t += "  " + g.value(v).name + ": " + g.value(v).type.str() + "\n";
  };
  line("inputs", g.inputs());
  line("outputs", g.outputs());
  t += "parameters: " + std::to_string(g.params().size()) + " tensors, " +
       (exact ? paramElems.str() : std::string("?")) + " elements\n";
  t += "ops (" + std::to_string(g.nodes().size()) + "):\n";
  for (const auto& [op, c] : ops) t += "  " + op + ": " + std::to_string(c) + "\n";
  return {j, t};
}

// Outputs a partial import left out (data-dependent sizes) and why; the
// capture is named for programs (one entry per rank file).
struct DroppedSummary {
  ordered_json json = ordered_json::array();
  ordered_json collectives = ordered_json::array();
  std::string text;
};

DroppedSummary summarizeDropped(const frontend::FxPartial& p, bool program) {
  DroppedSummary d;
  if (p.outputs.empty()) return d;
  d.text = "dropped outputs (" + std::to_string(p.outputs.size()) + "):\n";
  for (const auto& o : p.outputs) {
    std::string file = fs::path(o.capture).filename().string();
    d.json.push_back({{"name", o.name}, {"capture", file}, {"line", o.line}, {"op", o.op}, {"node", o.node},
                      {"location", o.location}, {"reason", o.reason}});
    d.text += "  " + o.name + (program ? " (" + file + ")" : "") + ": depends on " + o.op + " (node '" + o.node +
              "') at " + o.location + ", whose result size depends on tensor values\n";
  }
  if (!p.collectives.empty()) d.text += "dropped collectives (" + std::to_string(p.collectives.size()) + "):\n";
  for (const auto& c : p.collectives) {
    d.collectives.push_back(c);
    d.text += "  " + c + "\n";
  }
  return d;
}

}  // namespace

// Parses NAME=FILE or rN:NAME=FILE.
Result<InputArg> parseInputArg(const std::string& s) {
  InputArg a;
  size_t eq = s.rfind('=');
  if (eq == std::string::npos || eq == 0 || eq + 1 == s.size())
    return makeError("bad-input-arg", "--input '" + s + "' is not NAME=FILE.npy");
  a.name = s.substr(0, eq);
  a.file = s.substr(eq + 1);
  if (a.name.size() > 2 && a.name[0] == 'r' && std::isdigit(static_cast<unsigned char>(a.name[1]))) {
    size_t colon = a.name.find(':');
    if (colon != std::string::npos) {
      std::string r = a.name.substr(1, colon - 1);
      if (r.empty() || r.size() > 7 || r.find_first_not_of("0123456789") != std::string::npos)
        return makeError("bad-input-arg", "--input '" + s + "': bad rank prefix");
      a.rank = std::stoll(r);
      a.name = a.name.substr(colon + 1);
    }
  }
  return a;
}

Status writeOutputs(const std::string& dir, const ir::TensorMap& outs) {
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec) return makeError("cannot-write", "cannot create '" + dir + "': " + ec.message());
  for (const auto& [name, t] : outs) {
    std::string path = (fs::path(dir) / (sanitizeFileName(name) + ".npy")).string();
    SP_TRY(ir::writeNpy(path, t));
    spdlog::debug("wrote {} ({})", path, t.type().str());
  }
  return okStatus();
}

namespace {

// Progress on stderr for long runs: at most one line a second, after 2 s.
std::function<void(int64_t, size_t, size_t)> progressReporter() {
  auto start = std::chrono::steady_clock::now();
  auto last = start;
  return [start, last](int64_t rank, size_t i, size_t n) mutable {
    auto now = std::chrono::steady_clock::now();
    if (now - start < std::chrono::seconds(2) || now - last < std::chrono::seconds(1)) return;
    last = now;
    std::fprintf(stderr, "progress: rank %lld node %zu/%zu\n", static_cast<long long>(rank), i, n);
  };
}

}  // namespace

std::string sanitizeFileName(const std::string& name) {
  std::string out = name;
  for (char& c : out)
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '.' && c != '_' && c != '-') c = '_';
  if (out.empty() || out == "." || out == "..") out = "_" + out;
  return out;
}

int cmdInspect(const InspectArgs& a) {
  auto fx = frontend::fxOptionsFromFlags(a.fx);
  if (!fx) return fail(fx.error());
  // captures with data-dependent sizes: the graph without the outputs that
  // depend on them, which are listed
  frontend::FxPartial partial;
  fx->partial = &partial;
  auto m = frontend::loadModel(a.model, *fx);
  if (!m) return fail(m.error());
  if (a.format != "text" && a.format != "json")
    return fail(makeError("bad-format", "--format must be text or json, got '" + a.format + "'"));
  DroppedSummary dropped = summarizeDropped(partial, std::holds_alternative<ir::Program>(*m));
  if (a.printIr)
    for (const auto& o : partial.outputs) std::fprintf(stderr, "note: %s\n", o.str().c_str());
  if (const auto* g = std::get_if<ir::Graph>(&*m)) {
    if (a.printIr) {
      std::fputs(ir::printGraph(*g).c_str(), stdout);
      return kExitOk;
    }
    GraphSummary s = summarize(*g);
    if (!partial.outputs.empty()) s.json["dropped_outputs"] = dropped.json;
    if (a.format == "json") std::cout << s.json.dump(2) << "\n";
    else std::cout << "graph " << g->name() << "\n" << s.text << dropped.text;
    return kExitOk;
  }
  const auto& p = std::get<ir::Program>(*m);
  if (a.printIr) {
    std::fputs(ir::printProgram(p).c_str(), stdout);
    return kExitOk;
  }
  ordered_json j;
  j["world_size"] = p.worldSize();
  j["mesh"] = ordered_json::object();
  for (const auto& ax : p.mesh().axes) j["mesh"][ax.name] = ax.size;
  j["ranks"] = ordered_json::array();
  std::string text = "program: world " + std::to_string(p.worldSize()) + ", mesh";
  for (const auto& ax : p.mesh().axes) text += " " + ax.name + "=" + std::to_string(ax.size);
  text += "\n";
  for (int64_t r = 0; r < p.worldSize(); ++r) {
    GraphSummary s = summarize(p.rank(r));
    s.json["rank"] = r;
    j["ranks"].push_back(s.json);
    text += "rank " + std::to_string(r) + ":\n" + s.text;
  }
  if (!partial.outputs.empty()) j["dropped_outputs"] = dropped.json;
  if (!partial.collectives.empty()) j["dropped_collectives"] = dropped.collectives;
  text += dropped.text;
  if (a.format == "json") std::cout << j.dump(2) << "\n";
  else std::cout << text;
  return kExitOk;
}

int cmdRun(const RunArgs& a) {
  auto fx = frontend::fxOptionsFromFlags(a.fx);
  if (!fx) return fail(fx.error());
  auto m = frontend::loadModel(a.model, *fx);
  if (!m) return fail(m.error());
  std::vector<InputArg> args;
  for (const auto& s : a.inputs) {
    auto ia = parseInputArg(s);
    if (!ia) return fail(ia.error());
    args.push_back(*ia);
  }
  ir::RunOptions opts;
  opts.seed = a.seed;
  opts.threads = a.threads;
  opts.onNode = progressReporter();
  auto start = std::chrono::steady_clock::now();
  if (const auto* g = std::get_if<ir::Graph>(&*m)) {
    ir::TensorMap given;
    for (const auto& ia : args) {
      if (ia.rank >= 0)
        return fail(makeError("bad-input-arg", "--input r" + std::to_string(ia.rank) + ":" + ia.name +
                                                   ": rank prefixes apply only to programs"));
      auto t = ir::readNpy(ia.file);
      if (!t) return fail(t.error());
      given[ia.name] = std::move(*t);
    }
    auto outs = ir::runGraph(*g, given, opts);
    if (!outs) return fail(outs.error());
    if (auto st = writeOutputs(a.outDir, *outs); !st) return fail(st.error());
    spdlog::info("ran {} nodes in {:.3f} s", g->nodes().size(),
                 std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
    return kExitOk;
  }
  const auto& p = std::get<ir::Program>(*m);
  auto given = programInputs(p, a.inputs);
  if (!given) return fail(given.error());
  auto outs = ir::runProgram(p, *given, opts);
  if (!outs) return fail(outs.error());
  if (auto st = writeRankOutputs(a.outDir, *outs); !st) return fail(st.error());
  return kExitOk;
}

Result<std::vector<ir::TensorMap>> programInputs(const ir::Program& p, const std::vector<std::string>& inputs) {
  std::vector<ir::TensorMap> given(size_t(p.worldSize()));
  for (const auto& s : inputs) {
    SP_ASSIGN(InputArg ia, parseInputArg(s));
    if (ia.rank >= p.worldSize())
      return makeError("bad-input-arg", "--input: rank " + std::to_string(ia.rank) + " is outside world size " +
                                            std::to_string(p.worldSize()));
    SP_ASSIGN(ir::Tensor t, ir::readNpy(ia.file));
    bool used = false;
    for (int64_t r = 0; r < p.worldSize(); ++r) {
      if (ia.rank >= 0 && ia.rank != r) continue;
      auto v = p.rank(r).findValue(ia.name);
      if (!v || p.rank(r).value(*v).kind == ir::ValueKind::NodeOutput) continue;
      given[size_t(r)][ia.name] = t;
      used = true;
    }
    if (!used) return makeError("unknown-input", "--input: no rank has an input or parameter named '" + ia.name + "'");
  }
  return given;
}

Status writeRankOutputs(const std::string& dir, const std::vector<ir::TensorMap>& outs) {
  for (size_t r = 0; r < outs.size(); ++r)
    SP_TRY(writeOutputs((fs::path(dir) / ("r" + std::to_string(r))).string(), outs[r]));
  return okStatus();
}

}  // namespace sp::tools
