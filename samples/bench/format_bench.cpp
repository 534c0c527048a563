// build/bin/scriptprof_format_bench [--quick]: what a large profile costs in memory, how long
// each file format takes to write, and how fast saved profiles read back.
// The profile is synthetic but shaped like a long run of a real program: one million samples
// (100k with --quick) over 20000 distinct stacks 5 to 200 frames deep, 3000 functions, and a
// current line per frame.
// Exits 1 if a format fails to write or a read-back loses samples.
#include <malloc.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <random>
#include <string>
#include <vector>

#include "scriptprof/profile.hpp"
#include "scriptprof/profile_io.hpp"

#include "quick_flag.hpp"

namespace {

using namespace scriptprof;
using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point t0) {
  return std::chrono::duration<double>(Clock::now() - t0).count();
}

// Bytes the C++ heap holds right now (glibc's count of allocated chunks).
// Large blocks are mmapped and counted apart (hblkhd).
std::size_t heap_in_use() {
  struct mallinfo2 m = mallinfo2();
  return m.uordblks + m.hblkhd;
}

constexpr FunctionId kFunctions = 3000;

// The program's distinct stacks: a drifting walk (a few frames popped and pushed from one stack
// to the next, depth 5 to 200), so neighbours share prefixes as a real call tree's paths do.
std::vector<std::vector<FunctionId>> program_stacks(std::size_t count) {
  std::mt19937_64 rng(7);
  std::vector<std::vector<FunctionId>> stacks;
  std::vector<FunctionId> stack = {0};
  while (stacks.size() < count) {
    std::size_t pops = std::min<std::size_t>(rng() % 5, stack.size() - 1);
    stack.resize(stack.size() - pops);
    std::size_t pushes = rng() % 5;
    if (stack.size() < 5) pushes += 3;
    for (std::size_t k = 0; k < pushes && stack.size() < 200; ++k) {
      // A function calls one of a few callees, as code does.
      stack.push_back(static_cast<FunctionId>((stack.back() * 31 + 7 + rng() % 3) % kFunctions));
    }
    stacks.push_back(stack);
  }
  return stacks;
}

// Fills `p` with `samples` samples over `stacks`, a few hot and most rare (as in a profile);
// the same arguments give the same profile.
void fill(Profile* p, const std::vector<std::vector<FunctionId>>& stacks, std::size_t samples, bool keep) {
  p->name = "synthetic";
  p->period_ns = 1'000'000;
  p->keep_samples = keep;
  p->add_thread(0, "main");
  for (FunctionId f = 0; f < kFunctions; ++f)
    p->add_function({"fn" + std::to_string(f), "game/module" + std::to_string(f % 40) + ".lua",
                     static_cast<int>(10 + f % 500), static_cast<int>(30 + f % 500), FunctionKind::Script});
  std::mt19937_64 rng(42);
  std::uniform_real_distribution<double> unit(0.0, 1.0);
  // A caller's current line is its call site, the same while the callee runs: worked out once
  // per stack, outside the loop, so the loop times recording and not this bench's arithmetic.
  std::vector<std::vector<int>> call_sites(stacks.size());
  for (std::size_t s = 0; s < stacks.size(); ++s) {
    const auto& stack = stacks[s];
    call_sites[s].resize(stack.size());
    for (std::size_t k = 0; k + 1 < stack.size(); ++k)
      call_sites[s][k] = static_cast<int>(11 + (stack[k] + stack[k + 1]) % 4);
  }
  std::vector<int> lines(200);
  std::size_t at = 0;
  for (std::size_t i = 0; i < samples; ++i) {
    // Mostly a neighbour of the last stack (time moves on), sometimes a jump; hot stacks first.
    double u = unit(rng);
    if (u < 0.1) {
      double v = unit(rng);
      at = static_cast<std::size_t>(v * v * v * static_cast<double>(stacks.size()));
    } else if (u < 0.5) {
      at = (at + 1) % stacks.size();
    }
    const auto& stack = stacks[at];
    // The innermost frame's line moves on from sample to sample.
    std::copy(call_sites[at].begin(), call_sites[at].end(), lines.begin());
    lines[stack.size() - 1] = static_cast<int>(11 + (stack.back() + i) % 4);
    p->add_sample(0, i * p->period_ns, 1, stack.data(), stack.size(), lines.data());
  }
  p->total_seconds = static_cast<double>(samples) * 1e-3;
}

}  // namespace

