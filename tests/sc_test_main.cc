// The test entry point for tests that link SystemC (sim/ and
// tests/integration/).
//
// libsystemc.so owns main() and calls sc_main(), so this file defines sc_main
// rather than main. It installs a report handler that turns every SystemC
// warning, error and fatal into a GoogleTest failure (errors keep SystemC's
// default behaviour of throwing, so the model code after them never runs), then
// runs the tests. Each TEST runs in its own process under ctest
// (gtest_discover_tests), so each may elaborate and run its own SystemC kernel.

#include <systemc>

#include "gtest/gtest.h"

namespace {

void ReportToGtest(const sc_core::sc_report& report,
                   const sc_core::sc_actions& actions) {
  const sc_core::sc_severity severity = report.get_severity();
  if (severity == sc_core::SC_INFO) return;
  ADD_FAILURE() << "SystemC "
                << (severity == sc_core::SC_WARNING ? "warning" : "error")
                << " [" << report.get_msg_type() << "] " << report.get_msg()
                << " at " << report.get_file_name() << ":"
                << report.get_line_number();
  if (actions & sc_core::SC_THROW) throw report;
}

}  // namespace

int sc_main(int argc, char* argv[]) {
  testing::InitGoogleTest(&argc, argv);
  sc_core::sc_report_handler::set_handler(&ReportToGtest);
  return RUN_ALL_TESTS();
}
