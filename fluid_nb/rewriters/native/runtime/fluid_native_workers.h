// Helper threads for the runtime library's work that splits into independent chunks (the
// matrix products of fluid_native_gemm.h): a recurrent step's [32, 128] x [128, 128] takes
// about 10 us on one core, too little to hand to a threaded BLAS, and enough that a second
// core taking chunks of it, with a hand-off of a fraction of a microsecond, nearly halves it.
//
// The caller posts the work to every helper and takes chunks itself; a helper that starts
// before the chunks are gone takes chunks too. When they are gone the caller takes back a
// post no helper has started (a helper asleep, or kept off its core by another process),
// and waits only for the helpers that did, each on its last chunk. A helper waits for work spinning, so that a
// hand-off costs a cache line's trip and not a thread's wake-up, for at most kSpinSeconds
// after its last post; then it sleeps on a condition variable, and a post wakes it. A
// second caller while the helpers are busy does its work alone.
//
// Threads: FLUID_NB_NATIVE_THREADS (a number, the caller included, or "auto": the CPUs
// this process may run on), at most kMostThreads; unset, everything runs on the caller's
// thread. Sharing is asked for, not assumed: it pays where the cores share a cache (a
// chunk's output reaches the caller in tens of nanoseconds), and costs where they do not.
// On a two-CPU virtual machine whose CPUs share a cache one minute and sit on two chips
// the next (a cache line's round trip 80-130 ns, then 360-430), W3's compiled batch took
// 1.42 ms alone, 1.15-1.32 shared in the first case and 1.60 in the second. The helpers
// block every signal (the process's handlers run on its own threads), start on the first
// call that can use them, and are forgotten by a forked child, which starts its own. A
// result never depends on the number of threads: each chunk is written by one thread, as
// the caller alone would write it.
#pragma once

#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <mutex>
#include <thread>

