// The lemma proof cache (rewrite/lemma/lemma_cache.h). File format, one entry per
// line after a header line, fields separated by tabs:
//   shardproof-lemma-proof-cache 1
//   CHECK  KEY  RANKS  CONTEXT  LEMMA-TEXT
// KEY is proofCacheKey(CONTEXT, LEMMA-TEXT), CHECK the same hash of the rest
// of the line (so a changed RANKS field is caught); RANKS is "-" (fixed
// ranks only) or a comma list. A line is used only when both hashes recompute, its
// context is this call's, its text is the library lemma's text exactly and
// its ranks lie in 1..maxRank; otherwise it is counted as rejected (lines of
// another context are kept, unused).
#include "rewrite/lemma/lemma_cache.h"

#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <optional>
#include <sstream>

#include "rewrite/smt/smt.h"
#include "prover_hash.h"  // generated (rewrite/CMakeLists.txt): SP_PROVER_SOURCE_HASH

namespace sp::rewrite {

namespace {

namespace fs = std::filesystem;

constexpr const char* kHeader = "shardproof-lemma-proof-cache 1";
constexpr const char* kFileName = "lemma-proofs.txt";
constexpr size_t kMaxLines = 4096;  // beyond this, foreign-context lines are dropped

uint64_t fnv1a(const std::string& s, uint64_t h) {
  for (unsigned char c : s) {
    h ^= c;
    h *= 1099511628211ull;
  }
  return h;
}

std::vector<std::string> splitTabs(const std::string& line) {
  std::vector<std::string> out;
  size_t b = 0;
  while (true) {
    size_t e = line.find('\t', b);
    out.push_back(line.substr(b, e == std::string::npos ? std::string::npos : e - b));
    if (e == std::string::npos) return out;
    b = e + 1;
  }
}

bool printable(const std::string& s) {
  for (unsigned char c : s)
    if (c == '\t' || c == '\n' || c == '\r') return false;
  return !s.empty();
}

std::string ranksText(const std::vector<int>& r) {
  if (r.empty()) return "-";
  std::string s;
  for (int k : r) s += (s.empty() ? "" : ",") + std::to_string(k);
  return s;
}

// The highest tensor rank a cache line may name (a lemma's rank cap).
constexpr int kMaxCachedRank = 16;

// Strictly increasing ranks in 1..maxRank; nullopt when malformed.
std::optional<std::vector<int>> parseRanks(const std::string& s, int maxRank) {
  std::vector<int> out;
  if (s == "-") return out;
  std::stringstream in(s);
  std::string item;
  while (std::getline(in, item, ',')) {
    if (item.empty() || item.size() > 2 || item.find_first_not_of("0123456789") != std::string::npos) return std::nullopt;
    int k = std::stoi(item);
    if (k < 1 || k > maxRank || (!out.empty() && k <= out.back())) return std::nullopt;
    out.push_back(k);
  }
  if (out.empty()) return std::nullopt;
  return out;
}

struct Entry {
  std::string key, ranks, context, text;
  std::string rest() const { return key + "\t" + ranks + "\t" + context + "\t" + text; }
  std::string line() const { return proofCacheKey("line", rest()) + "\t" + rest(); }
};

}  // namespace

const char* proverSourceHash() { return SP_PROVER_SOURCE_HASH; }
const char* proverSourceFiles() { return SP_PROVER_SOURCE_FILES; }

std::string defaultProofCacheDir() {
  if (const char* d = std::getenv("SHARDPROOF_CACHE_DIR"); d && *d) return d;
  if (const char* x = std::getenv("XDG_CACHE_HOME"); x && *x) return std::string(x) + "/shardproof";
  if (const char* h = std::getenv("HOME"); h && *h) return std::string(h) + "/.cache/shardproof";
  return "";
}

std::string proofCacheContext(const ProveOptions& opts) {
  return std::string("prover=") + std::string(proverSourceHash()).substr(0, 16) + ";solver=" + smt::solverVersion() +
         ";max-rank=" + std::to_string(opts.maxRank) + ";timeout-ms=" + std::to_string(opts.timeoutMs);
}

std::string proofCacheKey(const std::string& context, const std::string& lemmaText) {
  std::string s = context + "\n" + lemmaText;
  char buf[40];
  std::snprintf(buf, sizeof buf, "%016llx%016llx", (unsigned long long)fnv1a(s, 14695981039346656037ull),
                (unsigned long long)fnv1a(s, 0x84222325cbf29ce4ull));
  return buf;
}

std::vector<LemmaStatus> proveLemmasCached(const LemmaLibrary& lib, const ProveOptions& opts, const std::string& dir,
                                           ProofCacheStats* stats) {
  ProofCacheStats local;
  ProofCacheStats& st = stats ? *stats : local;
  st = ProofCacheStats{};
  if (dir.empty() || opts.evalOp) {
    st.note = dir.empty() ? "no cache directory" : "numeric checks are not cached";
    auto out = proveLemmas(lib, opts);
    st.proved = int(out.size());
    return out;
  }
  fs::path file = fs::path(dir) / kFileName;
  st.file = file.string();
  const std::string context = proofCacheContext(opts);

  // Read: valid lines by key; everything else is rejected.
  std::map<std::string, Entry> byKey;
  std::vector<Entry> kept;  // valid lines in file order
  bool dirty = false;
  if (std::ifstream in(file); in) {
    std::string line;
    bool header = std::getline(in, line) && line == kHeader;
    if (!header) { ++st.rejected; dirty = true; }
    while (header && std::getline(in, line)) {
      auto f = splitTabs(line);
      bool ok = f.size() == 5 && printable(f[3]) && printable(f[4]) && f[1] == proofCacheKey(f[3], f[4]) &&
                !byKey.count(f[1]);
      Entry e;
      if (ok) e = Entry{f[1], f[2], f[3], f[4]};
      ok = ok && f[0] == proofCacheKey("line", e.rest());
      // A lemma's own rank cap may exceed opts.maxRank (rankCap); the
      // lemma-specific bound is checked at lookup.
      if (ok && e.context == context) ok = parseRanks(e.ranks, kMaxCachedRank).has_value();
      if (!ok) { ++st.rejected; dirty = true; continue; }
      byKey[e.key] = e;
      kept.push_back(e);
    }
  }

  // Hits, and the lemmas left to prove.
  std::vector<std::optional<LemmaStatus>> slot;
  std::vector<std::string> missing;
  std::vector<const Lemma*> chosen;
  for (const auto& l : lib.lemmas) {
    if (!opts.only.empty() && std::find(opts.only.begin(), opts.only.end(), l.name) == opts.only.end()) continue;
    chosen.push_back(&l);
    std::string text = l.str();
    auto it = byKey.find(proofCacheKey(context, text));
    std::optional<std::vector<int>> ranks;
    if (it != byKey.end() && it->second.context == context && it->second.text == text)
      ranks = parseRanks(it->second.ranks, rankCap(l, opts.maxRank));
    if (!ranks) {
      slot.emplace_back();
      missing.push_back(l.name);
      continue;
    }
    LemmaStatus s;
    s.name = l.name;
    s.proven = true;
    s.ranks = *ranks;
    s.numericNote = "proof from cache " + st.file;
    slot.emplace_back(std::move(s));
    ++st.hits;
  }
  std::map<std::string, LemmaStatus> fresh;
  if (!missing.empty()) {
    ProveOptions o = opts;
    o.only = missing;
    for (auto& s : proveLemmas(lib, o)) fresh[s.name] = std::move(s);
  }
  std::vector<LemmaStatus> out;
  for (size_t k = 0; k < chosen.size(); ++k) {
    if (slot[k]) { out.push_back(std::move(*slot[k])); continue; }
    LemmaStatus s = fresh.at(chosen[k]->name);
    ++st.proved;
    std::string text = chosen[k]->str();
    if (s.proven && printable(text)) {
      Entry e{proofCacheKey(context, text), ranksText(s.ranks), context, text};
      if (!byKey.count(e.key)) {
        byKey[e.key] = e;
        kept.push_back(e);
        dirty = true;
      }
    }
    out.push_back(std::move(s));
  }
  if (!dirty) return out;

  // Write atomically: a temp file in the same directory, then rename.
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec) { st.note = "cannot create " + dir + ": " + ec.message(); return out; }
  if (kept.size() > kMaxLines) {
    std::vector<Entry> mine;
    for (auto& e : kept)
      if (e.context == context) mine.push_back(e);
    kept = std::move(mine);
  }
  fs::path tmp = fs::path(dir) / (std::string(kFileName) + ".tmp." + std::to_string(::getpid()));
  {
    std::ofstream os(tmp, std::ios::trunc);
    if (!os) { st.note = "cannot write " + tmp.string(); return out; }
    os << kHeader << "\n";
    for (const auto& e : kept) os << e.line() << "\n";
    os.flush();
    if (!os) { st.note = "cannot write " + tmp.string(); fs::remove(tmp, ec); return out; }
  }
  fs::rename(tmp, file, ec);
  if (ec) { st.note = "cannot rename to " + file.string() + ": " + ec.message(); fs::remove(tmp, ec); return out; }
  st.wrote = true;
  return out;
}

}  // namespace sp::rewrite
