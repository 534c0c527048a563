#include "statprof_footer.hpp"

#include "scriptprof/guile_number_format.hpp"
#include "scriptprof/profile.hpp"

namespace scriptprof {

std::string statprof_footer(const Profile& p) {
  std::string gc;
  if (p.gc_measured) gc = report_seconds(p.gc_seconds) + " seconds in GC";
  else if (p.gc_seconds > 0)
    gc = report_seconds(p.gc_seconds) + " seconds in explicit collections; other GC time not measured on this runtime";
  else gc = "GC time not measured on this runtime";
  return "---\nSample count: " + std::to_string(p.sample_weight()) + "\nTotal time: " +
         report_seconds(p.total_seconds) + " seconds (" + gc + ")\n";
}

}  // namespace scriptprof
