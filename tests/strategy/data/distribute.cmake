# Tests of rebatch, auto-shard and distribution.
tpusim_cc_test(NAME input_context_test SRCS input_context_test.cc
               DEPS tpusim::strategy::data::input_context)
tpusim_cc_test(NAME rebatch_test SRCS rebatch_test.cc DEPS tpusim::strategy::data::distribute)
tpusim_cc_test(NAME auto_shard_test SRCS auto_shard_test.cc
               DEPS tpusim::strategy::data::distribute tpusim::strategy::data::tfrecord)
tpusim_cc_test(NAME distribute_test SRCS distribute_test.cc
               DEPS tpusim::strategy::data::distribute)
tpusim_cc_test(NAME distribute_property_test SRCS distribute_property_test.cc
               DEPS tpusim::strategy::data::distribute tpusim::strategy::data::tfrecord)
tpusim_cc_test(NAME sparse_test SRCS sparse_test.cc
               DEPS tpusim::strategy::data::distribute tpusim::strategy::data::example_parser
                    tpusim::common::status_matchers)
tpusim_cc_test(NAME shard_repeat_test SRCS shard_repeat_test.cc
               DEPS tpusim::strategy::data::distribute tpusim::common::status_matchers)
