// spiralpir/core/parallel.hpp — the runtime's thread pool: parallel_for over a persistent pool of
// workers (dynamic scheduling, deterministic results: every task writes only its own outputs),
// resolve_threads, and the benchmark-only critical-path replay (detail_pool::CriticalPath).
#pragma once

#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <exception>
#include <memory>
#include <mutex>
#include <thread>
#include <type_traits>
#include <utility>
#include <vector>

namespace spiralpir {

/// Number of threads to use: `requested`, or all hardware threads when 0.
inline unsigned resolve_threads(unsigned requested) {
  if (requested != 0) return requested;
  const unsigned hw = std::thread::hardware_concurrency();
  return hw == 0 ? 1 : hw;
}

namespace detail_pool {

inline std::uint64_t thread_cpu_ns() {
  timespec ts{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return static_cast<std::uint64_t>(ts.tv_sec) * 1000000000u + static_cast<std::uint64_t>(ts.tv_nsec);
}

/// Benchmark-only estimate of the wall time on an uncontended machine (thread_scaling bench).
/// When enabled, every task's thread CPU time is recorded, the job's schedule is replayed with
/// `threads` threads that each take the next task index when free (what the pool does when no
/// thread is preempted), and adjust_ns() receives (replayed job time − the caller's CPU time in
/// the job). So (caller thread CPU time + adjust_ns) estimates the uncontended wall time of any
/// stretch of code on the calling thread. Two clock reads per task while enabled.
struct CriticalPath {
  static std::atomic<bool>& enabled() {
    static std::atomic<bool> on{false};
    return on;
  }
  static std::atomic<std::int64_t>& adjust_ns() {
    static std::atomic<std::int64_t> ns{0};
    return ns;
  }
  /// makespan of tasks `ns` (in index order) on `threads` greedy threads
  static std::uint64_t replay(const std::vector<std::uint64_t>& ns, unsigned threads) {
    std::vector<std::uint64_t> free_at(threads, 0);
    for (const std::uint64_t d : ns) {
      auto it = std::min_element(free_at.begin(), free_at.end());
      *it += d;
    }
    return *std::max_element(free_at.begin(), free_at.end());
  }
};

/// Waits up to `budget` for ready() to hold without sleeping (the caller then checks it again).
/// A query runs dozens of short jobs back to back; parking a thread on a condition variable and
/// waking it again costs about 20 µs per job on a 2-vCPU VM, longer than some of the jobs.
template <class Ready>
void spin_until(Ready&& ready, std::chrono::microseconds budget) {
  const auto deadline = std::chrono::steady_clock::now() + budget;
  for (;;) {
    for (int i = 0; i < 64; ++i) {
      if (ready()) return;
#if defined(__x86_64__) || defined(__i386__)
      __builtin_ia32_pause();
#elif defined(__aarch64__)
      __asm__ __volatile__("yield");
#endif
    }
    if (std::chrono::steady_clock::now() >= deadline) return;
    std::this_thread::yield();  // a thread waiting for this CPU (another process's) goes first
  }
}

/// A persistent pool of worker threads, parked on a condition variable between jobs (spawning
/// threads on every parallel_for cost tens of microseconds per call and a fresh malloc arena).
/// A worker spins briefly after a job and the caller while it waits for the last task, before
/// either parks (spin_until).
/// One job runs at a time (callers from several threads take turns); a job started from inside a
/// running job (nested parallel_for) runs serially on the calling thread. Workers are created on
/// demand and never exceed the largest thread count asked for. After fork() the child, which has
/// none of the parent's workers, builds a fresh pool.
class Pool {
 public:
  using TaskFn = void (*)(void*, std::size_t);

  static Pool& instance() {
    static std::atomic<Pool*> current{nullptr};
    static std::mutex create_mu;
    Pool* p = current.load(std::memory_order_acquire);
    if (p != nullptr && p->pid_ == ::getpid()) return *p;
    std::lock_guard<std::mutex> g(create_mu);
    p = current.load(std::memory_order_acquire);
    if (p == nullptr || p->pid_ != ::getpid()) {
      // the old pool (a forked parent's) is left alone: its threads do not exist in this process
      p = new Pool();  // lives until exit; workers are detached and parked
      current.store(p, std::memory_order_release);
    }
    return *p;
  }

  /// true on a pool worker, and on a caller while it runs tasks of its own job
  static bool& inside() {
    thread_local bool flag = false;
    return flag;
  }

  /// Runs fn(ctx, i) for i in [0, count) on `threads` threads (the caller is one of them). The
  /// first exception thrown by a task is rethrown once every participant has stopped.
  void run(unsigned threads, std::size_t count, TaskFn fn, void* ctx) {
    std::lock_guard<std::mutex> job_guard(job_mu_);
    std::unique_lock<std::mutex> lk(mu_);
    while (workers_ + 1 < threads) {
      std::thread(&Pool::worker_loop, this).detach();
      ++workers_;
    }
    fn_ = fn;
    ctx_ = ctx;
    count_ = count;
    next_.store(0, std::memory_order_relaxed);
    err_ = nullptr;
    slots_ = threads - 1;
    profile_ = CriticalPath::enabled().load(std::memory_order_relaxed);
    if (profile_) task_ns_.assign(count, 0);
    generation_.fetch_add(1, std::memory_order_release);
    lk.unlock();
    wake_.notify_all();
    inside() = true;
    const std::uint64_t c0 = profile_ ? thread_cpu_ns() : 0;
    work();
    const std::uint64_t caller_ns = profile_ ? thread_cpu_ns() - c0 : 0;
    inside() = false;
    lk.lock();
    slots_ = 0;  // late wakers find nothing to join
    if (active_.load(std::memory_order_acquire) != 0) {
      lk.unlock();
      spin_until([&] { return active_.load(std::memory_order_acquire) == 0; }, kSpin);
      lk.lock();
    }
    done_.wait(lk, [&] { return active_.load(std::memory_order_relaxed) == 0; });
    if (profile_)
      CriticalPath::adjust_ns() += static_cast<std::int64_t>(CriticalPath::replay(task_ns_, threads)) -
                                   static_cast<std::int64_t>(caller_ns);
    fn_ = nullptr;
    std::exception_ptr err = std::exchange(err_, nullptr);
    lk.unlock();
    if (err) std::rethrow_exception(err);
  }

 private:
  Pool() : pid_(::getpid()) {}

  void work() {
    try {
      for (;;) {
        const std::size_t i = next_.fetch_add(1, std::memory_order_relaxed);
        if (i >= count_) break;
        if (profile_) {
          const std::uint64_t t0 = thread_cpu_ns();
          fn_(ctx_, i);
          task_ns_[i] = thread_cpu_ns() - t0;
        } else {
          fn_(ctx_, i);
        }
      }
    } catch (...) {
      std::lock_guard<std::mutex> g(mu_);
      if (!err_) err_ = std::current_exception();
      next_.store(count_, std::memory_order_relaxed);
    }
  }

  void worker_loop() {
    inside() = true;
    std::unique_lock<std::mutex> lk(mu_);
    std::uint64_t seen = generation_.load(std::memory_order_relaxed);
    auto started = [&] { return generation_.load(std::memory_order_acquire) != seen; };
    for (;;) {
      if (!started()) {
        lk.unlock();
        spin_until(started, kSpin);
        lk.lock();
      }
      wake_.wait(lk, started);
      seen = generation_.load(std::memory_order_relaxed);
      if (slots_ == 0) continue;  // the job needs no more threads (or is already over)
      --slots_;
      active_.fetch_add(1, std::memory_order_relaxed);
      lk.unlock();
      work();
      lk.lock();
      if (active_.fetch_sub(1, std::memory_order_release) == 1) done_.notify_one();
    }
  }

  static constexpr std::chrono::microseconds kSpin{50};

  const pid_t pid_;
  std::mutex job_mu_;  // one job at a time
  std::mutex mu_;      // guards everything below except next_
  std::condition_variable wake_, done_;
  unsigned workers_ = 0, slots_ = 0;
  std::atomic<unsigned> active_{0};           // written under mu_; read by the spinning caller
  std::atomic<std::uint64_t> generation_{0};  // written under mu_; read by spinning workers
  TaskFn fn_ = nullptr;
  void* ctx_ = nullptr;
  std::size_t count_ = 0;
  std::atomic<std::size_t> next_{0};
  std::exception_ptr err_;
  bool profile_ = false;
  std::vector<std::uint64_t> task_ns_;  // profiling: CPU time of each task
};

}  // namespace detail_pool

/// Runs fn(i) for i in [0, count) on `threads` threads (dynamic scheduling, persistent pool).
/// Every task must write only its own outputs, so the result does not depend on the thread count.
/// The first exception thrown by a task is rethrown after every thread stopped. Nested calls (from
/// inside a task) run serially.
template <class Fn>
void parallel_for(unsigned threads, std::size_t count, Fn&& fn) {
  if (count == 0) return;
  threads = std::max(1u, std::min<unsigned>(threads, static_cast<unsigned>(std::min<std::size_t>(count, 1u << 16))));
  if (threads == 1 || detail_pool::Pool::inside()) {
    for (std::size_t i = 0; i < count; ++i) fn(i);
    return;
  }
  using F = std::remove_reference_t<Fn>;
  detail_pool::Pool::instance().run(
      threads, count, [](void* ctx, std::size_t i) { (*static_cast<F*>(ctx))(i); },
      const_cast<void*>(static_cast<const void*>(std::addressof(fn))));
}

}  // namespace spiralpir
