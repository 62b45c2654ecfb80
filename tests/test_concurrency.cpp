// Thread safety (docs/robustness.md, NOTE [ Executor registry ] in src/api/operators.cpp):
// independent calls on many threads give the single-threaded results bit for bit and leak
// nothing (LeakSanitizer checks that under the `asan` preset); one executor used from several
// threads at once is refused with 161002 while it runs, and its results are never corrupted;
// descriptors may be shared read-only; the recent error message is per thread.
//
// Worker threads do not call gtest assertions: they count failures and keep the first message,
// which the main thread reports after joining.
#include <gtest/gtest.h>

#include <atomic>
#include <cstdint>
#include <mutex>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "support.h"

using namespace gstest;

namespace {

constexpr int kThreads = 8;

using RunFn = aclnnStatus (*)(void*, uint64_t, aclOpExecutor*, aclrtStream);

// Failures seen on worker threads.
struct Failures {
  std::atomic<int> count{0};
  std::mutex mu;
  std::string first;
  void add(const std::string& what) {
    if (count++ == 0) {
      std::lock_guard<std::mutex> lock(mu);
      first = what;
    }
  }
};

// One operator call's tensors and its expected results.
struct Job {
  bool bwd = false;
  Modes modes;
  HostTensor input, grid, out, ig, gg;
  std::vector<std::vector<double>> expected;
  std::string label;

  Job(int variant, uint64_t seed) {
    const int nd = 2 + variant % 2;
    bwd = (variant / 2) % 2;
    static const aclDataType kDtypes[] = {ACL_FLOAT, ACL_FLOAT16, ACL_DOUBLE, ACL_BF16};
    const aclDataType dt = kDtypes[(variant / 4) % 4];
    modes = {variant % 3, (variant / 3) % 3, variant % 5 == 0};
    const aclFormat f =
        variant % 7 < 3 ? ACL_FORMAT_ND : (nd == 2 ? ACL_FORMAT_NHWC : ACL_FORMAT_NDHWC);
    const bool last = f != ACL_FORMAT_ND;
    const int64_t c = 1 + variant % 4;
    std::vector<int64_t> in_d = {2}, grid_d = {2}, out_d = {2};
    if (!last) {
      in_d.push_back(c);
      out_d.push_back(c);
    }
    for (int i = 0; i < nd; ++i) {
      in_d.push_back(3 + i);
      grid_d.push_back(2 + (i + variant) % 3);
      out_d.push_back(grid_d.back());
    }
    grid_d.push_back(nd);
    if (last) {
      in_d.push_back(c);
      out_d.push_back(c);
    }
    input = HostTensor(in_d, dt, f);
    grid = HostTensor(grid_d, dt);
    out = HostTensor(out_d, dt, f);
    ig = HostTensor(in_d, dt, f);
    gg = HostTensor(grid_d, dt);
    std::mt19937_64 rng(seed);
    input.set_values(uniform(rng, input.numel(), -2, 2));
    grid.set_values(uniform(rng, grid.numel(), -1.2, 1.2));
    if (bwd) out.set_values(uniform(rng, out.numel(), -1, 1));
    label = "variant " + std::to_string(variant);
    canaries();
    run_once();
    expected = results();
  }
  void canaries() {
    if (bwd) {
      ig.fill_bytes(0xC3);
      gg.fill_bytes(0xC3);
    } else {
      out.fill_bytes(0xC3);
    }
  }
  aclnnStatus run_once() {
    return bwd ? backward(out, input, grid, &ig, &gg, modes) : forward(input, grid, out, modes);
  }
  std::vector<std::vector<double>> results() const {
    if (bwd) return {ig.values(), gg.values()};
    return {out.values()};
  }
};

// Phase 1 of a job, for tests that keep the executor.
struct Planned {
  TensorHandle input, grid, out, ig, gg;
  aclOpExecutor* ex = nullptr;
  uint64_t ws = 0;
  aclnnStatus status;
  RunFn run;
  explicit Planned(const Job& j)
      : input(&j.input),
        grid(&j.grid),
        out(&j.out),
        ig(j.bwd ? &j.ig : nullptr),
        gg(j.bwd ? &j.gg : nullptr) {
    const bool is3d = j.grid.dims.size() == 5;
    const Modes m = j.modes;
    if (j.bwd) {
      const bool mk[2] = {true, true};
      aclBoolArray* mask = aclCreateBoolArray(mk, 2);
      status = (is3d ? aclnnGridSampler3DBackwardGetWorkspaceSize
                     : aclnnGridSampler2DBackwardGetWorkspaceSize)(
          out.t, input.t, grid.t, m.interp, m.padding, m.align, mask, ig.t, gg.t, &ws, &ex);
      aclDestroyBoolArray(mask);
      run = is3d ? aclnnGridSampler3DBackward : aclnnGridSampler2DBackward;
    } else {
      status = (is3d ? aclnnGridSampler3DGetWorkspaceSize : aclnnGridSampler2DGetWorkspaceSize)(
          input.t, grid.t, m.interp, m.padding, m.align, out.t, &ws, &ex);
      run = is3d ? aclnnGridSampler3D : aclnnGridSampler2D;
    }
  }
};

// Spins until every thread has arrived, so that the threads really start together.
class StartLine {
 public:
  explicit StartLine(int n) : left_(n) {}
  void arrive_and_wait() {
    --left_;
    while (left_.load() > 0) std::this_thread::yield();
  }

