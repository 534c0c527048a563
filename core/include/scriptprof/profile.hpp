// The profile: what a run recorded, in the core's vocabulary only.
// Samples arrive root-first; every distinct function on a stack gets one cumulative count
// however often it recurs there, and the innermost frame gets the self count.
#pragma once
#include <cstdint>
#include <functional>
#include <map>
#include <unordered_map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "scriptprof/call_tree.hpp"
#include "scriptprof/function_table.hpp"
#include "scriptprof/sample_log.hpp"

namespace scriptprof {

// What a unit of sample weight stands for: a tick of the CPU or the wall clock, allocated bytes
// (the space profile), or a completed garbage collection (the gc profile: a sample after each).
enum class ClockKind : std::uint8_t { Cpu, Wall, Alloc, Gc };

struct ThreadInfo {
  std::uint32_t id = 0;  // process id as the adapter numbers them
  std::string name;
  std::uint32_t os_thread = 0;  // a fiber: the process id of the OS thread it ran on (0: none)
};


// A frame boundary a game marked (profiler.frame()): frames run from one mark to the next.
struct FrameMark {
  std::uint32_t thread;   // ThreadInfo::id
  std::uint64_t t_ns;     // profiled time since the start of the run, as SampleRecord::t_ns
};

// Per-function totals. The sample counts (self, cumulative, occurrences) are derived from the
// call tree on the first read after a change; calls and compiled weight are kept as they come.
struct FunctionCounts {
  std::uint64_t self = 0;        // weight of samples where the function is innermost
  std::uint64_t cumulative = 0;  // weight of samples with the function anywhere (once per stack)
  std::uint64_t occurrences = 0; // weight times frames of the function (Guile 3's "cumulative")
  std::optional<std::uint64_t> calls;  // exact calls when counted
  std::uint64_t self_calls = 0;        // calls whose caller was the same function
  std::uint64_t compiled = 0;          // self weight that ran JIT-compiled code (jit_shares)
};

// Health of the sampler that produced the profile (a profiler says what it dropped).
struct SamplerHealth {
  std::uint64_t signals = 0;         // timer signals handled
  std::uint64_t samples_taken = 0;   // stacks walked (each may carry several ticks)
  std::uint64_t ticks_merged = 0;    // ticks folded into a later sample's weight
  std::uint64_t dropped = 0;         // ticks that produced no sample
  std::uint64_t excluded = 0;        // ticks while an excluded process ran (not collected)
  std::uint64_t no_room = 0;         // ticks dropped: a hook could not have had its stack slots
  std::uint64_t counting_lifts = 0;  // times call counting stepped aside near the stack limit
  bool limit_reached = false;        // max_samples stopped the collection
  std::uint64_t off_cpu = 0;         // ticks that fell due while the thread was blocked
  // The program replaced or ignored the timer's signal handler: no tick was delivered from
  // then (seconds into the profile; < 0: never). `signal_name` says which signal.
  double signal_lost_at = -1;
  std::string signal_name;
  // What the adapter reads of the interpreter's private structs: the layout it verified
  // ("Lua 5.4.3-5.4.8"), "public API only" when none agreed, empty when it reads none.
  std::string internals;
  // How the timer's ticks reached the thread (SamplingTimer::delivery()): "polled CPU clock,
  // queued signal", ...; empty for a profile read from a file.
  std::string timer;
};

// Samples per source line of one function (the analogue of Allegro's disassemble-profile).
struct LineCounts {
  std::uint64_t self = 0;        // weight of samples executing this line in the innermost frame
  std::uint64_t cumulative = 0;  // weight of samples with the function on this line anywhere
};

class Profile {
 public:
  std::string name;                    // e.g. the script name
  ClockKind clock = ClockKind::Cpu;
  std::uint64_t period_ns = 10'000'000;
  double total_seconds = 0.0;          // measured profiled time (T)
  double gc_seconds = 0.0;
  // Whether gc_seconds is the collector's time (the runtime tells it at a sample: LuaJIT's VM
  // state; Guile's clock). Else it covers only explicit collections (a runtime whose collector
  // steps inside allocations no sample can tell), and reports say the rest is not measured.
  bool gc_measured = true;
  std::uint64_t start_unix_ns = 0;     // wall-clock start of the run (0 if unknown)
  bool keep_samples = false;           // full stacks: keep every sample record
  std::string runtime_note;            // a line the runtime adds atop reports ("JIT off ...")
  bool jit_shares = false;             // the runtime told compiled code from interpreted
                                       // (LuaJIT): counts().compiled is known
  SamplerHealth health;

  FunctionTable functions;
  std::vector<ThreadInfo> threads;
  CallTree tree;
  SampleLog samples;                   // only when keep_samples
  std::vector<FrameMark> frame_marks;  // in time order per thread

