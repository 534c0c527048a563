// SampledHeap: the table of sampled blocks every free of the program asks (kept against a
// std::unordered_map through random adds, frees and moves), and its estimates by site.
#include <catch2/catch.hpp>

#include <cmath>
#include <random>
#include <unordered_map>

#include "scriptprof/heap_profile.hpp"
#include "scriptprof/sampled_heap.hpp"

using namespace scriptprof;

namespace {
const void* at(std::uintptr_t address) { return reinterpret_cast<const void*>(address); }
}  // namespace

TEST_CASE("Sampled blocks are kept until freed or moved, through growth and deletion shifts") {
  SampledHeap heap;
  heap.reset(1);  // every block stands for itself (scale 1)
  std::unordered_map<std::uintptr_t, std::uint64_t> model;
  std::mt19937_64 random(7);
  // Addresses 16 bytes apart in a small range: many share a home slot, so deletions shift runs.
  auto address = [&] { return 0x10000 + 16 * (random() % 20000); };
  for (int step = 0; step < 200000; ++step) {
    const int op = static_cast<int>(random() % 4);
    const std::uintptr_t a = address();
    if (op == 0 && !model.count(a)) {
      const std::uint64_t size = 1 + random() % 100;
      heap.add(at(a), size);
      heap.site(step % 5, 0);
      model[a] = size;
    } else if (op == 1) {
      heap.forget(at(a));
      model.erase(a);
    } else if (op == 2 && model.count(a)) {
      const std::uintptr_t to = address();
      if (model.count(to)) continue;
      heap.move(at(a), at(to));
      model[to] = model[a];
      model.erase(a);
    }
    if (step % 20000 == 0) REQUIRE(heap.blocks() == model.size());
  }
  REQUIRE(heap.blocks() == model.size());
  double kept = 0, model_bytes = 0;
  for (const SampledHeap::Site& s : heap.in_use()) kept += s.inuse_bytes;
  for (const auto& [a, size] : model) model_bytes += static_cast<double>(size);
  CHECK(kept == Approx(model_bytes));
  CHECK_FALSE(heap.changed());
  for (const auto& [a, size] : model) heap.forget(at(a));
  CHECK(heap.blocks() == 0);
  CHECK(heap.changed());
}

TEST_CASE("A site's estimates scale each sampled block by the chance it was sampled") {
  SampledHeap heap;
  heap.reset(4096);
  heap.add(at(0x1000), 1024);
  heap.add(at(0x2000), 1024);
  heap.site(3, 1);   // both at leaf 3
  heap.add(at(0x3000), 1 << 20);
  heap.site(9, 2);
  heap.forget(at(0x2000));
  const auto& sites = heap.in_use();
  REQUIRE(sites.size() == 2);
  const double small = 1 / (1 - std::exp(-1024.0 / 4096));  // about 4.5 blocks each
  CHECK(sites[0].leaf == 3);
  CHECK(sites[0].process == 1);
  CHECK(sites[0].alloc_objects == Approx(2 * small));
  CHECK(sites[0].alloc_bytes == Approx(2 * small * 1024));
  CHECK(sites[0].inuse_objects == Approx(small));
  CHECK(sites[0].inuse_bytes == Approx(small * 1024));
  CHECK(sites[1].inuse_bytes == Approx(1 << 20).epsilon(1e-6));  // a big block is sampled surely
  // A block freed before its stack was walked still counts as allocated, never in use.
  heap.add(at(0x4000), 1024);
  heap.forget(at(0x4000));
  heap.site(3, 1);
  CHECK(heap.in_use()[0].alloc_objects == Approx(3 * small));
  CHECK(heap.in_use()[0].inuse_objects == Approx(small));
}

TEST_CASE("The heap profile is written with Go's four sample types, the in-use one first shown") {
  HeapProfile p;
  p.functions.add({"keeper", "w.lua", 3});
  HeapSite site;
  site.frames = {0};
  site.alloc_objects = 10;
  site.alloc_bytes = 10240;
  site.inuse_objects = 5;
  site.inuse_bytes = 5120;
  p.sites.push_back(site);
  p.sample_bytes = 4096;
  std::vector<char> default_type;
  for (bool allocs : {false, true}) {
    p.allocs_first = allocs;
    const std::string raw = write_heap_pprof(p, false);
    for (const char* s : {"alloc_objects", "alloc_space", "inuse_objects", "inuse_space", "space", "keeper (w.lua:3)"})
      CHECK(raw.find(s) != std::string::npos);
    // default_sample_type (field 14): the string's index, after the period (field 12, 4096).
    const std::size_t period = raw.rfind("\x60\x80\x20");
    REQUIRE(period != std::string::npos);
    REQUIRE(period + 4 < raw.size());
    CHECK(raw[period + 3] == '\x70');
    default_type.push_back(raw[period + 4]);
  }
  CHECK(default_type[0] != default_type[1]);  // inuse_space, then alloc_space
}