 private:
  std::atomic<int> left_;
};

TEST(Concurrency, ManyThreadsCreateRunAndDestroyExecutors) {
  constexpr int kJobsPerThread = 4, kIterations = 1250;
  // Built on the main thread: the expected results come from single-threaded calls.
  std::vector<std::vector<Job>> jobs(kThreads);
  for (int t = 0; t < kThreads; ++t)
    for (int j = 0; j < kJobsPerThread; ++j)
      jobs[size_t(t)].emplace_back(t * kJobsPerThread + j, uint64_t(1000 + t * 17 + j));
  Failures failures;
  StartLine start(kThreads);
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t)
    threads.emplace_back([&, t] {
      start.arrive_and_wait();
      for (int it = 0; it < kIterations; ++it) {
        Job& j = jobs[size_t(t)][size_t(it % kJobsPerThread)];
        j.canaries();
        if (it % 8 == 7) {  // now and then a repeatable executor, run twice
          Planned p(j);
          if (p.status != ACLNN_SUCCESS || aclSetAclOpExecutorRepeatable(p.ex) != ACLNN_SUCCESS) {
            failures.add(j.label + ": plan: " + aclGetRecentErrMsg());
            continue;
          }
          std::vector<unsigned char> ws(size_t(p.ws) + 1, 0xA5);
          for (int r = 0; r < 2; ++r) {
            if (p.run(ws.data(), p.ws, p.ex, nullptr) != ACLNN_SUCCESS)
              failures.add(j.label + ": run: " + aclGetRecentErrMsg());
            if (j.results() != j.expected) failures.add(j.label + ": repeatable run differs");
            j.canaries();
          }
          if (aclDestroyAclOpExecutor(p.ex) != ACLNN_SUCCESS) failures.add(j.label + ": destroy");
        } else {
          if (j.run_once() != ACLNN_SUCCESS)
            failures.add(j.label + ": " + aclGetRecentErrMsg());
          else if (j.results() != j.expected)
            failures.add(j.label + ": differs from the single-threaded result");
        }
      }
    });
  for (std::thread& th : threads) th.join();
  EXPECT_EQ(failures.count.load(), 0) << failures.first;
}

