// The heap profile as pprof, laid out as Go's runtime/pprof writes its heap profile: four
// sample types, the period in bytes, and a numeric "bytes" label with the site's mean block
// size (go tool pprof -tags).
#include <algorithm>
#include <cmath>
#include <map>
#include <set>

#include "pprof_encoding.hpp"
#include "scriptprof/heap_profile.hpp"
#include "scriptprof/profile.hpp"

namespace scriptprof {

using namespace pprof;

std::string write_heap_pprof(const HeapProfile& p, bool gzip) {
  StringTable strings;
  std::string out;
  for (const char* type : {"alloc_objects", "alloc_space", "inuse_objects", "inuse_space"})
    field_bytes(out, 1, value_type(strings, type, std::string(type).find("objects") != std::string::npos ? "count" : "bytes"));
  std::set<std::uint32_t> processes;
  for (const HeapSite& site : p.sites) processes.insert(site.process);
  std::map<std::uint32_t, std::string> thread_names(p.threads.begin(), p.threads.end());
  std::set<FunctionId> used;
  auto count = [](double v) { return static_cast<std::uint64_t>(std::llround(std::max(0.0, v))); };
  for (const HeapSite& site : p.sites) {
    bool known = !site.frames.empty();
    for (FunctionId f : site.frames) known = known && f < p.functions.size();
    if (!known) continue;
    std::string sample;
    std::vector<std::uint64_t> locations;  // leaf first
    for (auto it = site.frames.rbegin(); it != site.frames.rend(); ++it) {
      locations.push_back(static_cast<std::uint64_t>(*it) + 1);
      used.insert(*it);
    }
    field_packed(sample, 1, locations);
    field_packed(sample, 2, {count(site.alloc_objects), count(site.alloc_bytes), count(site.inuse_objects),
                             count(site.inuse_bytes)});
    if (processes.size() > 1) {
      auto name = thread_names.find(site.process);
      std::string label;
      field_varint(label, 1, strings.index("thread"));
      field_varint(label, 2, strings.index(valid_utf8(
                                 thread_label_text(site.process, name != thread_names.end() ? name->second : ""))));
      field_bytes(sample, 3, label);
    }
    if (site.alloc_objects > 0) {
      std::string label;
      field_varint(label, 1, strings.index("bytes"));
      field_varint(label, 3, count(site.alloc_bytes / site.alloc_objects));
      field_bytes(sample, 3, label);
    }
    field_bytes(out, 2, sample);
  }
  // A location per function, at its first line (a site is where the sample found the stack).
  for (FunctionId f : used) field_bytes(out, 4, location_message(f, f, p.functions.info(f).line));
  for (FunctionId f : used) field_bytes(out, 5, function_message(strings, f, p.functions));
  const std::string period_type = value_type(strings, "space", "bytes");
  const std::uint64_t default_type = strings.index(p.allocs_first ? "alloc_space" : "inuse_space");
  for (const std::string& s : strings.strings()) field_bytes(out, 6, s);
  field_varint(out, 9, p.time_unix_ns);
  field_bytes(out, 11, period_type);
  field_varint(out, 12, p.sample_bytes);
  field_varint(out, 14, default_type);
  return gzip ? gzip_bytes(out) : out;
}

}  // namespace scriptprof