  // Records one sample; `frames` is root-first. An empty stack counts toward the total only.
  // `lines`, when given, holds the current line of each frame (<= 0: unknown).
  // Returns the call tree node of the sample's leaf.
  NodeId add_sample(std::uint32_t thread, std::uint64_t t_ns, std::uint64_t weight,
                    const FunctionId* frames, std::size_t n, const int* lines = nullptr);
  // The sample add_sample just recorded (`leaf` is the node it returned) ran JIT-compiled code
  // in its innermost frame, or interpreted code: kept per function and per path.
  void add_jit_share(NodeId leaf, std::uint64_t weight, bool compiled);
  // A function's compiled self weight as a file gave it: per function only, no paths.
  void restore_compiled(FunctionId f, std::uint64_t weight) {
    jit_shares = true;
    slot(f).compiled = weight;
  }
  // The compiled self weight at `node` of `t` (tree or line_tree()); nullopt when the profile
  // does not know it per path (no JIT, or read from a file that kept only per-function shares).
  std::optional<std::uint64_t> compiled_at(const CallTree& t, NodeId node) const;
  // Per-line samples of `f`, by line number (empty when no lines were recorded).
  std::map<int, LineCounts> line_counts(FunctionId f) const;
  // The stacks at line level, when the runtime gave lines: a call tree whose node "functions"
  // are locations, each a function at one line (0: unknown), as pprof's Locations are.
  const CallTree& line_tree() const { return line_tree_; }
  struct Location {
    FunctionId function;
    int line;
  };
  const Location& location(FunctionId location) const { return locations_[location]; }
  // Records one exact call of `callee`; `self_call` when its caller is the same function.
  void add_call(FunctionId callee, bool self_call);
  // Records one exact call of `callee` by `caller` (kNoFunction when unknown, e.g. a tail call).
  void add_call(FunctionId callee, FunctionId caller) { add_calls(callee, caller, 1); }
  // Records `n` such calls.
  void add_calls(FunctionId callee, FunctionId caller, std::uint64_t n);
  // Exact calls of `callee` by `caller` (0 when none were seen).
  std::uint64_t arc_calls(FunctionId caller, FunctionId callee) const {
    if (callee >= callers_.size()) return 0;
    for (const auto& [f, n] : callers_[callee])
      if (f == caller) return n;
    return 0;
  }
  // Every caller of `callee` with its exact calls (empty when none were seen).
  const std::vector<std::pair<FunctionId, std::uint64_t>>& callers(FunctionId callee) const {
    static const std::vector<std::pair<FunctionId, std::uint64_t>> none;
    return callee < callers_.size() ? callers_[callee] : none;
  }
  // Adds `n` exact calls of `callee` by `caller` to the arcs only (merging profiles; add_call
  // adds one this way).
  void add_arc_calls(FunctionId caller, FunctionId callee, std::uint64_t n);
  // Sets a function's call counts outright (readers of saved profiles; nullopt = unknown).
  void set_calls(FunctionId f, std::optional<std::uint64_t> calls, std::uint64_t self_calls = 0);
  // Marks call counting on. For every function (the default), functions never called show 0
  // rather than unknown; otherwise only those given to mark_counted() (a count list) do.
  void enable_call_counts(bool every_function = true);
  // `f`'s calls were counted: 0 rather than unknown when it was never called.
  void mark_counted(FunctionId f) {
    if (f < functions.size() && !slot(f).calls) slot(f).calls = 0;
  }
  bool calls_counted() const { return calls_counted_; }

  // Adds a function (keeps the per-function arrays in step with the table).
  FunctionId add_function(FunctionInfo info);
  // Names a process so reports can show it.
  void add_thread(std::uint32_t id, std::string thread_name, std::uint32_t os_thread = 0);

  std::uint64_t sample_weight() const { return total_weight_; }  // N
  // The sample count statprof reports: ticks for a time profile (a sample carries the ticks it
  // stands for), sample points for a space profile (whose weights are bytes).
  std::uint64_t sample_count() const {
    return clock == ClockKind::Alloc ? health.samples_taken : total_weight_;
  }
  // Readers refuse input whose weights would pass this ceiling (sums must never wrap around).
  static constexpr std::uint64_t kMaxTotalWeight = std::uint64_t{1} << 62;
  bool weight_fits(std::uint64_t weight) const {
    return weight <= kMaxTotalWeight && total_weight_ <= kMaxTotalWeight - weight;
  }
  std::uint64_t empty_weight() const { return empty_weight_; }   // samples with no frames
  // Time in the collector, as the samples measure it: the self weight of collector functions
  // (FunctionInfo::collector) as a share of total_seconds.
  double collector_seconds() const;
  const FunctionCounts& counts(FunctionId id) const {
    settled_.ensure([this] { settle_counts(); });
    return slot(id);  // a function added since the counts settled has none yet
  }

