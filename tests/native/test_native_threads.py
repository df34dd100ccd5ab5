"""The runtime library's helper threads (runtime/fluid_native_workers.h): a product large
enough is split in whole panels (or slivers) between the caller's thread and helpers that
wait spinning, then sleep. Its values are the same bytes on one thread or four; a sleeping
helper is woken for the next call and this one runs without it; a forked child starts its
own helpers; the helpers leave signals to the process's own threads; a compiled program's
products use them, and `FLUID_NB_NATIVE_THREADS=1` keeps everything on the caller's
thread."""
import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest

from fluid_nb.rewriters.native import build as build_module
from fluid_nb.rewriters.native.runtime_library import RUNTIME

# Products that split by 16-column panels and by 6-row slivers (N under 32), with parts of
# unequal size, a last partial panel, K past one 256 block, a recurrent step's shapes and a
# one-row product too small to split; each transposition, written and added to.
_DRIVER = r"""
#include <dirent.h>
#include <sched.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <thread>
#include <vector>

#include "fluid_native_gemm.h"

namespace workers = fluid_native::workers;
using fluid_native::own_gemm::sgemm;

static int threads_in_process() {
  int count = 0;
  DIR* tasks = opendir("/proc/self/task");
  while (dirent* entry = readdir(tasks)) count += entry->d_name[0] != '.';
  closedir(tasks);
  return count;
}

// whether every thread but the first blocks SIGINT (the SigBlk mask in its status)
static int helpers_block_sigint() {
  DIR* tasks = opendir("/proc/self/task");
  int all = 1;
  while (dirent* entry = readdir(tasks)) {
    if (entry->d_name[0] == '.' || atoi(entry->d_name) == getpid()) continue;
    char path[64], line[256];
    snprintf(path, sizeof path, "/proc/self/task/%s/status", entry->d_name);
    FILE* status = fopen(path, "r");
    while (fgets(line, sizeof line, status))
      if (!strncmp(line, "SigBlk:", 7))
        all &= (strtoull(line + 7, nullptr, 16) >> (SIGINT - 1)) & 1;
    fclose(status);
  }
  closedir(tasks);
  return all;
}

struct Product {
  int64_t M, N, K;
  int ta, tb, acc;
  std::vector<float> A, B, C0, C;
};

static std::vector<Product> products() {
  const int64_t shapes[][3] = {{32, 128, 128}, {7, 128, 64}, {128, 128, 32},
                               {25, 40, 300}, {64, 10, 200}, {100, 20, 100},
                               {13, 200, 80}, {1, 128, 128}, {72, 256, 256}};
  uint32_t seed = 2024;
  auto next = [&seed] {
    seed = seed * 1664525u + 1013904223u;
    return (seed >> 8) / 16777216.0f - 0.5f;
  };
  std::vector<Product> all;
  for (auto& s : shapes)
    for (int ta = 0; ta < 2; ++ta)
      for (int tb = 0; tb < 2; ++tb)
        for (int acc = 0; acc < 2; ++acc) {
          Product p{s[0], s[1], s[2], ta, tb, acc};
          p.A.resize(p.M * p.K), p.B.resize(p.K * p.N), p.C0.resize(p.M * p.N);
          for (auto& v : p.A) v = next();
          for (auto& v : p.B) v = next();
          for (auto& v : p.C0) v = next();
          all.push_back(p);
        }
  return all;
}

namespace gemm = fluid_native::own_gemm;

// the product as sgemm runs it (shared, or alone where that was faster of late)
static void multiply(Product& p) {
  p.C = p.C0;
  sgemm(p.ta, p.tb, p.M, p.N, p.K, p.A.data(), p.B.data(), p.C.data(), p.acc);
}

// the product shared between the threads whatever the timings (alone where it is too
// small to share); 1 where it was shared
static int multiply_shared(Product& p) {
  p.C = p.C0;
  gemm::ProductChunks chunks{bool(p.ta), bool(p.tb), p.M, p.N, p.K, p.A.data(),
                             p.B.data(), p.C.data(), bool(p.acc), gemm::has_fma()};
  if (!gemm::plan_chunks(chunks, workers::threads())) {
    sgemm(p.ta, p.tb, p.M, p.N, p.K, p.A.data(), p.B.data(), p.C.data(), p.acc);
    return 0;
  }
  workers::run(gemm::take_chunks, &chunks);
  return 1;
}

static bool same(const std::vector<float>& a, const std::vector<float>& b) {
  return !memcmp(a.data(), b.data(), a.size() * sizeof(float));
}

int main(int argc, char** argv) {
  std::vector<Product> all = products();
  if (argc > 2) {  // on one CPU: the caller takes every chunk before the helper runs
    cpu_set_t one;
    CPU_ZERO(&one);
    CPU_SET(sched_getcpu(), &one);
    sched_setaffinity(0, sizeof one, &one);
    Product& p = all[0];
    multiply(p);
    const std::vector<float> alone = p.C;
    int differ = 0;
    for (int round = 0; round < 2000; ++round) multiply_shared(p), differ += !same(p.C, alone);
    printf("taken_back %llu\ndiffer %d\n", (unsigned long long)workers::posts_taken_back(),
           differ);
    return 0;
  }
  // sgemm's product against the shared one (forced) and the double-precision reference
  int shared = 0, differ = 0;
  for (Product& p : all) {
    multiply(p);
    const std::vector<float> by_sgemm = p.C;
    shared += multiply_shared(p);
    differ += !same(p.C, by_sgemm);
  }
  // back to back, as a step's products run, until a helper has run a post (one that spun
  // out its wait while a busy machine kept this thread off its core sleeps, and the next
  // post wakes it)
  const auto give_up = std::chrono::steady_clock::now() + std::chrono::seconds(20);
  while (workers::pool() && workers::posts_run_by_helpers() == 0 &&
         std::chrono::steady_clock::now() < give_up)
    for (Product& p : all) multiply_shared(p);
  const uint64_t posts = workers::posts_run_by_helpers();
  double worst = 0;
  FILE* out = fopen(argv[1], "wb");
  for (Product& p : all) {
    for (int64_t i = 0; i < p.M; ++i)
      for (int64_t j = 0; j < p.N; ++j) {
        double want = p.acc ? p.C0[i * p.N + j] : 0.0, size = fabs(want);
        for (int64_t k = 0; k < p.K; ++k) {
          const double a = p.ta ? p.A[k * p.M + i] : p.A[i * p.K + k];
          const double b = p.tb ? p.B[j * p.K + k] : p.B[k * p.N + j];
          want += a * b, size += fabs(a * b);
        }
        worst = fmax(worst, fabs(p.C[i * p.N + j] - want) / ((p.K + 1) * 1.2e-7 * size));
      }
    fwrite(p.C.data(), sizeof(float), p.C.size(), out);
  }
  fclose(out);
  printf("cases %zu\nshared %d\ndiffer %d\nworst %.6f\nposts %llu\nthreads %d\n"
         "sigint_blocked %d\n", all.size(), shared, differ, worst, (unsigned long long)posts,
         threads_in_process(), helpers_block_sigint());

  // idle past the helpers' spin: asleep; posts wake them, and they run posts again
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  printf("asleep %d\n", int(workers::helpers_asleep()));
  const uint64_t before = workers::posts_run_by_helpers();
  const auto wake_up = std::chrono::steady_clock::now() + std::chrono::seconds(20);
  while (workers::posts_run_by_helpers() == before && std::chrono::steady_clock::now() < wake_up)
    multiply_shared(all[0]);
  printf("posts_after_waking %llu\n",
         (unsigned long long)(workers::posts_run_by_helpers() - before));

  // a forked child: its parent's helpers are not in it; it starts its own
  multiply(all[0]);
  const std::vector<float> expected = all[0].C;
  fflush(stdout);
  const pid_t child = fork();
  if (child == 0) {
    for (int round = 0; round < 50; ++round) {
      multiply_shared(all[0]);
      if (!same(all[0].C, expected)) _exit(3);
    }
    _exit(threads_in_process() == workers::threads() ? 0 : 4);
  }
  int status = 0;
  waitpid(child, &status, 0);
  printf("child %d\n", WIFEXITED(status) ? WEXITSTATUS(status) : -1);
}
"""


