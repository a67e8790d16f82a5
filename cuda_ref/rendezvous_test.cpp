// The TCP rendezvous of the distributed CUDA mode (no GPU needed): rank 0
// hands its blob to every other rank; a rank with no server times out with
// a message naming the address.
#include <gtest/gtest.h>

#include <unistd.h>

#include <thread>

#include "cuda_ref/rendezvous.h"

namespace sp::cuda_ref {
namespace {

int testPort(int salt) { return 20000 + int((::getpid() * 7 + salt) % 20000); }

TEST(Rendezvous, RankZeroHandsItsBlobToEveryRank) {
  const int64_t world = 4;
  const int port = testPort(1);
  std::string blob(300, '\0');
  for (size_t i = 0; i < blob.size(); ++i) blob[i] = char(i * 31);
  std::vector<Result<std::string>> got(world, Result<std::string>(std::string()));
  std::vector<std::thread> ts;
  for (int64_t r = world - 1; r >= 0; --r)  // clients first: they retry until rank 0 listens
    ts.emplace_back([&, r] { got[size_t(r)] = rendezvousShare({r, world, "127.0.0.1", port, 20}, r == 0 ? blob : ""); });
  for (auto& t : ts) t.join();
  for (int64_t r = 0; r < world; ++r) {
    ASSERT_TRUE(got[size_t(r)].ok()) << got[size_t(r)].error().str();
    EXPECT_EQ(*got[size_t(r)], blob) << "rank " << r;
  }
}

TEST(Rendezvous, NoServerIsATimeoutNamingTheAddress) {
  const int port = testPort(2);
  auto r = rendezvousShare({1, 2, "127.0.0.1", port, 1}, "");
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().str().find("rank 1: could not reach rank 0 at 127.0.0.1:" + std::to_string(port) + " within 1 s"),
            std::string::npos)
      << r.error().str();
}

TEST(Rendezvous, BadRankIsAnError) {
  auto r = rendezvousShare({2, 2, "127.0.0.1", testPort(3), 1}, "");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().str(), "rank 2 is outside world size 2");
}

}  // namespace
}  // namespace sp::cuda_ref
