# Values, ReplicaContext, TPUStrategy, reduce, variables.
tpusim_cc_library(NAME values HDRS values.h
                  DEPS tpusim::common::check tpusim::strategy::runtime::tensor
                       tpusim::strategy::runtime::nest absl::strings)
tpusim_cc_library(NAME reduce SRCS reduce.cc HDRS reduce.h
                  DEPS tpusim::strategy::values tpusim::strategy::runtime::tensor
                       tpusim::common::status_macros absl::status absl::statusor absl::strings
                       absl::span)
tpusim_cc_library(NAME distribute
                  SRCS distribute_lib.cc replica_context.cc variables.cc input_iterator.cc
                  HDRS distribute_lib.h replica_context.h variables.h input_iterator.h
                  DEPS tpusim::strategy::reduce tpusim::strategy::values
                       tpusim::strategy::runtime::program tpusim::strategy::runtime::nest
                       tpusim::common::status_macros absl::status absl::statusor absl::strings)
tpusim_cc_library(NAME tpu_strategy
                  SRCS tpu_strategy.cc tpu_strategy_input.cc distributed_input.cc
                  HDRS tpu_strategy.h distributed_input.h
                  DEPS tpusim::strategy::distribute tpusim::strategy::data::distribute
                       tpusim::strategy::cluster_resolver
                       tpusim::strategy::config_proto tpusim::strategy::device_assignment
                       tpusim::strategy::runtime::backend tpusim::common::status_macros
                       absl::status absl::statusor absl::strings)
