# Rebatch, auto-shard, distributed dataset/iterator, InputContext.
tpusim_cc_library(NAME input_context SRCS input_context.cc HDRS input_context.h
                  DEPS tpusim::common::check absl::status absl::statusor absl::strings)
tpusim_cc_library(NAME distribute
                  SRCS rebatch.cc auto_shard.cc distribute.cc numpy_dataset.cc
                  HDRS rebatch.h auto_shard.h distribute.h numpy_dataset.h
                  DEPS tpusim::strategy::data::dataset tpusim::strategy::data::input_context
                       tpusim::common::check tpusim::common::status_macros
                       absl::status absl::statusor absl::strings)
