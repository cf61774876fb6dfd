// spiralpir/core/sigbus_guard.hpp — SigbusGuard: contains the SIGBUS a shared file mapping raises
// when its file is shortened from outside (truncate, a copy over it), instead of letting it kill the
// process.
//
// A process-wide SIGBUS handler (installed once, chaining to the previous one for any other address)
// looks the faulting address up in a fixed table of guarded ranges. A hit replaces the rest of the
// range, from the faulting page on, with zero-filled anonymous pages, counts the fault and returns:
// the interrupted access completes (reading zeros) and the owner, which checks faults() after each
// use, refuses the result. A miss hands the signal on, or restores the default action so the
// access repeats and terminates the process exactly as it would have.
//
// Why not copy into anonymous memory or hold a lock: a preprocessed database is often larger than
// memory (the kernel pages the mapping), and advisory locks do not stop truncate(1).
#pragma once

#include <signal.h>
#include <sys/mman.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstddef>
#include <cstdint>
#include <mutex>
#include <string>

#include "spiralpir/core/error.hpp"

namespace spiralpir {

namespace sigbus_detail {

struct Slot {
  std::atomic<bool> used{false};
  std::atomic<std::uintptr_t> begin{0};
  std::atomic<std::uintptr_t> end{0};
  std::atomic<std::uint64_t> faults{0};
};

inline constexpr std::size_t kSlots = 256;
inline Slot slots[kSlots];
inline struct sigaction previous {};
inline std::uintptr_t page_size = 4096;

inline void on_sigbus(int sig, siginfo_t* info, void* ctx) {
  const int saved_errno = errno;
  const auto a = reinterpret_cast<std::uintptr_t>(info->si_addr);
  for (Slot& s : slots) {
    const std::uintptr_t b = s.begin.load(std::memory_order_acquire);
    const std::uintptr_t e = s.end.load(std::memory_order_acquire);
    if (b <= a && a < e) {
      const std::uintptr_t page = a & ~(page_size - 1);
      // mmap is a plain system call: safe here although POSIX does not list it
      if (::mmap(reinterpret_cast<void*>(page), e - page, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1,
                 0) != MAP_FAILED) {
        s.faults.fetch_add(1, std::memory_order_acq_rel);
        errno = saved_errno;
        return;
      }
    }
  }
  errno = saved_errno;
  if ((previous.sa_flags & SA_SIGINFO) != 0 && previous.sa_sigaction != nullptr) {
    previous.sa_sigaction(sig, info, ctx);
  } else if ((previous.sa_flags & SA_SIGINFO) == 0 && previous.sa_handler != SIG_DFL &&
             previous.sa_handler != SIG_IGN) {
    previous.sa_handler(sig);
  } else {
    ::signal(sig, SIG_DFL);  // the access repeats and ends the process as without us
  }
}

inline void install() {
  static std::once_flag once;
  std::call_once(once, [] {
    const long ps = ::sysconf(_SC_PAGESIZE);
    if (ps > 0) page_size = static_cast<std::uintptr_t>(ps);
    struct sigaction sa {};
    sa.sa_sigaction = &on_sigbus;
    sa.sa_flags = SA_SIGINFO | SA_ONSTACK;
    sigemptyset(&sa.sa_mask);
    if (::sigaction(SIGBUS, &sa, &previous) != 0) throw IoError("cannot install the SIGBUS handler");
  });
}

}  // namespace sigbus_detail

/// Guards one mapped range at a time (see the file comment).
class SigbusGuard {
 public:
  SigbusGuard() = default;
  SigbusGuard(const SigbusGuard&) = delete;
  SigbusGuard& operator=(const SigbusGuard&) = delete;
  ~SigbusGuard() { release(); }

  /// Starts guarding [base, base + len) (page-aligned base, as mmap returns it).
  void guard(const void* base, std::size_t len) {
    release();
    sigbus_detail::install();
    for (std::size_t k = 0; k < sigbus_detail::kSlots; ++k) {
      sigbus_detail::Slot& s = sigbus_detail::slots[k];
      if (s.used.exchange(true, std::memory_order_acq_rel)) continue;
      const auto b = reinterpret_cast<std::uintptr_t>(base);
      s.faults.store(0, std::memory_order_relaxed);
      s.begin.store(b, std::memory_order_release);
      s.end.store(b + len, std::memory_order_release);
      slot_ = &s;
      return;
    }
    throw IoError("more than " + std::to_string(sigbus_detail::kSlots) + " mapped files at once");
  }

  /// Stops guarding (before the range is unmapped).
  void release() {
    if (slot_ == nullptr) return;
    slot_->end.store(0, std::memory_order_release);
    slot_->begin.store(0, std::memory_order_release);
    slot_->used.store(false, std::memory_order_release);
    slot_ = nullptr;
  }

  /// Faults contained so far: nonzero means part of the range now reads as zeros.
  std::uint64_t faults() const { return slot_ == nullptr ? 0 : slot_->faults.load(std::memory_order_acquire); }

 private:
  sigbus_detail::Slot* slot_ = nullptr;
};

}  // namespace spiralpir
