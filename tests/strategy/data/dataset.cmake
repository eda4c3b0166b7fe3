# Tests of the dataset graph, nodes, readers and formats.
tpusim_cc_test(NAME dataset_test SRCS dataset_test.cc DEPS tpusim::strategy::data::dataset)
tpusim_cc_test(NAME crc32c_test SRCS crc32c_test.cc DEPS tpusim::strategy::data::crc32c)
tpusim_cc_test(NAME tfrecord_test SRCS tfrecord_test.cc DEPS tpusim::strategy::data::tfrecord)
tpusim_cc_test(NAME readers_test SRCS readers_test.cc DEPS tpusim::strategy::data::dataset)
tpusim_cc_test(NAME example_parser_test SRCS example_parser_test.cc
               DEPS tpusim::strategy::data::example_parser)
tpusim_cc_test(NAME hardening_test SRCS hardening_test.cc
               DEPS tpusim::strategy::data::dataset tpusim::common::status_matchers)
tpusim_cc_test(NAME compressed_tfrecord_test SRCS compressed_tfrecord_test.cc
               DEPS tpusim::strategy::data::tfrecord tpusim::strategy::data::dataset
                    tpusim::common::status_matchers absl::strings)
