// libFuzzer target for one reader, chosen at compile time (SCRIPTPROF_FUZZ_FORMAT). Whatever
// the reader accepts must be a sound profile that every report and writer can handle.
#include <cstdint>
#include <cstdlib>
#include <string>

#include "scriptprof/profile_io.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  std::string_view text(reinterpret_cast<const char*>(data), size);
  scriptprof::Profile p;
  std::string error;
  std::vector<std::string> warnings;
  if (!scriptprof::read_profile_text(text, SCRIPTPROF_FUZZ_FORMAT, &p, &error, &warnings)) {
    if (error.empty()) std::abort();  // a refusal must say why
    return 0;
  }
  if (!scriptprof::check_invariants(p).empty()) std::abort();
  std::string out;
  for (const auto& style : scriptprof::report_styles()) scriptprof::render_report(p, style, &out, &error);
  for (const auto& format : scriptprof::file_formats()) scriptprof::render_format(p, format, &out, &error);
  // Our own tree file of it must read back.
  scriptprof::render_format(p, "lispworks", &out, &error);
  scriptprof::Profile back;
  if (!scriptprof::read_profile_text(out, "lispworks", &back, &error)) std::abort();
  if (back.sample_weight() != p.sample_weight()) std::abort();
  return 0;
}
