#include "cuda_ref/rendezvous.h"

#include <netdb.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <set>
#include <thread>

namespace sp::cuda_ref {

namespace {

// Protocol: the client sends kMagic and its rank (8 bytes, little endian);
// the server answers kMagic, the blob's size (8 bytes) and the blob.
constexpr char kMagic[8] = {'s', 'p', 'r', 'd', 'v', 'z', '0', '1'};

using Clock = std::chrono::steady_clock;

class Fd {
 public:
  explicit Fd(int fd = -1) : fd_(fd) {}
  ~Fd() {
    if (fd_ >= 0) ::close(fd_);
  }
  Fd(Fd&& o) noexcept : fd_(o.fd_) { o.fd_ = -1; }
  Fd& operator=(Fd&& o) noexcept {
    std::swap(fd_, o.fd_);
    return *this;
  }
  int get() const { return fd_; }

 private:
  int fd_;
};

std::string errnoText() { return std::strerror(errno); }

int msLeft(Clock::time_point deadline) {
  auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now()).count();
  return ms < 0 ? 0 : int(std::min<int64_t>(ms, 1000));
}

// Waits until fd is readable (or writable); false on timeout.
Result<bool> waitFd(int fd, short events, Clock::time_point deadline) {
  while (Clock::now() < deadline) {
    pollfd p{fd, events, 0};
    int r = ::poll(&p, 1, msLeft(deadline));
    if (r < 0 && errno != EINTR) return makeError("rendezvous", "poll: " + errnoText());
    if (r > 0) return true;
  }
  return false;
}

Status sendAll(int fd, const void* data, size_t n, Clock::time_point deadline, const std::string& peer) {
  const char* p = static_cast<const char*>(data);
  while (n > 0) {
    SP_ASSIGN(bool ready, waitFd(fd, POLLOUT, deadline));
    if (!ready) return makeError("rendezvous", "timed out sending to " + peer);
    ssize_t k = ::send(fd, p, n, MSG_NOSIGNAL);
    if (k < 0 && errno == EINTR) continue;
    if (k <= 0) return makeError("rendezvous", "send to " + peer + ": " + errnoText());
    p += k;
    n -= size_t(k);
  }
  return okStatus();
}

Status recvAll(int fd, void* data, size_t n, Clock::time_point deadline, const std::string& peer) {
  char* p = static_cast<char*>(data);
  while (n > 0) {
    SP_ASSIGN(bool ready, waitFd(fd, POLLIN, deadline));
    if (!ready) return makeError("rendezvous", "timed out receiving from " + peer);
    ssize_t k = ::recv(fd, p, n, 0);
    if (k < 0 && errno == EINTR) continue;
    if (k == 0) return makeError("rendezvous", peer + " closed the connection");
    if (k < 0) return makeError("rendezvous", "recv from " + peer + ": " + errnoText());
    p += k;
    n -= size_t(k);
  }
  return okStatus();
}

Result<std::string> serve(const RendezvousConfig& c, const std::string& blob, Clock::time_point deadline) {
  Fd ls(::socket(AF_INET6, SOCK_STREAM, 0));
  bool v6 = ls.get() >= 0;
  if (!v6) ls = Fd(::socket(AF_INET, SOCK_STREAM, 0));
  if (ls.get() < 0) return makeError("rendezvous", "socket: " + errnoText());
  int one = 1, zero = 0;
  ::setsockopt(ls.get(), SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  int bound;
  if (v6) {
    ::setsockopt(ls.get(), IPPROTO_IPV6, IPV6_V6ONLY, &zero, sizeof zero);  // IPv4 clients too
    sockaddr_in6 a{};
    a.sin6_family = AF_INET6;
    a.sin6_addr = in6addr_any;
    a.sin6_port = htons(uint16_t(c.port));
    bound = ::bind(ls.get(), reinterpret_cast<sockaddr*>(&a), sizeof a);
  } else {
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_ANY);
    a.sin_port = htons(uint16_t(c.port));
    bound = ::bind(ls.get(), reinterpret_cast<sockaddr*>(&a), sizeof a);
  }
  if (bound < 0) return makeError("rendezvous", "rank 0: bind to port " + std::to_string(c.port) + ": " + errnoText());
  if (::listen(ls.get(), 128) < 0) return makeError("rendezvous", "rank 0: listen: " + errnoText());
  std::set<int64_t> served;
  while (int64_t(served.size()) < c.world - 1) {
    SP_ASSIGN(bool ready, waitFd(ls.get(), POLLIN, deadline));
    if (!ready)
      return makeError("rendezvous", "rank 0: timed out after " + std::to_string(int(c.timeoutSeconds)) + " s with " +
                                         std::to_string(served.size()) + " of " + std::to_string(c.world - 1) +
                                         " ranks connected on port " + std::to_string(c.port));
    Fd conn(::accept(ls.get(), nullptr, nullptr));
    if (conn.get() < 0) continue;
    char magic[8];
    int64_t rank = -1;
    if (!recvAll(conn.get(), magic, 8, deadline, "a client") || std::memcmp(magic, kMagic, 8) != 0 ||
        !recvAll(conn.get(), &rank, 8, deadline, "a client"))
      continue;  // not ours: ignore the stray connection
    if (rank < 1 || rank >= c.world || served.count(rank))
      return makeError("rendezvous", "rank 0: a client says it is rank " + std::to_string(rank) + " (world " +
                                         std::to_string(c.world) + ", or that rank connected twice)");
    uint64_t n = blob.size();
    SP_TRY(sendAll(conn.get(), kMagic, 8, deadline, "rank " + std::to_string(rank)));
    SP_TRY(sendAll(conn.get(), &n, 8, deadline, "rank " + std::to_string(rank)));
    SP_TRY(sendAll(conn.get(), blob.data(), blob.size(), deadline, "rank " + std::to_string(rank)));
    served.insert(rank);
  }
  return blob;
}

Result<std::string> fetch(const RendezvousConfig& c, Clock::time_point deadline) {
  std::string where = c.addr + ":" + std::to_string(c.port);
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  std::string last = "no attempt";
  while (Clock::now() < deadline) {
    addrinfo* res = nullptr;
    int gai = ::getaddrinfo(c.addr.c_str(), std::to_string(c.port).c_str(), &hints, &res);
    if (gai != 0) return makeError("rendezvous", "rank " + std::to_string(c.rank) + ": MASTER_ADDR " + c.addr + ": " +
                                                     ::gai_strerror(gai));
    for (addrinfo* a = res; a; a = a->ai_next) {
      Fd s(::socket(a->ai_family, a->ai_socktype, a->ai_protocol));
      if (s.get() < 0) continue;
      if (::connect(s.get(), a->ai_addr, a->ai_addrlen) < 0) {
        last = errnoText();
        continue;
      }
      ::freeaddrinfo(res);
      res = nullptr;
      SP_TRY(sendAll(s.get(), kMagic, 8, deadline, "rank 0 at " + where));
      SP_TRY(sendAll(s.get(), &c.rank, 8, deadline, "rank 0 at " + where));
      char magic[8];
      uint64_t n = 0;
      SP_TRY(recvAll(s.get(), magic, 8, deadline, "rank 0 at " + where));
      if (std::memcmp(magic, kMagic, 8) != 0) return makeError("rendezvous", where + " is not a shardproof rendezvous");
      SP_TRY(recvAll(s.get(), &n, 8, deadline, "rank 0 at " + where));
      if (n > (uint64_t(1) << 30)) return makeError("rendezvous", where + " announced a blob of " + std::to_string(n) + " bytes");
      std::string blob(n, '\0');
      SP_TRY(recvAll(s.get(), blob.data(), n, deadline, "rank 0 at " + where));
      return blob;
    }
    if (res) ::freeaddrinfo(res);
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
  }
  return makeError("rendezvous", "rank " + std::to_string(c.rank) + ": could not reach rank 0 at " + where + " within " +
                                     std::to_string(int(c.timeoutSeconds)) + " s (last error: " + last + ")");
}

}  // namespace

Result<std::string> rendezvousShare(const RendezvousConfig& c, const std::string& blob) {
  if (c.world < 1 || c.rank < 0 || c.rank >= c.world)
    return makeError("rendezvous", "rank " + std::to_string(c.rank) + " is outside world size " + std::to_string(c.world));
  if (c.port < 1 || c.port > 65535) return makeError("rendezvous", "MASTER_PORT " + std::to_string(c.port) + " is not a port");
  auto deadline = Clock::now() + std::chrono::milliseconds(int64_t(c.timeoutSeconds * 1000));
  if (c.world == 1) return blob;
  return c.rank == 0 ? serve(c, blob, deadline) : fetch(c, deadline);
}

}  // namespace sp::cuda_ref
