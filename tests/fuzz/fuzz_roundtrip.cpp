// libFuzzer target: whatever a reader accepts (format guessed from the contents), written in each
// readable format and read back, is the same profile: the same weight, and the same stacks of the
// same labels (compared as folded lines). Speedscope replaces bytes that are not UTF-8 and the
// Sampler format keeps 1024 frames of a stack: for those, the weight alone, less the samples
// outside any function, which neither writes (FORMATS 5.2, 8.3). lms CSV, written from a
// profile's timeline (an lms file's own, or a speedscope or Sampler file's), counts
// microseconds, not samples: what it read is written again byte for byte. A LispWorks tree
// writes a CR or LF in a name as a space (its one lossy case) and tells apart the names that
// then meet with " #2": for a profile with such a name, the weight alone too.
#include <cstdint>
#include <cstdlib>
#include <string>

#include "scriptprof/folded_stacks.hpp"
#include "scriptprof/interval_formats.hpp"
#include "scriptprof/profile_io.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  std::string_view text(reinterpret_cast<const char*>(data), size);
  scriptprof::Profile p;
  std::string error;
  if (!scriptprof::read_profile_text(text, "", &p, &error)) return 0;
  scriptprof::FoldedWriteOptions bare;
  bare.time_scale = false;
  const std::string stacks = scriptprof::write_folded(p, bare);
  bool line_break = false;
  for (scriptprof::FunctionId f = 0; f < p.functions.size(); ++f)
    line_break = line_break || p.functions.label(f).find_first_of("\r\n") != std::string::npos;
  for (const auto& format : scriptprof::readable_formats()) {
    std::string out;
    // A Sampler file is a line per tick: the writer's own limit (256 MiB, tested in the unit
    // tests) takes the instrumented reader ~20 s, past the fuzzer's timeout; 16 MiB takes ~1 s.
    scriptprof::SamplerWriteOptions small_sampler;
    small_sampler.max_bytes = 16u << 20;
    const bool made = format == "sampler" ? scriptprof::write_sampler(p, &out, &error, small_sampler)
                                          : scriptprof::render_format(p, format, &out, &error);
    if (!made) continue;  // one it cannot hold, said
    scriptprof::Profile back;
    if (!scriptprof::read_profile_text(out, format, &back, &error)) std::abort();
    if (format == "lms") {
      std::string again;
      if (!scriptprof::render_format(back, format, &again, &error) || again != out) std::abort();
      continue;
    }
    const bool drops_empty = format == "speedscope" || format == "sampler";
    const std::uint64_t want = p.sample_weight() - (drops_empty ? p.empty_weight() : 0);
    if (back.sample_weight() != want) std::abort();
    const bool labels_kept = format != "speedscope" && format != "sampler" && !(format == "lispworks" && line_break);
    if (labels_kept && scriptprof::write_folded(back, bare) != stacks) std::abort();
  }
  return 0;
}
