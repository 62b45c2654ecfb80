// Plans: the implementation chosen for a checked problem and the workspace it books.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/error.h"
#include "core/problem.h"

namespace gridsample {

// One implementation of the operator family. Implementations are tried in a fixed order that
// ends with cpu:ref, which accepts every problem the checker lets through.
struct Impl {
  const char* name;  // "cpu:ref", ...
  // True if this implementation can run p; otherwise says why not in *why.
  bool (*accepts)(const Problem& p, std::string* why);
  // Workspace bytes for p, a function of shapes, dtype and modes only. False on overflow.
  bool (*workspace)(const Problem& p, uint64_t* bytes);
  // Runs p. `workspace` holds at least the bytes asked for, with arbitrary contents.
  void (*run)(const Problem& p, void* workspace);
};

struct Plan {
  Problem problem;
  const Impl* impl = nullptr;
  uint64_t workspace_bytes = 0;
};

// Whether GRIDSAMPLE_VERBOSE is set (to anything but 0): plans and implementations then say what
// they chose on stderr.
bool verbose();

// Chooses the first of `impls` (in order of preference) that accepts p. With
// GRIDSAMPLE_VERBOSE=1 it prints the choice and why each earlier implementation declined.
bool make_plan(const Problem& p, const std::vector<const Impl*>& impls, Plan* plan, Error* error);

}  // namespace gridsample