int main(int argc, char** argv) {
  const bool quick = quick_flag(argc, argv);
  const std::size_t samples = quick ? 100'000 : 1'000'000;
  const auto stacks = program_stacks(quick ? 5000 : 20000);
  int failures = 0;

  // Memory: the same samples with and without the full-stack records.
  std::size_t before = heap_in_use();
  auto t0 = Clock::now();
  auto tree_only = std::make_unique<Profile>();
  fill(tree_only.get(), stacks, samples, false);
  double build_s = seconds_since(t0);
  std::size_t tree_bytes = heap_in_use() - before;
  before = heap_in_use();
  Profile full;
  fill(&full, stacks, samples, true);
  std::size_t full_bytes = heap_in_use() - before;
  std::size_t nodes = full.tree.size();
  // Recording is timed on fresh profiles, best of several: load on this shared machine only
  // ever adds time (the first fill, whose memory is counted, moved 280-370 ns between runs).
  double first_build_s = build_s;
  for (int round = 0; round < (quick ? 2 : 4); ++round) {
    auto t = Clock::now();
    Profile again;
    fill(&again, stacks, samples, false);
    build_s = std::min(build_s, seconds_since(t));
  }
  std::printf("== memory, %zu samples, %zu call tree nodes, %zu functions\n", samples, nodes,
              static_cast<std::size_t>(kFunctions));
  // Per node of both trees too: the line-level tree (pprof's Lines) holds most of the nodes.
  const std::size_t all_nodes = nodes + full.line_tree().size();
  std::printf("aggregate only (tree, counts, lines): %.1f MB, %.1f bytes per call tree node, "
              "%.1f bytes per node of both trees (%zu)\n",
              static_cast<double>(tree_bytes) / 1e6, static_cast<double>(tree_bytes) / static_cast<double>(nodes),
              static_cast<double>(tree_bytes) / static_cast<double>(all_nodes), all_nodes);
  std::printf("  of which: call tree %.1f MB (%.1f bytes per node), line-level tree %.1f MB (%zu nodes), "
              "function table %.1f MB\n",
              static_cast<double>(full.tree.bytes()) / 1e6,
              static_cast<double>(full.tree.bytes()) / static_cast<double>(nodes),
              static_cast<double>(full.line_tree().bytes()) / 1e6, full.line_tree().size(),
              static_cast<double>(full.functions.bytes()) / 1e6);
  std::printf("full stacks: %.1f MB, %.1f bytes per sample beyond the aggregate\n",
              static_cast<double>(full_bytes) / 1e6,
              static_cast<double>(full_bytes - std::min(full_bytes, tree_bytes)) / static_cast<double>(samples));
  std::printf("recording: %.0f ns per sample, best of %d fresh profiles (the first: %.0f ns; mean depth %.0f)\n",
              build_s * 1e9 / static_cast<double>(samples), quick ? 3 : 5,
              first_build_s * 1e9 / static_cast<double>(samples),
              [&] {
                double depth = 0;
                for (const SampleRecord& s : full.samples) depth += full.tree.node(s.leaf).depth;
                return depth / static_cast<double>(full.samples.size());
              }());
  tree_only.reset();

  // Each format written to a file, then read back when it can be: the samples must all be there.
  // Write and read in turn, so no format's read pays for another's freed memory.
  auto dir = std::filesystem::temp_directory_path() / ("scriptprof-bench-" + std::to_string(getpid()));
  std::filesystem::create_directories(dir);
  std::printf("\n== each format written (full stacks profile) and read back\n%-12s %9s %9s %9s %9s %9s\n", "format",
              "MB", "write s", "MB/s", "read s", "MB/s");
  const auto& readable = readable_formats();
  for (const std::string& format : file_formats()) {
    std::string out, error;
    t0 = Clock::now();
    bool ok = render_format(full, format, &out, &error);
    if (ok) {
      std::ofstream f(dir / format, std::ios::binary);
      f.write(out.data(), static_cast<std::streamsize>(out.size()));
      ok = static_cast<bool>(f);
      if (!ok) error = "could not write " + (dir / format).string();
    }
    double write_s = seconds_since(t0);
    if (!ok) {
      std::printf("%-12s write failed: %s\n", format.c_str(), error.c_str());
      ++failures;
      continue;
    }
    double mb = static_cast<double>(out.size()) / 1e6;
    std::printf("%-12s %9.1f %9.3f %9.1f", format.c_str(), mb, write_s, mb / write_s);
    if (std::find(readable.begin(), readable.end(), format) == readable.end()) {
      std::printf(" %9s %9s\n", "-", "-");
      continue;
    }
    Profile back;
    t0 = Clock::now();
    ok = read_profile_text(out, format, &back, &error);
    double read_s = seconds_since(t0);
    // lms holds intervals in microseconds, not samples: compare the time the samples stand for.
    bool same = format == "lms" ? back.sample_weight() * back.period_ns == full.sample_weight() * full.period_ns
                                : back.sample_weight() == full.sample_weight();
    if (!ok) {
      std::printf("  read failed: %s\n", error.c_str());
    } else {
      std::printf(" %9.3f %9.1f%s\n", read_s, mb / read_s, same ? "" : "  LOST SAMPLES");
    }
    if (!ok || !same) ++failures;
  }
  if (!std::getenv("SCRIPTPROF_BENCH_KEEP")) std::filesystem::remove_all(dir);
  return failures == 0 ? 0 : 1;
}
