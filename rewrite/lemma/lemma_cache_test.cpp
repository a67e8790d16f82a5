// The lemma proof cache: hits across calls, and every kind of unusable file
// content is ignored (and rewritten), never trusted.
#include <gtest/gtest.h>

#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <optional>
#include <sstream>

#include "rewrite/lemma/lemma_cache.h"

namespace sp::rewrite {
namespace {

namespace fs = std::filesystem;

const char* kRules =
    "exp-over-concat: exp(concat(?a, ?b, dim=0)) => concat(exp(?a), exp(?b), dim=0)\n"
    "slice-full: slice(?a, dim=0, start=0, end=?e) => ?a if ?e == size(?a, 0)\n"
    "transpose-involution: transpose(transpose(?a, perm=[1, 0]), perm=[1, 0]) => ?a if rank(?a) == 2\n"
    "exp-over-sum-wrong: exp(sum(?a, ?b)) => sum(exp(?a), exp(?b))\n";

LemmaLibrary lib(const std::string& text = kRules) {
  auto ls = parseLemmas(text, "cache.rules");
  SP_ASSERT(ls.ok(), ls.ok() ? "" : ls.error().str());
  return LemmaLibrary{*ls};
}

struct TempDir {
  fs::path path;
  explicit TempDir(const std::string& name) {
    path = fs::temp_directory_path() / ("sp-proof-cache-" + name + "-" + std::to_string(::getpid()));
    fs::remove_all(path);
  }
  ~TempDir() { fs::remove_all(path); }
  fs::path file() const { return path / "lemma-proofs.txt"; }
};

std::string read(const fs::path& p) {
  std::ifstream in(p);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

void write(const fs::path& p, const std::string& s) { std::ofstream(p, std::ios::trunc) << s; }

void expectSame(const std::vector<LemmaStatus>& a, const std::vector<LemmaStatus>& b) {
  ASSERT_EQ(a.size(), b.size());
  for (size_t k = 0; k < a.size(); ++k) {
    EXPECT_EQ(a[k].name, b[k].name);
    EXPECT_EQ(a[k].proven, b[k].proven) << a[k].name;
    EXPECT_EQ(a[k].ranks, b[k].ranks) << a[k].name;
  }
}

TEST(ProofCache, ColdThenWarm) {
  TempDir d("warm");
  LemmaLibrary l = lib();
  ProofCacheStats st;
  auto cold = proveLemmasCached(l, {}, d.path.string(), &st);
  EXPECT_EQ(st.hits, 0);
  EXPECT_EQ(st.proved, 4);
  EXPECT_TRUE(st.wrote) << st.note;
  ASSERT_TRUE(fs::exists(d.file()));
  expectSame(cold, proveLemmas(l, {}));
  EXPECT_FALSE(cold[3].proven);

  auto warm = proveLemmasCached(l, {}, d.path.string(), &st);
  EXPECT_EQ(st.hits, 3);    // the three proven lemmas
  EXPECT_EQ(st.proved, 1);  // the unproven one is never cached
  EXPECT_EQ(st.rejected, 0);
  EXPECT_FALSE(st.wrote);
  expectSame(warm, cold);
  EXPECT_EQ(warm[0].ranks, (std::vector<int>{1, 2, 3, 4}));
  EXPECT_TRUE(warm[2].ranks.empty());  // fixed rank only
}

// A lemma whose `rank(?x) <= k` proves it beyond opts.maxRank is a hit
// too (it was once re-proven by every verify process).
TEST(ProofCache, LemmaRankCapAboveMaxRankIsAHit) {
  TempDir d("rank-cap");
  LemmaLibrary l = lib("exp-over-concat-5: exp(concat(?a, ?b, dim=0)) => concat(exp(?a), exp(?b), dim=0) if rank(?a) <= 3\n");
  ProveOptions two;
  two.maxRank = 2;
  ProofCacheStats st;
  auto cold = proveLemmasCached(l, two, d.path.string(), &st);
  ASSERT_TRUE(cold[0].proven) << cold[0].reason;
  EXPECT_EQ(cold[0].ranks, (std::vector<int>{1, 2, 3}));
  auto warm = proveLemmasCached(l, two, d.path.string(), &st);
  EXPECT_EQ(st.hits, 1);
  EXPECT_EQ(st.proved, 0);
  EXPECT_EQ(st.rejected, 0);
  expectSame(warm, cold);
}

TEST(ProofCache, CorruptFileIsIgnoredAndRewritten) {
  TempDir d("corrupt");
  LemmaLibrary l = lib();
  fs::create_directories(d.path);
  write(d.file(), "garbage\n\x01\x02 not a cache\n");
  ProofCacheStats st;
  auto out = proveLemmasCached(l, {}, d.path.string(), &st);
  EXPECT_EQ(st.hits, 0);
  EXPECT_EQ(st.rejected, 1);  // the header
  EXPECT_TRUE(st.wrote);
  expectSame(out, proveLemmas(l, {}));
  proveLemmasCached(l, {}, d.path.string(), &st);
  EXPECT_EQ(st.hits, 3);
  EXPECT_EQ(st.rejected, 0);
}

// Edits to an entry (its ranks, its text, its key) or a truncated line make
// the line unusable: the lemma is proven again and the file rewritten.
TEST(ProofCache, TamperedEntriesAreRejected) {
  TempDir d("tamper");
  LemmaLibrary l = lib();
  proveLemmasCached(l, {}, d.path.string());
  const std::string good = read(d.file());
  auto edit = [&](const std::string& from, const std::string& to) {
    std::string s = good;
    size_t at = s.find(from);
    SP_ASSERT(at != std::string::npos, from);
    s.replace(at, from.size(), to);
    write(d.file(), s);
  };
  for (auto [from, to] : std::vector<std::pair<std::string, std::string>>{
           {"\t1,2,3,4\t", "\t1,2,3,4,5\t"},      // ranks widened
           {"\t1,2,3,4\t", "\t-\t"},              // ranks dropped: would disable rank limits
           {"=> concat(exp(?a)", "=> concat(exp(?b)"},  // lemma text changed
           {"exp-over-concat", "exp-over-concut"},  // name changed
       }) {
    edit(from, to);
    ProofCacheStats st;
    auto out = proveLemmasCached(l, {}, d.path.string(), &st);
    EXPECT_EQ(st.rejected, 1) << from << " -> " << to;
    EXPECT_EQ(st.hits, 2) << from << " -> " << to;
    EXPECT_TRUE(st.wrote);
    expectSame(out, proveLemmas(l, {}));
  }
  std::string truncated = good.substr(0, good.size() - 20);
  write(d.file(), truncated);
  ProofCacheStats st;
  proveLemmasCached(l, {}, d.path.string(), &st);
  EXPECT_EQ(st.rejected, 1);
  EXPECT_EQ(st.hits, 2);
}

// A different lemma text under the same name, or other prover options, is
// a miss; entries of other options stay in the file.
TEST(ProofCache, KeyedByTextAndOptions) {
  TempDir d("key");
  proveLemmasCached(lib(), {}, d.path.string());
  LemmaLibrary changed = lib("exp-over-concat: exp(concat(?a, ?b, dim=-1)) => concat(exp(?a), exp(?b), dim=-1)\n");
  ProofCacheStats st;
  proveLemmasCached(changed, {}, d.path.string(), &st);
  EXPECT_EQ(st.hits, 0);
  EXPECT_EQ(st.proved, 1);
  ProveOptions two;
  two.maxRank = 2;
  auto out = proveLemmasCached(lib(), two, d.path.string(), &st);
  EXPECT_EQ(st.hits, 0);
  EXPECT_EQ(out[0].ranks, (std::vector<int>{1, 2}));
  proveLemmasCached(lib(), {}, d.path.string(), &st);
  EXPECT_EQ(st.hits, 3);
  EXPECT_NE(proofCacheKey(proofCacheContext({}), "a"), proofCacheKey(proofCacheContext(two), "a"));
}

// The cache context carries the hash of the prover's sources, computed at
// build time: the built hash is the hash of the sources as they are now
// (recomputed here by the same script), and editing any one of them (a
// comment appended to a copy) gives another hash, so a changed encoding
// never reuses a stale proof.
std::string hashOf(const fs::path& src, const fs::path& out) {
  std::string files = proverSourceFiles();
  std::replace(files.begin(), files.end(), ' ', ';');
  std::string cmd = "cmake -DSRC=" + src.string() + " \"-DFILES=" + files + "\" -DOUT=" + out.string() + " -P " +
                    (fs::path(SP_SOURCE_DIR) / "cmake" / "prover_hash.cmake").string();
  if (std::system(cmd.c_str()) != 0) return "cmake failed: " + cmd;
  std::ifstream in(out);
  std::stringstream ss;
  ss << in.rdbuf();
  std::string h = ss.str();
  auto at = h.find("SP_PROVER_SOURCE_HASH \"");
  return at == std::string::npos ? "no hash in " + h : h.substr(at + 23, 64);
}

TEST(ProofCache, KeyedByTheProverSources) {
  TempDir d("hash");
  fs::create_directories(d.path);
  const std::string built = proverSourceHash();
  ASSERT_EQ(built.size(), 64u);
  EXPECT_NE(proofCacheContext({}).find("prover=" + built.substr(0, 16)), std::string::npos) << proofCacheContext({});
  EXPECT_EQ(hashOf(SP_SOURCE_DIR, d.path / "now.h"), built) << "the build's prover hash is stale";
  std::istringstream names(proverSourceFiles());
  std::vector<std::string> files;
  for (std::string f; names >> f;) files.push_back(f);
  ASSERT_GE(files.size(), 10u);
  for (const std::string& edited : {files.front(), std::string("rewrite/lemma/lemma_symbolic.cpp"), files.back()}) {
    fs::path copy = d.path / "src";
    fs::remove_all(copy);
    for (const auto& f : files) {
      fs::create_directories((copy / f).parent_path());
      fs::copy_file(fs::path(SP_SOURCE_DIR) / f, copy / f);
    }
    EXPECT_EQ(hashOf(copy, d.path / "same.h"), built) << "copy of " << edited;
    std::ofstream(copy / edited, std::ios::app) << "\n// edited\n";
    EXPECT_NE(hashOf(copy, d.path / "edited.h"), built) << edited << " edited, same hash";
  }
}

TEST(ProofCache, UnwritableDirectoryProvesInMemory) {
  TempDir d("ro");
  fs::create_directories(d.path);
  write(d.path / "blocker", "x");
  ProofCacheStats st;
  auto out = proveLemmasCached(lib(), {}, (d.path / "blocker" / "sub").string(), &st);
  EXPECT_FALSE(st.wrote);
  EXPECT_NE(st.note.find("cannot create"), std::string::npos) << st.note;
  expectSame(out, proveLemmas(lib(), {}));
  out = proveLemmasCached(lib(), {}, "", &st);
  EXPECT_TRUE(st.file.empty());
  EXPECT_EQ(st.proved, 4);
}

TEST(ProofCache, DefaultDirFromEnvironment) {
  std::map<std::string, std::optional<std::string>> saved;
  for (const char* k : {"SHARDPROOF_CACHE_DIR", "XDG_CACHE_HOME"})
    saved[k] = std::getenv(k) ? std::optional<std::string>(std::getenv(k)) : std::nullopt;
  setenv("SHARDPROOF_CACHE_DIR", "/tmp/sp-a", 1);
  setenv("XDG_CACHE_HOME", "/tmp/sp-x", 1);
  EXPECT_EQ(defaultProofCacheDir(), "/tmp/sp-a");
  unsetenv("SHARDPROOF_CACHE_DIR");
  EXPECT_EQ(defaultProofCacheDir(), "/tmp/sp-x/shardproof");
  unsetenv("XDG_CACHE_HOME");
  if (const char* h = std::getenv("HOME")) {
    EXPECT_EQ(defaultProofCacheDir(), std::string(h) + "/.cache/shardproof");
  }
  for (const auto& [k, v] : saved)
    if (v) setenv(k.c_str(), v->c_str(), 1);
}

}  // namespace
}  // namespace sp::rewrite
