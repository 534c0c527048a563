#include <cmath>
#include <map>
#include <optional>
#include <unordered_map>

#include "pprof_encoding.hpp"
#include "scriptprof/interchange_formats.hpp"

namespace scriptprof {

using namespace pprof;

std::string write_pprof(const Profile& p, bool gzip) {
  StringTable strings;
  const bool wall = p.clock == ClockKind::Wall;
  std::string out;
  auto value_type = [&](const char* type, const char* unit) { return pprof::value_type(strings, type, unit); };
  // A space profile's weights are bytes (its period the mean bytes between samples): one
  // sample type, alloc_space/bytes, as Go's heap profiles name it. A time profile's weights
  // are ticks: samples/count and their time. A gc profile's weights are collections, one
  // sample type with no time: a sample after a collection stands for no measured span.
  const bool space = p.clock == ClockKind::Alloc;
  const bool gc = p.clock == ClockKind::Gc;
  if (space) {
    field_bytes(out, 1, value_type("alloc_space", "bytes"));
  } else if (gc) {
    field_bytes(out, 1, value_type("collections", "count"));
  } else {
    field_bytes(out, 1, value_type("samples", "count"));
    field_bytes(out, 1, value_type(wall ? "wall" : "cpu", "nanoseconds"));
  }

  // Samples: one per (stack, thread), in call tree order; the leaf location first. With the
  // lines the runtime gave, a location is a function at one line (go tool pprof -list, -lines);
  // else a function at its first line.
  const bool by_line = p.line_tree().size() > p.line_tree().roots().size();
  const CallTree& tree = by_line ? p.line_tree() : p.tree;
  auto function_of = [&](FunctionId location) { return by_line ? p.location(location).function : location; };
  const bool label_threads = tree.roots().size() > 1;
  std::map<FunctionId, bool> used, used_locations;
  for (const auto& [thread, root] : tree.roots()) {
    std::string thread_name;
    for (const auto& [t, r] : p.tree.roots())
      if (t == thread) thread_name = valid_utf8(thread_label(p, r));
    std::vector<NodeId> todo{root};
    while (!todo.empty()) {
      NodeId n = todo.back();
      todo.pop_back();
      const CallTreeNode& node = tree.node(n);
      if (node.self > 0 && n != root) {
        std::vector<std::uint64_t> locations;
        for (NodeId k = n; k != root; k = tree.node(k).parent) {
          FunctionId loc = tree.node(k).function;
          locations.push_back(static_cast<std::uint64_t>(loc) + 1);
          used_locations[loc] = true;
          used[function_of(loc)] = true;
        }
        auto label = [&](std::string& sample, const char* key, const std::string& value) {
          std::string l;
          field_varint(l, 1, strings.index(key));
          field_varint(l, 2, strings.index(value));
          field_bytes(sample, 3, l);
        };
        auto emit = [&](std::uint64_t weight, const char* jit) {
          std::string sample;
          field_packed(sample, 1, locations);
          if (space || gc) field_packed(sample, 2, {weight});
          else field_packed(sample, 2, {weight, weight * p.period_ns});
          if (label_threads) label(sample, "thread", thread_name);
          if (jit) label(sample, "jit", jit);
          field_bytes(out, 2, sample);
        };
        // A JIT runtime's Lua leaf splits by how its code ran: label jit=compiled/interpreted
        // (go tool pprof -tags, -tagfocus=jit=compiled).
        const std::optional<std::uint64_t> compiled =
            can_run_compiled(p.functions.info(function_of(node.function))) ? p.compiled_at(tree, n) : std::nullopt;
        if (!compiled) {
          emit(node.self, nullptr);
        } else {
          if (*compiled) emit(*compiled, "compiled");
          if (node.self > *compiled) emit(node.self - *compiled, "interpreted");
        }
      }
      std::vector<NodeId> kids;
      for (NodeId c = node.first_child; c != kNoNode; c = tree.node(c).next_sibling) kids.push_back(c);
      for (auto it = kids.rbegin(); it != kids.rend(); ++it) todo.push_back(*it);
    }
  }
  for (const auto& [loc, _] : used_locations) {
    FunctionId f = function_of(loc);
    // Line 0: not known (a C function, ticks left at a stop): the function's first line.
    int line_no = by_line && p.location(loc).line > 0 ? p.location(loc).line : p.functions.info(f).line;
    field_bytes(out, 4, location_message(loc, f, line_no));
  }
  for (const auto& [f, _] : used) field_bytes(out, 5, function_message(strings, f, p.functions));
  // Before the string table is written.
  std::string period_type = space ? value_type("space", "bytes")
                            : gc  ? value_type("collections", "count")
                                  : value_type(wall ? "wall" : "cpu", "nanoseconds");
  for (const std::string& s : strings.strings()) field_bytes(out, 6, s);
  field_varint(out, 9, p.start_unix_ns);
  field_varint(out, 10, static_cast<std::uint64_t>(std::llround(p.total_seconds * 1e9)));
  field_bytes(out, 11, period_type);
  field_varint(out, 12, gc ? 1 : p.period_ns);
  return gzip ? gzip_bytes(out) : out;
}

}  // namespace scriptprof