// Inputs described once and shared read-only by every thread; each thread has its own output.
TEST(Concurrency, SharedInputDescriptors) {
  const Job ref(3, 7);  // a 3D backward
  ASSERT_TRUE(ref.bwd);
  TensorHandle go(&ref.out), in(&ref.input), grid(&ref.grid);
  Failures failures;
  StartLine start(kThreads);
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t)
    threads.emplace_back([&] {
      HostTensor ig(ref.ig.dims, ref.ig.dtype, ref.ig.format), gg(ref.gg.dims, ref.gg.dtype);
      start.arrive_and_wait();
      for (int it = 0; it < 200; ++it) {
        ig.fill_bytes(0xC3);
        gg.fill_bytes(0xC3);
        TensorHandle tig(&ig), tgg(&gg);
        const bool mk[2] = {true, true};
        aclBoolArray* mask = aclCreateBoolArray(mk, 2);
        uint64_t ws = 0;
        aclOpExecutor* ex = nullptr;
        aclnnStatus st = aclnnGridSampler3DBackwardGetWorkspaceSize(
            go.t, in.t, grid.t, ref.modes.interp, ref.modes.padding, ref.modes.align, mask, tig.t,
            tgg.t, &ws, &ex);
        aclDestroyBoolArray(mask);
        if (st == ACLNN_SUCCESS) {
          std::vector<unsigned char> w(size_t(ws) + 1, 0xA5);
          st = aclnnGridSampler3DBackward(w.data(), ws, ex, nullptr);
        }
        if (st != ACLNN_SUCCESS)
          failures.add(aclGetRecentErrMsg());
        else if (std::vector<std::vector<double>>{ig.values(), gg.values()} != ref.expected)
          failures.add("differs from the single-threaded result");
      }
    });
  for (std::thread& th : threads) th.join();
  EXPECT_EQ(failures.count.load(), 0) << failures.first;
}

// A repeatable executor run from every thread at once: each run either completes or is refused
// with 161002 ("already running"), and the outputs end up exactly right. A backward with
// inputGrad is the case where overlapping runs would corrupt: each run zeroes inputGrad and then
// adds into it.
TEST(Concurrency, OneRepeatableExecutorFromManyThreads) {
  for (int variant : {2, 3, 6, 7}) {  // backward, 2D and 3D, FLOAT and FLOAT16
    Job j(variant, 99);
    SCOPED_TRACE(j.label);
    ASSERT_TRUE(j.bwd);
    Planned p(j);
    ASSERT_EQ(p.status, ACLNN_SUCCESS) << aclGetRecentErrMsg();
    ASSERT_EQ(aclSetAclOpExecutorRepeatable(p.ex), ACLNN_SUCCESS);
    std::vector<unsigned char> ws(size_t(p.ws) + 1, 0xA5);
    std::atomic<int> ok{0}, refused{0};
    Failures failures;
    StartLine start(kThreads);
    std::vector<std::thread> threads;
    j.canaries();
    for (int t = 0; t < kThreads; ++t)
      threads.emplace_back([&] {
        start.arrive_and_wait();
        for (int it = 0; it < 300; ++it) {
          const aclnnStatus st = p.run(ws.data(), p.ws, p.ex, nullptr);
          if (st == ACLNN_SUCCESS) {
            ++ok;
          } else if (st == ACLNN_ERR_PARAM_INVALID &&
                     std::string(aclGetRecentErrMsg()).find("already running") !=
                         std::string::npos) {
            ++refused;
          } else {
            failures.add("status " + std::to_string(st) + ": " + aclGetRecentErrMsg());
          }
        }
      });
    for (std::thread& th : threads) th.join();
    EXPECT_EQ(failures.count.load(), 0) << failures.first;
    EXPECT_GT(ok.load(), 0);
    EXPECT_EQ(ok.load() + refused.load(), kThreads * 300);
    EXPECT_EQ(j.results(), j.expected);
    EXPECT_EQ(aclDestroyAclOpExecutor(p.ex), ACLNN_SUCCESS);
  }
}

// A one-shot executor raced by every thread runs exactly once.
TEST(Concurrency, OneShotExecutorRacedRunsOnce) {
  Job j(2, 5);
  for (int round = 0; round < 50; ++round) {
    j.canaries();
    Planned p(j);
    ASSERT_EQ(p.status, ACLNN_SUCCESS) << aclGetRecentErrMsg();
    std::vector<unsigned char> ws(size_t(p.ws) + 1, 0xA5);
    std::atomic<int> ok{0}, refused{0}, other{0};
    StartLine start(kThreads);
    std::vector<std::thread> threads;
    for (int t = 0; t < kThreads; ++t)
      threads.emplace_back([&] {
        start.arrive_and_wait();
        const aclnnStatus st = p.run(ws.data(), p.ws, p.ex, nullptr);
        ++(st == ACLNN_SUCCESS ? ok : st == ACLNN_ERR_PARAM_INVALID ? refused : other);
      });
    for (std::thread& th : threads) th.join();
    ASSERT_EQ(other.load(), 0) << "round " << round;
    ASSERT_EQ(ok.load(), 1) << "round " << round;
    ASSERT_EQ(refused.load(), kThreads - 1) << "round " << round;
    ASSERT_EQ(j.results(), j.expected) << "round " << round;
  }
}

