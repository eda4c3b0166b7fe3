# Tests of the dataset graph, nodes, readers and formats.
tpusim_cc_test(NAME dataset_test SRCS dataset_test.cc DEPS tpusim::strategy::data::dataset)
