// The heap by allocation site, as Go's heap profile gives it: for each site (a stack), the
// objects and bytes allocated since the run began and those still in use, estimated from the
// sampled blocks (one every `sample_bytes` allocated on average, Poisson-spaced). "In use" is as
// of the last completed GC cycle, as Go defines it: garbage the collector has not yet freed is
// not counted against a site that dropped it long ago.
#pragma once
#include <cmath>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "scriptprof/function_table.hpp"

namespace scriptprof {

// One allocation site's estimates.
struct HeapSite {
  std::uint32_t process = 0;
  std::vector<FunctionId> frames;  // root first
  double alloc_objects = 0, alloc_bytes = 0;
  double inuse_objects = 0, inuse_bytes = 0;
};

// What a run publishes at the end of each GC cycle (its function ids are the run's).
struct HeapSnapshot {
  std::vector<HeapSite> sites;
  std::uint64_t sample_bytes = 0;  // mean bytes between sampled blocks
  std::uint64_t cycles = 0;        // GC cycles completed since the run began
};

// A heap profile ready to write: the sites of every run served, with their function names.
struct HeapProfile {
  FunctionTable functions;  // by the sites' frame ids
  std::vector<std::pair<std::uint32_t, std::string>> threads;  // process id -> its label
  std::vector<HeapSite> sites;
  std::uint64_t sample_bytes = 0;
  std::uint64_t cycles = 0;
  std::uint64_t time_unix_ns = 0;
  bool allocs_first = false;  // /allocs: alloc_space is the sample type a viewer shows first
};

// How many blocks one sampled block of `size` bytes stands for: it held a sample point with
// probability 1 - exp(-size/mean), so 1/that is the unbiased count (Go's scaleHeapSample).
inline double heap_sample_scale(std::uint64_t size, std::uint64_t mean_bytes) {
  if (size == 0 || mean_bytes <= 1) return 1;
  return 1 / -std::expm1(-static_cast<double>(size) / static_cast<double>(mean_bytes));
}

// The profile as gzipped pprof with Go's four sample types (alloc_objects, alloc_space,
// inuse_objects, inuse_space), each site labelled with its thread when there are several.
std::string write_heap_pprof(const HeapProfile& profile, bool gzip = true);

}  // namespace scriptprof