// Destroying a repeatable executor while other threads run it: the destroy is refused while a
// run is in flight and succeeds once; afterwards every run is refused; nothing touches freed
// memory (ASan) and whatever ran wrote the right numbers.
TEST(Concurrency, DestroyRacingRuns) {
  Job j(6, 11);
  for (int round = 0; round < 20; ++round) {
    j.canaries();
    Planned p(j);
    ASSERT_EQ(p.status, ACLNN_SUCCESS) << aclGetRecentErrMsg();
    ASSERT_EQ(aclSetAclOpExecutorRepeatable(p.ex), ACLNN_SUCCESS);
    std::vector<unsigned char> ws(size_t(p.ws) + 1, 0xA5);
    std::atomic<int> destroyed{0}, bad{0}, ran{0};
    std::atomic<bool> gone{false};
    StartLine start(kThreads);
    std::vector<std::thread> threads;
    for (int t = 0; t < kThreads; ++t)
      threads.emplace_back([&, t] {
        start.arrive_and_wait();
        for (int it = 0; it < 40; ++it) {
          if (t == 0 && it >= 5 && !gone) {
            const aclnnStatus st = aclDestroyAclOpExecutor(p.ex);
            if (st == ACLNN_SUCCESS) {
              ++destroyed;
              gone = true;
            } else if (st != ACLNN_ERR_PARAM_INVALID) {
              ++bad;
            }
            continue;
          }
          const bool was_gone = gone;
          const aclnnStatus st = p.run(ws.data(), p.ws, p.ex, nullptr);
          if (st == ACLNN_SUCCESS) {
            ++ran;
            if (was_gone) ++bad;  // ran after the destroy returned
          } else if (st != ACLNN_ERR_PARAM_INVALID) {
            ++bad;
          }
        }
      });
    for (std::thread& th : threads) th.join();
    if (!gone) {
      ASSERT_EQ(aclDestroyAclOpExecutor(p.ex), ACLNN_SUCCESS);
      ++destroyed;
    }
    ASSERT_EQ(destroyed.load(), 1) << "round " << round;
    ASSERT_EQ(bad.load(), 0) << "round " << round;
    ASSERT_EQ(p.run(ws.data(), p.ws, p.ex, nullptr), ACLNN_ERR_PARAM_INVALID);
    if (ran > 0) {
      ASSERT_EQ(j.results(), j.expected) << "round " << round;
    }
  }
}

// aclGetRecentErrMsg() is per thread: each thread sees the message of its own last failure.
TEST(Concurrency, RecentErrorMessageIsPerThread) {
  Job j(0, 3);  // a 2D forward
  Failures failures;
  StartLine start(kThreads);
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t)
    threads.emplace_back([&, t] {
      TensorHandle in(&j.input), grid(&j.grid), out(&j.out);
      start.arrive_and_wait();
      for (int it = 0; it < 100; ++it) {
        uint64_t ws = 0;
        aclOpExecutor* ex = nullptr;
        const int64_t bad = 100 + t;  // an interpolation mode naming this thread
        aclnnGridSampler2DGetWorkspaceSize(in.t, grid.t, bad, 0, false, out.t, &ws, &ex);
        std::this_thread::yield();
        if (std::string(aclGetRecentErrMsg()).find("got " + std::to_string(bad)) ==
            std::string::npos)
          failures.add("thread " + std::to_string(t) + " reads: " + aclGetRecentErrMsg());
      }
    });
  for (std::thread& th : threads) th.join();
  EXPECT_EQ(failures.count.load(), 0) << failures.first;
}

}  // namespace
