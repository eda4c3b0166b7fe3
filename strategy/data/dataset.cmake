# Dataset graph, node types, readers and file formats.
tpusim_cc_library(NAME dataset
                  SRCS dataset.cc dataset_nodes.cc readers.cc
                  HDRS dataset.h dataset_nodes.h random.h
                  DEPS tpusim::strategy::runtime::tensor tpusim::strategy::runtime::nest
                       tpusim::common::units tpusim::common::check
                       tpusim::common::status_macros absl::status absl::statusor
                       absl::strings absl::span)
