// The number of threads an operator run may use (NOTE [ Thread count ] in src/core/threads.cpp).
#pragma once

namespace gridsample {

// Threads for runs made by the calling thread: the value set with gridsampleSetNumThreads on
// this thread, else OpenMP's default (omp_get_max_threads: OMP_NUM_THREADS or the core count).
int run_threads();
// 0 restores OpenMP's default; n > 0 asks for n threads. Applies to the calling thread only.
void set_run_threads(int n);
int get_run_threads_setting();

}  // namespace gridsample
