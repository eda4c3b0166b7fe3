# Dataset graph, node types, readers and file formats.
tpusim_cc_library(NAME crc32c SRCS crc32c.cc HDRS crc32c.h DEPS absl::strings)
tpusim_cc_library(NAME tfrecord SRCS tfrecord.cc zlib_stream.cc HDRS tfrecord.h zlib_stream.h
                  DEPS tpusim::strategy::data::crc32c tpusim::common::file_io
                       tpusim::common::check tpusim::common::status_macros
                       ZLIB::ZLIB absl::status absl::statusor
                       absl::strings)
tpusim_cc_library(NAME dataset
                  SRCS dataset.cc dataset_nodes.cc readers.cc glob.cc sparse.cc
                  HDRS dataset.h dataset_nodes.h random.h glob.h sparse.h
                  DEPS tpusim::strategy::data::tfrecord
                       tpusim::strategy::runtime::tensor tpusim::strategy::runtime::nest
                       tpusim::common::units tpusim::common::check
                       tpusim::common::status_macros absl::status absl::statusor
                       absl::strings absl::span)
tpusim_cc_library(NAME example_parser SRCS example_parser.cc HDRS example_parser.h
                  DEPS tpusim::strategy::data::dataset tpusim::proto absl::strings)
