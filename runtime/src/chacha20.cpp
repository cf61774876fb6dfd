// ChaCha20 keystream generator (Bernstein 2008; block function as in RFC 8439) and getrandom.
// The generator is guarded by a mutex (uncontended, it costs one lock/unlock per call). An
// OS-keyed one rekeys in a forked child before producing bytes, so the child never repeats its
// parent's stream: fork() bumps a process-wide counter (pthread_atfork child handler) that every
// call compares, a relaxed atomic load; getpid() is a system call (~100 ns here), too slow to
// ask on every call, so it is asked only when that counter moved. A child made by a raw clone
// system call runs no atfork handler: for it a canary word on a MADV_WIPEONFORK page (Linux
// ≥ 4.14), which the kernel zeroes in every child however it was made, bumps the counter too
// (one more load per call; without that madvise only libc's fork() is detected).
#include <pthread.h>
#include <sys/mman.h>
#include <sys/random.h>
#include <unistd.h>

#ifdef __EMSCRIPTEN__
#include <emscripten.h>
#endif

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstring>
#include <stdexcept>
#include <string>
#include <utility>

#include "spiralpir/arith/random.hpp"

namespace spiralpir {
namespace {

constexpr std::uint32_t rotl(std::uint32_t x, int r) { return (x << r) | (x >> (32 - r)); }

inline void quarter(std::uint32_t& a, std::uint32_t& b, std::uint32_t& c, std::uint32_t& d) {
  a += b, d ^= a, d = rotl(d, 16);
  c += d, b ^= c, b = rotl(b, 12);
  a += b, d ^= a, d = rotl(d, 8);
  c += d, b ^= c, b = rotl(b, 7);
}

void chacha20_block(const std::array<std::uint32_t, 16>& in, std::uint8_t out[64]) {
  std::array<std::uint32_t, 16> x = in;
  for (int i = 0; i < 10; ++i) {
    quarter(x[0], x[4], x[8], x[12]);
    quarter(x[1], x[5], x[9], x[13]);
    quarter(x[2], x[6], x[10], x[14]);
    quarter(x[3], x[7], x[11], x[15]);
    quarter(x[0], x[5], x[10], x[15]);
    quarter(x[1], x[6], x[11], x[12]);
    quarter(x[2], x[7], x[8], x[13]);
    quarter(x[3], x[4], x[9], x[14]);
  }
  for (int i = 0; i < 16; ++i) {
    const std::uint32_t v = x[i] + in[i];
    // Little-endian serialisation, independent of the host byte order.
    out[4 * i + 0] = static_cast<std::uint8_t>(v);
    out[4 * i + 1] = static_cast<std::uint8_t>(v >> 8);
    out[4 * i + 2] = static_cast<std::uint8_t>(v >> 16);
    out[4 * i + 3] = static_cast<std::uint8_t>(v >> 24);
  }
}

std::uint32_t load_le32(const std::uint8_t* p) {
  return static_cast<std::uint32_t>(p[0]) | (static_cast<std::uint32_t>(p[1]) << 8) |
         (static_cast<std::uint32_t>(p[2]) << 16) | (static_cast<std::uint32_t>(p[3]) << 24);
}

std::atomic<std::uint64_t> g_forks{0};  // fork() calls this process descends through

void count_fork_in_child() noexcept { g_forks.fetch_add(1, std::memory_order_relaxed); }

// 1 in the process that set it up, 0 in any child (the kernel wipes the page); null if the
// kernel lacks MADV_WIPEONFORK.
std::uint64_t* fork_canary() noexcept {
  static std::uint64_t* const canary = []() -> std::uint64_t* {
    const long page = sysconf(_SC_PAGESIZE);
    void* p = mmap(nullptr, static_cast<std::size_t>(page), PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED) return nullptr;
#ifdef MADV_WIPEONFORK
    if (madvise(p, static_cast<std::size_t>(page), MADV_WIPEONFORK) == 0) {
      auto* c = static_cast<std::uint64_t*>(p);
      __atomic_store_n(c, 1, __ATOMIC_RELAXED);
      return c;
    }
#endif
    munmap(p, static_cast<std::size_t>(page));
    return nullptr;
  }();
  return canary;
}

std::uint64_t fork_generation() noexcept {
  static const int registered = pthread_atfork(nullptr, nullptr, count_fork_in_child);
  (void)registered;
  std::uint64_t* const canary = fork_canary();
  if (canary != nullptr && __atomic_load_n(canary, __ATOMIC_RELAXED) == 0 &&
      __atomic_exchange_n(canary, 1, __ATOMIC_RELAXED) == 0)
    count_fork_in_child();  // a child that libc's fork() did not make (or before its handler ran)
  return g_forks.load(std::memory_order_relaxed);
}

}  // namespace

#ifdef __EMSCRIPTEN__
// WebAssembly has no getrandom: the browser's (or Node's) Web Crypto CSPRNG, at most 65536
// bytes per call; 1 when it is missing, so that no weaker source is ever used instead.
EM_JS(int, spiralpir_web_entropy, (std::uint8_t* p, std::size_t n), {
  if (typeof crypto != 'object' || typeof crypto.getRandomValues != 'function') return 1;
  for (var i = 0; i < n; i += 65536) {
    crypto.getRandomValues(HEAPU8.subarray(p + i, p + Math.min(n, i + 65536)));
  }
  return 0;
});

void os_entropy(void* out, std::size_t n) {
  if (spiralpir_web_entropy(static_cast<std::uint8_t*>(out), n) != 0)
    throw std::runtime_error("spiralpir: no crypto.getRandomValues in this JavaScript engine");
}
#else
void os_entropy(void* out, std::size_t n) {
  auto* p = static_cast<std::uint8_t*>(out);
  while (n > 0) {
    const ssize_t got = getrandom(p, n, 0);
    if (got < 0) {
      if (errno == EINTR) continue;
      throw std::runtime_error(std::string("spiralpir: getrandom failed: ") + std::strerror(errno));
    }
    p += got;
    n -= static_cast<std::size_t>(got);
  }
}
#endif

Csprng::Csprng() {
  Seed seed;
  os_entropy(seed.data(), seed.size());
  key(seed, 0);
  secure_wipe(seed.data(), seed.size());
  forks_ = fork_generation();
  pid_ = static_cast<int>(getpid());
}

Csprng::Csprng(const Seed& seed, std::uint64_t stream_id) { key(seed, stream_id); }

void Csprng::key(const Seed& seed, std::uint64_t stream_id) noexcept {
  state_[0] = 0x61707865;  // "expand 32-byte k"
  state_[1] = 0x3320646e;
  state_[2] = 0x79622d32;
  state_[3] = 0x6b206574;
  for (int i = 0; i < 8; ++i) state_[4 + i] = load_le32(seed.data() + 4 * i);
  state_[12] = 0;  // 64-bit block counter (words 12, 13)
  state_[13] = 0;
  state_[14] = static_cast<std::uint32_t>(stream_id);  // 64-bit nonce = stream id
  state_[15] = static_cast<std::uint32_t>(stream_id >> 32);
  secure_wipe(buf_.data(), buf_.size());
  pos_ = buf_.size();
}

void Csprng::take_from(Csprng& other) noexcept {
  state_ = other.state_;
  buf_ = other.buf_;
  pos_ = other.pos_;
  pid_ = other.pid_;
  forks_ = other.forks_;
  live_ = other.live_;
  other.wipe();
  other.live_ = false;  // a moved-from generator must not repeat the stream it gave away
}

Csprng::Csprng(Csprng&& other) noexcept {
  std::lock_guard<std::mutex> g(other.mu_);
  take_from(other);
}

Csprng& Csprng::operator=(Csprng&& other) noexcept {
  if (this != &other) {
    std::scoped_lock g(mu_, other.mu_);
    wipe();
    take_from(other);
  }
  return *this;
}

Csprng::~Csprng() { wipe(); }

void Csprng::wipe() noexcept {
  secure_wipe(buf_.data(), buf_.size());
  secure_wipe(state_.data(), sizeof(state_));
  pos_ = buf_.size();
}

void Csprng::refill() noexcept {
  for (int blk = 0; blk < 4; ++blk) {
    chacha20_block(state_, buf_.data() + 64 * blk);
    if (++state_[12] == 0) ++state_[13];
  }
  pos_ = 0;
}

void Csprng::rekey_if_forked() {
  forks_ = fork_generation();
  const int pid = static_cast<int>(getpid());
  if (pid == pid_) return;  // the counter only moves in a child, so this does not happen
  Seed seed;  // forked since keying: never continue the parent's stream
  os_entropy(seed.data(), seed.size());
  key(seed, 0);
  secure_wipe(seed.data(), seed.size());
  pid_ = pid;
}

void Csprng::fill(void* out, std::size_t n) {
  std::lock_guard<std::mutex> g(mu_);
  fill_locked(static_cast<std::uint8_t*>(out), n);
}

void Csprng::check_usable() {
  if (!live_) throw std::logic_error("spiralpir: use of a moved-from Csprng");
  if (pid_ != 0 && fork_generation() != forks_) rekey_if_forked();
}

void Csprng::fill_locked(std::uint8_t* p, std::size_t n) {
  check_usable();
  while (n > 0) {
    if (pos_ >= buf_.size()) refill();
    const std::size_t take = std::min(n, buf_.size() - pos_);
    std::memcpy(p, buf_.data() + pos_, take);  // handed-out bytes stay until the next refill
    pos_ += take;
    p += take;
    n -= take;
  }
}

std::uint32_t Csprng::next_u32() {
  std::uint8_t b[4];
  fill(b, 4);
  return load_le32(b);
}

std::uint64_t Csprng::next_u64() {
  std::lock_guard<std::mutex> g(mu_);
  return next_u64_locked();
}

std::uint64_t Csprng::next_u64_locked() {
  std::uint8_t b[8];
  fill_locked(b, 8);
  return static_cast<std::uint64_t>(load_le32(b)) | (static_cast<std::uint64_t>(load_le32(b + 4)) << 32);
}

u128 Csprng::next_u128() {
  const std::uint64_t lo = next_u64();
  return (static_cast<u128>(next_u64()) << 64) | lo;
}

namespace {

// Accept r below the largest multiple of q that fits in 64 bits: r mod q is then uniform.
std::uint64_t reject_bound(std::uint64_t q) {
  if (q == 0) throw std::invalid_argument("Csprng::uniform_mod: q must be positive");
  return ~std::uint64_t{0} - (~std::uint64_t{0} % q + 1) % q;
}

}  // namespace

std::uint64_t Csprng::uniform_mod(std::uint64_t q) {
  std::uint64_t out = 0;
  uniform_mod_fill(&out, 1, q);
  return out;
}

void Csprng::uniform_mod_fill(std::uint64_t* out, std::size_t count, std::uint64_t q) {
  const std::uint64_t reject_from = reject_bound(q);
  std::lock_guard<std::mutex> g(mu_);
  check_usable();  // once for the whole draw
  for (std::size_t j = 0; j < count; ++j) {
    for (;;) {
      std::uint64_t r;
      if (pos_ + 8 <= buf_.size()) {  // straight from the buffer: the bytes next_u64 would read
        r = static_cast<std::uint64_t>(load_le32(buf_.data() + pos_)) |
            (static_cast<std::uint64_t>(load_le32(buf_.data() + pos_ + 4)) << 32);
        pos_ += 8;
      } else {
        r = next_u64_locked();
      }
      if (r <= reject_from) {
        out[j] = r % q;
        break;
      }
    }
  }
}

}  // namespace spiralpir
