// Guile's number printing, so statprof reports match Guile byte for byte (FORMATS.md 0.7).
#pragma once
#include <string>

namespace scriptprof {

// (format "~W,Df" x): the shortest round-trip decimal of x rounded half-up to `decimals`
// digits, right-aligned in at least `width` characters. 0.125 -> "0.13", 2.675 -> "2.68".
std::string guile_fixed(double x, int width, int decimals);

// (display x) of a flonum: shortest round-trip digits, always with a fraction ("1.0",
// "0.375319459"); exponent form below 1e-3 ("1.0e-4") and from 1e21 up.
std::string guile_display(double x);

// Seconds in a report: to the nanosecond (the clocks' unit), in fixed notation with at least
// one decimal ("1.0", "1.371277104", "0.000538113"): Guile's display of such a value from 1e-3
// up, and never an exponent or a 17-digit quotient below it.
std::string report_seconds(double seconds);

}  // namespace scriptprof
