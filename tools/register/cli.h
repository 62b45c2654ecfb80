// The command line of gridsample-register, as a function so that tests can drive it.
#pragma once

#include <ostream>

namespace gsreg {

// Runs the tool. Progress and the summary go to `out` (one updating line when `tty`, plain lines
// otherwise), errors to `err` as one line. Returns 0 on success, 1 on failure, 2 on bad usage.
// Never throws.
int run_cli(int argc, const char* const* argv, std::ostream& out, std::ostream& err, bool tty);

}  // namespace gsreg