  // Drops every sample and count but keeps the settings.
  void clear();

  // Heap bytes the profile holds (functions with their names, the call tree, kept samples,
  // counts, arcs, lines): what a run costs in memory, reported by profiler.stats().
  std::size_t bytes() const;

 private:
  // Settles the sample counts of functions and locations from the two trees: a node adds its
  // self weight to its function's self, its count to the occurrences, and to the cumulative
  // only where no node above it has the same function (once per stack, even in recursion).
  void settle_counts() const;
  // The counts are made when first needed, not with each function: a file converted to another
  // format never reads them (a million functions read from a folded file saved 56 MB).
  FunctionCounts& slot(FunctionId f) const {
    if (f >= counts_.size()) grow_counts();
    return counts_[f];
  }
  void grow_counts() const;  // to every function of the table
  mutable std::vector<FunctionCounts> counts_;
  SettleFlag settled_;
  std::uint64_t total_weight_ = 0;
  std::uint64_t empty_weight_ = 0;
  bool calls_counted_ = false;
  bool every_function_counted_ = false;  // calls_counted_ for all, not a count list
  // Per callee, its callers and their calls: a function has few callers, and a short scan with
  // the last hit moved to the front beats hashing on every counted call.
  std::vector<std::vector<std::pair<FunctionId, std::uint64_t>>> callers_;
  // Locations (a function at a line; 0: unknown) by id, with their line counts, and an open
  // addressing index from (function, line) to the id: no allocation per location.
  std::vector<Location> locations_;
  mutable std::vector<LineCounts> location_counts_;  // settled with counts_
  std::vector<FunctionId> location_index_;  // kNoFunction: empty
  unsigned location_shift_ = 64;           // 64 - log2(location_index_.size())
  FunctionId location_of(FunctionId f, int line);  // found or added
  FunctionId find_location(FunctionId f, int line);  // the same through the index
  struct LastLocation {
    FunctionId function;  // kNoFunction: none yet
    int line;
    FunctionId id;
  };
  std::vector<LastLocation> last_location_;  // per function: the location it was last found at
  CallTree line_tree_;
  // The last sample, so that the next one looks up only the frames after their shared prefix.
  struct LastSample {
    std::uint32_t thread = 0;
    std::vector<FunctionId> frames;
    std::vector<int> lines;               // as the line tree has them (0: unknown)
    std::vector<NodeId> nodes;            // tree nodes: the process root, then one per frame
    std::vector<NodeId> line_nodes;       // the same in the line tree
    std::vector<FunctionId> locations;    // location ids per frame
    void forget() { nodes.clear(); line_nodes.clear(); locations.clear(); frames.clear(); lines.clear(); }
    LastSample() = default;
    // A copied profile starts afresh: its next sample is looked up whole.
    LastSample(const LastSample&) {}
    LastSample& operator=(const LastSample&) {
      forget();
      return *this;
    }
    LastSample(LastSample&&) = default;
    LastSample& operator=(LastSample&&) = default;
  } prev_;
  // The last sample's leaves, for add_jit_share; its compiled weight per leaf node of each tree.
  NodeId last_leaf_ = kNoNode, last_line_leaf_ = kNoNode;
  bool jit_paths_ = false;
  std::unordered_map<NodeId, std::uint64_t> compiled_nodes_, compiled_line_nodes_;
};

// Children of a call tree node, Count descending, ties by label bytewise (every tree writer's order).
std::vector<NodeId> children_by_count(const Profile& profile, NodeId node);

// "thread 1: main" for a process root node: how every report and file names a thread.
std::string thread_label(const Profile& profile, NodeId root);
// The same for a thread's number ("thread 3" when it has no name).
std::string thread_label_of(const Profile& profile, std::uint32_t thread);
// The same from a process's id and name (empty: none), for a writer with no Profile.
std::string thread_label_text(std::uint32_t thread, const std::string& name);
// A name thread_label_of wrote, read back: its number and name (false for any other text).
bool parse_thread_label(std::string_view label, std::uint32_t* thread, std::string* name);

// The name given to a thread (empty when it has none).
std::string thread_name(const Profile& profile, std::uint32_t thread);

// Visits every call tree node that ends samples (self > 0), in pre-order, with its thread and its
// root-first stack (empty for samples outside any function). One path is reused and nothing
// recurses, so 100k-frame stacks cost their size, not its square.
void for_each_sample_path(const Profile& profile,
                          const std::function<void(std::uint32_t thread, NodeId id, const CallTreeNode& node,
                                                   const std::vector<FunctionId>& stack)>& visit);

// Checks the invariants every profile must satisfy (DESIGN.md): sum of self = samples with
// frames, self <= cumulative <= samples, tree root counts = sample weight.
// Returns an empty string when they hold, else a description of the first violation.
std::string check_invariants(const Profile& profile);

}  // namespace scriptprof
