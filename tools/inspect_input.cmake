# `tpusim inspect-input` (included by tools/CMakeLists.txt).
tpusim_cc_library(NAME inspect_input_report SRCS inspect_input_report.cc
                  HDRS inspect_input_report.h
                  DEPS tpusim::tools::json_writer tpusim::scenarios::input_runner
                       tpusim::strategy::runtime::tensor absl::strings)
tpusim_cc_library(NAME inspect_input_command SRCS inspect_input_command.cc
                  HDRS inspect_input_command.h
                  DEPS tpusim::tools::cli tpusim::tools::inspect_input_report
                       tpusim::scenarios::input_runner tpusim::scenarios::scenario_loader
                       tpusim::common::status_macros tpusim::common::file_io
                       absl::status absl::strings)
list(APPEND TPUSIM_CLI_SUBCOMMANDS tpusim::tools::inspect_input_command)
