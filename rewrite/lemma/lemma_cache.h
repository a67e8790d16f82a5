#pragma once
// A proof cache for the lemma library, so that a verify process does not
// re-prove every lemma. An entry says only
// "this exact lemma text, under these prover options and this prover and
// solver version, was proven for these ranks"; anything else in the file is
// ignored, and a file with unusable lines is rewritten.
#include <string>
#include <vector>

#include "rewrite/lemma/lemma.h"

namespace sp::rewrite {

// The SHA-256 of the sources that decide what a proof means (the prover,
// smt/ folds and encoding, the lemma parser and printer, the op table and
// type inference; the list is in rewrite/CMakeLists.txt), computed at build
// time: any edit of them gives a new proof-cache context.
const char* proverSourceHash();
// Those sources, relative to the source tree, separated by spaces.
const char* proverSourceFiles();

// $SHARDPROOF_CACHE_DIR, else $XDG_CACHE_HOME/shardproof, else
// $HOME/.cache/shardproof; empty when none of them is set.
std::string defaultProofCacheDir();

struct ProofCacheStats {
  std::string file;     // the cache file; empty: no cache used
  int hits = 0;         // lemmas whose proof came from the file
  int proved = 0;       // lemmas proven in this call
  int rejected = 0;     // unusable lines of the file (corrupt, foreign)
  bool wrote = false;   // the file was (re)written
  std::string note;     // why the file was not read or written, if so
};

// The options and versions a proof depends on, as cache-key text.
std::string proofCacheContext(const ProveOptions& opts);
// The key of one lemma's entry: a hex hash of context and lemma text.
std::string proofCacheKey(const std::string& context, const std::string& lemmaText);

// Like proveLemmas(lib, opts), taking proven results from the cache file in
// `dir` and adding new proofs to it. Only proofs are cached (an unproven
// lemma is proven again next time); a cached status has no numeric check,
// so with opts.evalOp set the cache is not used. `dir` empty: no cache (the
// library is proven in memory); a directory that cannot be created or
// written is the same, with stats->note saying why.
std::vector<LemmaStatus> proveLemmasCached(const LemmaLibrary& lib, const ProveOptions& opts, const std::string& dir,
                                           ProofCacheStats* stats = nullptr);

}  // namespace sp::rewrite
