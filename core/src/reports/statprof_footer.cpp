#include "statprof_footer.hpp"

#include <cmath>

#include "scriptprof/guile_number_format.hpp"
#include "scriptprof/profile.hpp"

namespace scriptprof {

namespace {

// Seconds to the nanosecond, as Guile's are (its clocks count nanoseconds): a share of the
// total computed in floating point would otherwise print 17 digits.
double to_nanosecond(double seconds) { return std::round(seconds * 1e9) / 1e9; }

}  // namespace

std::string statprof_footer(const Profile& p) {
  std::string gc;
  if (p.gc_measured) gc = guile_display(to_nanosecond(p.gc_seconds)) + " seconds in GC";
  else if (p.gc_seconds > 0)
    gc = guile_display(to_nanosecond(p.gc_seconds)) + " seconds in explicit collections; other GC time not measured on this runtime";
  else gc = "GC time not measured on this runtime";
  return "---\nSample count: " + std::to_string(p.sample_weight()) + "\nTotal time: " +
         guile_display(to_nanosecond(p.total_seconds)) + " seconds (" + gc + ")\n";
}

}  // namespace scriptprof
