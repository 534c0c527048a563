#include "statprof_footer.hpp"

#include "scriptprof/guile_number_format.hpp"
#include "scriptprof/profile.hpp"

namespace scriptprof {

std::string statprof_footer(const Profile& p) {
  std::string out = "---\nSample count: " + std::to_string(p.sample_weight()) + "\nTotal time: " +
                    report_seconds(p.total_seconds) + " seconds (" + report_seconds(p.gc_seconds) + " seconds in GC)\n";
  // Guile's line stays as it is (tools read it); where it holds explicit collections only, the
  // next line says so.
  if (!p.gc_measured) out += "GC time: not measured on this runtime (the seconds in GC above are explicit collections)\n";
  return out;
}

}  // namespace scriptprof