@pytest.fixture(scope="module")
def driver(tmp_path_factory):
    folder = tmp_path_factory.mktemp("threads")
    (folder / "driver.cc").write_text(_DRIVER)
    subprocess.run([build_module.compiler_command(), "-O2", "-std=c++17", "-pthread",
                    "-DFLUID_NATIVE_RUNTIME_LIBRARY", f"-I{RUNTIME}", str(folder / "driver.cc"),
                    "-o", str(folder / "driver")], check=True, timeout=180)
    return folder


def _run(driver, threads, *mode):
    """(the driver's printed figures, the bytes of every product) on ``threads`` threads."""
    values = driver / f"values-{threads}.bin"
    printed = subprocess.run([str(driver / "driver"), str(values), *mode], check=True,
                             capture_output=True, text=True, timeout=120,
                             env=dict(os.environ, FLUID_NB_NATIVE_THREADS=str(threads))).stdout
    figures = dict(line.split() for line in printed.splitlines())
    return ({key: float(value) for key, value in figures.items()},
            values.read_bytes() if values.exists() else None)


def test_a_product_is_the_same_bytes_on_one_thread_or_several(driver):
    alone, alone_values = _run(driver, 1)
    assert alone["cases"] == 9 * 8 and alone["worst"] <= 1.0
    assert alone["shared"] == 0 and alone["posts"] == 0 and alone["threads"] == 1
    for threads in (2, 3, 4):
        split, split_values = _run(driver, threads)
        assert split["threads"] == threads
        # most shapes are shared, in chunks over columns or rows; the rest too small
        assert split["shared"] >= 6 * 8, split
        assert split["differ"] == 0, "sharing changed a product's bytes"
        assert split["posts"] > 0, "no helper ran a post"
        assert split["worst"] <= 1.0
        assert split_values == alone_values, f"{threads} threads changed a product's bytes"


