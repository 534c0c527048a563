#include <catch2/catch.hpp>

#include "scriptprof/guile_number_format.hpp"

using scriptprof::guile_display;
using scriptprof::guile_fixed;

TEST_CASE("Guile ~W.Df rounds the shortest decimal half-up - unlike printf (FORMATS 0.7)") {
  CHECK(guile_fixed(0.125, 0, 2) == "0.13");
  CHECK(guile_fixed(2.675, 0, 2) == "2.68");
  CHECK(guile_fixed(0.015, 0, 2) == "0.02");
  CHECK(guile_fixed(1.005, 0, 2) == "1.01");
  CHECK(guile_fixed(0.05, 0, 1) == "0.1");
  CHECK(guile_fixed(0.15, 0, 1) == "0.2");
  CHECK(guile_fixed(0.25, 0, 1) == "0.3");
  CHECK(guile_fixed(12.25, 0, 1) == "12.3");
  CHECK(guile_fixed(-0.004, 0, 2) == "-0.00");
  CHECK(guile_fixed(9.995, 0, 2) == "10.00");  // the carry ripples into a new digit
  CHECK(guile_fixed(99.999, 0, 2) == "100.00");
}

TEST_CASE("Guile ~W.Df pads to a minimum width and never truncates") {
  CHECK(guile_fixed(70.0, 6, 2) == " 70.00");
  CHECK(guile_fixed(100.0, 6, 2) == "100.00");
  CHECK(guile_fixed(0.7, 9, 2) == "     0.70");
  CHECK(guile_fixed(1234567.891, 9, 2) == "1234567.89");
  CHECK(guile_fixed(0.0, 6, 2) == "  0.00");
}

TEST_CASE("display of a flonum") {
  CHECK(guile_display(1.0) == "1.0");
  CHECK(guile_display(0.0) == "0.0");
  CHECK(guile_display(0.375319459) == "0.375319459");
  CHECK(guile_display(1.371277104) == "1.371277104");
  CHECK(guile_display(1e-4) == "1.0e-4");
  CHECK(guile_display(9.765625e-4) == "9.765625e-4");
  CHECK(guile_display(12345678901.5) == "12345678901.5");
}

// Seconds in reports: Guile's display where it is fixed notation, to the nanosecond, and never
// an exponent (5.38113e-4) or the 17 digits of a computed share (0.18139194931764707).
TEST_CASE("report seconds are fixed notation to the nanosecond") {
  CHECK(scriptprof::report_seconds(0.0) == "0.0");
  CHECK(scriptprof::report_seconds(1.0) == "1.0");
  CHECK(scriptprof::report_seconds(1.371277104) == "1.371277104");
  CHECK(scriptprof::report_seconds(5.38113e-4) == "0.000538113");
  CHECK(scriptprof::report_seconds(0.18139194931764707) == "0.181391949");
  CHECK(scriptprof::report_seconds(2.0000000004) == "2.0");
  CHECK(scriptprof::report_seconds(59.9999999996) == "60.0");
  for (double x : {1.0, 1.371277104, 0.375319459, 0.5, 12.25}) CHECK(scriptprof::report_seconds(x) == scriptprof::guile_display(x));
}
