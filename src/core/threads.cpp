#include "core/threads.h"

#if defined(_OPENMP)
#include <omp.h>
#endif

namespace gridsample {
namespace {

// NOTE [ Thread count ]
// The setting is per calling thread, not process-wide, so that two clients in one process (say,
// two Python threads that follow torch.get_num_threads() and a NumPy default) never race on
// it, and so that it never changes OpenMP's own setting: OpenMP's max-threads value is shared
// with every other user of the same runtime (Debian's PyTorch links the system libgomp too), and
// a library must not change another library's thread count. Results do not depend on it
// (NOTE [ Fast determinism ] in src/cpu/fast.cpp).
thread_local int t_threads = 0;

}  // namespace

int run_threads() {
  if (t_threads > 0) return t_threads;
#if defined(_OPENMP)
  return omp_get_max_threads();
#else
  return 1;
#endif
}

void set_run_threads(int n) { t_threads = n > 0 ? n : 0; }
int get_run_threads_setting() { return t_threads; }

}  // namespace gridsample