def test_a_post_no_helper_started_is_taken_back_by_the_caller(driver):
    # on one CPU the caller takes every chunk while the helper waits for the CPU
    figures, _ = _run(driver, 2, "one cpu")
    assert figures["taken_back"] > 0 and figures["differ"] == 0


def test_a_sleeping_helper_is_woken_by_the_next_post(driver):
    figures, _ = _run(driver, 2)
    assert figures["asleep"] == 1
    assert figures["posts_after_waking"] >= 1


def test_a_forked_child_multiplies_with_helpers_of_its_own(driver):
    figures, _ = _run(driver, 2)
    assert figures["child"] == 0


def test_the_helpers_leave_signals_to_the_processs_threads(driver):
    figures, _ = _run(driver, 4)
    assert figures["threads"] == 4 and figures["sigint_blocked"] == 1


_PROGRAM = textwrap.dedent("""
    import os, sys
    import numpy as np
    import fluid_nb as fluid
    from fluid_nb.rewriters import native

    def threads():
        return len(os.listdir("/proc/self/task"))

    main, startup = fluid.Program(), fluid.Program()
    startup.random_seed = 1
    with fluid.program_guard(main, startup), fluid.unique_name.guard():
        x = fluid.layers.data(name="x", shape=[64], dtype="float32")
        h = fluid.layers.fc(x, 128, act="tanh")
        h = fluid.layers.fc(h, 128, act="tanh")
        loss = fluid.layers.mean(fluid.layers.fc(h, 16))
        fluid.backward.append_backward(loss)
    exe, scope = fluid.Executor(fluid.CPUPlace()), fluid.Scope()
    exe.run(startup, scope=scope)
    feed = {"x": np.random.RandomState(0).uniform(-1, 1, (32, 64)).astype("float32")}
    fetch = [loss] + [p.name + "@GRAD" for p in main.global_block().all_parameters()]
    program = native.compile(main, feed, fetch, scope=scope)
    before = threads()
    got = exe.run(program, feed=feed, fetch_list=fetch, scope=scope)
    np.savez(sys.argv[1], *[np.asarray(g) for g in got])
    print(threads() - before)
""")


@pytest.mark.parametrize("threads", [1, 2])
def test_a_compiled_programs_products_use_the_helpers_to_the_same_values(threads, tmp_path):
    def run(count):
        out = tmp_path / f"values-{count}.npz"
        started = subprocess.run(
            [sys.executable, "-c", _PROGRAM, str(out)], check=True, capture_output=True,
            text=True, timeout=300, env=dict(os.environ, FLUID_NB_NATIVE_THREADS=str(count),
                                             FLUID_NB_CACHE=str(tmp_path / "cache")))
        with np.load(out) as values:
            return int(started.stdout.split()[-1]), [values[k] for k in sorted(values.files)]
    added, values = run(threads)
    assert added == threads - 1
    if threads > 1:
        _, alone = run(1)
        for got, want in zip(values, alone):
            assert got.tobytes() == want.tobytes()
