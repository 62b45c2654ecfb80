// gridsample-register: 3D deformable registration on the GridSampler3D operators.
// See docs/register.md; everything lives in the gsreg library so that the tests can use it.
#include <unistd.h>

#include <cstdio>
#include <iostream>

#include "cli.h"

int main(int argc, char** argv) {
  return gsreg::run_cli(argc, argv, std::cout, std::cerr, isatty(fileno(stdout)) != 0);
}