namespace fluid_native {
namespace workers {

constexpr int kMostThreads = 4;
constexpr double kSpinSeconds = 200e-6;

// the work each thread runs: it takes chunks from `context` until none are left
typedef void (*Work)(void* context);

// A helper's state: generation * 4 + a phase. The caller posts a generation; the helper
// starts it (posted -> running) and finishes it (running -> done), or the caller takes it
// back first (posted -> taken back); the one compare-and-swap each side makes decides.
enum Phase : uint64_t { kPosted = 0, kRunning = 1, kDone = 2, kTakenBack = 3 };

struct alignas(64) Helper {
  std::atomic<uint64_t> state{kDone};
  std::atomic<bool> asleep{false};
  std::atomic<uint64_t> posts_run{0};
  Work work = nullptr;
  void* context = nullptr;
  std::mutex lock;
  std::condition_variable woken;
};

struct Pool {
  int helpers = 0;
  Helper helper[kMostThreads - 1];
  std::atomic<bool> busy{false};  // a caller is using the helpers
  uint64_t generation = 0;
  std::atomic<uint64_t> taken_back{0};  // posts no helper started
};

inline void pause() {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#endif
}

inline void serve(Helper* self) {
  sigset_t all;
  sigfillset(&all);
  pthread_sigmask(SIG_BLOCK, &all, nullptr);
  for (;;) {
    auto deadline = std::chrono::steady_clock::now() +
                    std::chrono::duration<double>(kSpinSeconds);
    for (uint32_t spin = 1;; ++spin) {
      uint64_t state = self->state.load(std::memory_order_acquire);
      if ((state & 3) == kPosted &&
          self->state.compare_exchange_strong(state, state + kRunning)) {
        self->work(self->context);
        self->posts_run.fetch_add(1, std::memory_order_relaxed);
        self->state.store(state + kDone, std::memory_order_release);
        deadline = std::chrono::steady_clock::now() +
                   std::chrono::duration<double>(kSpinSeconds);
        continue;
      }
      pause();
      if (spin % 256 == 0 && std::chrono::steady_clock::now() > deadline) break;
    }
    // asleep is set before the state is read again (both sequentially consistent), and a
    // caller reads asleep after posting: one of the two sees the other's write. Any new
    // state wakes it (a post, even one taken back): it spins again for the calls after.
    std::unique_lock<std::mutex> held(self->lock);
    self->asleep.store(true);
    const uint64_t slept_at = self->state.load();
    while (self->state.load() == slept_at) self->woken.wait(held);
    self->asleep.store(false);
  }
}

inline void rouse(Helper* helper) {
  { std::lock_guard<std::mutex> held(helper->lock); }
  helper->woken.notify_one();
}

// FLUID_NB_NATIVE_THREADS: a number of threads (the caller's included), or "auto" for the
// CPUs this process may run on; at most kMostThreads. Unset: one, the caller's alone.
inline int configured_threads() {
  const char* text = getenv("FLUID_NB_NATIVE_THREADS");
  if (!text) return 1;
  int wanted = atoi(text);
  if (!strcmp(text, "auto")) {
    cpu_set_t cpus;
    wanted = sched_getaffinity(0, sizeof cpus, &cpus) == 0 ? CPU_COUNT(&cpus) : 1;
  }
  return wanted < 1 ? 1 : wanted < kMostThreads ? wanted : kMostThreads;
}

// the pool, or kNoPool where one thread is all there is, or nullptr before the first call
// that could use one decides
inline std::atomic<Pool*>& pool_slot() {
  static std::atomic<Pool*> slot{nullptr};
  return slot;
}
static Pool* const kNoPool = reinterpret_cast<Pool*>(uintptr_t(1));

// the pool, started on first use; nullptr where one thread is all there is. A forked child
// drops its parent's (whose threads it does not have) and decides again when it needs one.
inline Pool* pool() {
  Pool* pool = pool_slot().load(std::memory_order_acquire);
  if (pool) return pool == kNoPool ? nullptr : pool;
  static std::mutex starting;
  std::lock_guard<std::mutex> held(starting);
  if ((pool = pool_slot().load())) return pool == kNoPool ? nullptr : pool;
  static const bool forget_on_fork =
      pthread_atfork(nullptr, nullptr, [] { pool_slot().store(nullptr); }) == 0;
  (void)forget_on_fork;
  const int threads = configured_threads();
  if (threads < 2) {
    pool_slot().store(kNoPool, std::memory_order_release);
    return nullptr;
  }
  pool = new Pool();  // never freed: a helper may outlive every caller until exit
  pool->helpers = threads - 1;
  for (int h = 0; h < pool->helpers; ++h) std::thread(serve, &pool->helper[h]).detach();
  pool_slot().store(pool, std::memory_order_release);
  return pool;
}

// work(context) on the caller's thread and on every helper that starts before the chunks
// are gone; returns when no thread runs it any more
inline void run(Work work, void* context) {
  Pool* workers = pool();
  if (!workers || workers->busy.exchange(true, std::memory_order_acquire)) {
    work(context);
    return;
  }
  const uint64_t posted = ++workers->generation * 4 + kPosted;
  for (int h = 0; h < workers->helpers; ++h) {
    Helper* helper = &workers->helper[h];
    helper->work = work, helper->context = context;
    helper->state.store(posted);
    if (helper->asleep.load()) rouse(helper);
  }
  work(context);
  for (int h = 0; h < workers->helpers; ++h) {
    Helper* helper = &workers->helper[h];
    uint64_t state = posted;
    if (helper->state.compare_exchange_strong(state, posted + kTakenBack)) {
      workers->taken_back.fetch_add(1, std::memory_order_relaxed);
      continue;
    }
    for (uint32_t spin = 1; helper->state.load(std::memory_order_acquire) != posted + kDone;
         ++spin) {
      pause();
      if (spin % 4096 == 0) sched_yield();  // a helper's core taken by another process
    }
  }
  workers->busy.store(false, std::memory_order_release);
}

// the number of threads run() may use now (1 without helpers)
inline int threads() {
  Pool* workers = pool();
  return workers ? workers->helpers + 1 : 1;
}

// the posts the helpers have started since the pool started (0 without one)
inline uint64_t posts_run_by_helpers() {
  Pool* workers = pool_slot().load(std::memory_order_acquire);
  uint64_t total = 0;
  if (workers && workers != kNoPool)
    for (int h = 0; h < workers->helpers; ++h) total += workers->helper[h].posts_run.load();
  return total;
}

// the posts the caller took back before any helper started them (0 without a pool)
inline uint64_t posts_taken_back() {
  Pool* workers = pool_slot().load(std::memory_order_acquire);
  return workers && workers != kNoPool ? workers->taken_back.load() : 0;
}

// whether every helper is asleep (true without any)
inline bool helpers_asleep() {
  Pool* workers = pool_slot().load(std::memory_order_acquire);
  if (!workers || workers == kNoPool) return true;
  for (int h = 0; h < workers->helpers; ++h)
    if (!workers->helper[h].asleep.load()) return false;
  return true;
}

}  // namespace workers
}  // namespace fluid_native
