// Csprng under concurrent use, across fork and after a move: it never repeats or leaks bytes.
#include <gtest/gtest.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <csignal>

#include <array>
#include <set>
#include <stdexcept>
#include <thread>
#include <vector>

#include "spiralpir/arith/random.hpp"

namespace spiralpir {
namespace {

using Draw = std::array<std::uint8_t, 32>;

// Many threads draw from one generator in pieces of odd sizes: every 32-byte draw is distinct.
void expect_distinct_draws_from_threads(Csprng& rng) {
  constexpr int kThreads = 8, kDraws = 40000;
  std::vector<std::vector<Draw>> got(kThreads, std::vector<Draw>(kDraws));
  std::vector<std::thread> ts;
  for (int t = 0; t < kThreads; ++t)
    ts.emplace_back([&rng, &out = got[t], t] {
      for (Draw& d : out) {
        if (t % 2) {
          rng.fill(d.data(), 13);  // reads that straddle the buffer boundary
          rng.fill(d.data() + 13, 19);
        } else {
          rng.fill(d);
        }
        (void)rng.next_u64();
      }
    });
  for (auto& t : ts) t.join();
  std::set<Draw> seen;
  for (const auto& v : got)
    for (const Draw& d : v) {
      EXPECT_NE(d, Draw{}) << "an all-zero draw";
      EXPECT_TRUE(seen.insert(d).second) << "a repeated draw";
    }
  EXPECT_EQ(seen.size(), std::size_t{kThreads} * kDraws);
}

TEST(CsprngThreads, OsKeyedDrawsAreDistinct) {
  Csprng rng;
  expect_distinct_draws_from_threads(rng);
}

TEST(CsprngThreads, SeededDrawsAreDistinctAndFromTheStream) {
  Csprng rng(Seed{}, 11);
  expect_distinct_draws_from_threads(rng);
  // the threads consumed exactly 8·40000·40 bytes of the one stream, no more, no fewer
  Csprng ref(Seed{}, 11);
  std::vector<std::uint8_t> skip(8 * 40000 * 40);
  ref.fill(skip);
  EXPECT_EQ(rng.next_u64(), ref.next_u64());
}

// Reads `n` bytes from `rng` in a forked child (sent back through a pipe) and in the parent.
// raw_clone: the child is made by the clone system call itself, bypassing libc's fork() and its
// atfork handlers.
std::pair<std::vector<std::uint8_t>, std::vector<std::uint8_t>> draw_in_child_and_parent(Csprng& rng,
                                                                                         std::size_t n,
                                                                                         bool raw_clone = false) {
  int fds[2];
  EXPECT_EQ(pipe(fds), 0);
  const pid_t pid = raw_clone ? static_cast<pid_t>(syscall(SYS_clone, SIGCHLD, nullptr, nullptr, nullptr, nullptr))
                              : fork();
  if (pid == 0) {
    close(fds[0]);
    std::vector<std::uint8_t> mine(n);
    rng.fill(mine);
    const bool ok = write(fds[1], mine.data(), n) == static_cast<ssize_t>(n);
    _exit(ok ? 0 : 1);
  }
  close(fds[1]);
  std::vector<std::uint8_t> parent(n), child(n);
  rng.fill(parent);
  std::size_t got = 0;
  while (got < n) {
    const ssize_t r = read(fds[0], child.data() + got, n - got);
    if (r <= 0) break;
    got += static_cast<std::size_t>(r);
  }
  close(fds[0]);
  int status = 0;
  waitpid(pid, &status, 0);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0);
  EXPECT_EQ(got, n);
  return {child, parent};
}

TEST(CsprngFork, ChildAndParentDrawDifferentBytes) {
  Csprng rng;
  (void)rng.next_u64();  // part of a keystream block is buffered at the fork
  const auto [child, parent] = draw_in_child_and_parent(rng, 64);
  EXPECT_NE(child, parent);
  for (std::size_t i = 0; i + 8 <= child.size(); i += 8)  // not even a shared 8-byte word
    EXPECT_FALSE(std::equal(child.begin() + i, child.begin() + i + 8, parent.begin() + i)) << i;
}

TEST(CsprngFork, RawCloneChildDrawsDifferentBytes) {
  Csprng rng;
  (void)rng.next_u64();
  const auto [child, parent] = draw_in_child_and_parent(rng, 64, true);
  EXPECT_NE(child, parent);
  for (std::size_t i = 0; i + 8 <= child.size(); i += 8)
    EXPECT_FALSE(std::equal(child.begin() + i, child.begin() + i + 8, parent.begin() + i)) << i;
}

TEST(CsprngFork, SeededStreamIsKeptAcrossFork) {
  // a seeded generator is deterministic by contract: both processes continue the same stream
  Csprng rng(Seed{}, 12);
  (void)rng.next_u64();
  const auto [child, parent] = draw_in_child_and_parent(rng, 64);
  EXPECT_EQ(child, parent);
}

TEST(CsprngMove, MovedFromGeneratorIsRejected) {
  Csprng a(Seed{}, 13), ref(Seed{}, 13);
  EXPECT_EQ(a.next_u64(), ref.next_u64());
  Csprng b(std::move(a));
  EXPECT_EQ(b.next_u64(), ref.next_u64()) << "the moved-to generator continues the stream";
  EXPECT_THROW(a.next_u64(), std::logic_error);  // NOLINT(bugprone-use-after-move): the point of the test
  std::uint8_t buf[4];
  EXPECT_THROW(a.fill(buf, sizeof buf), std::logic_error);
  Csprng c;
  c = std::move(b);
  EXPECT_EQ(c.next_u64(), ref.next_u64());
  EXPECT_THROW(b.next_u32(), std::logic_error);  // NOLINT(bugprone-use-after-move)
  // a moved-from generator that is assigned a live one works again
  b = Csprng(Seed{}, 13);
  Csprng fresh(Seed{}, 13);
  EXPECT_EQ(b.next_u64(), fresh.next_u64());
}

TEST(CsprngWipe, SecureWipeZeroes) {
  std::array<std::uint8_t, 40> x;
  x.fill(0xa5);
  secure_wipe(x.data(), x.size());
  EXPECT_EQ(x, (std::array<std::uint8_t, 40>{}));
  secure_wipe(nullptr, 0);
}

}  // namespace
}  // namespace spiralpir
