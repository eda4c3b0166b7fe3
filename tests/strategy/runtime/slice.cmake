# Slice layout tests.
tpusim_cc_test(NAME slice_test SRCS slice_test.cc DEPS tpusim::strategy::runtime::slice)
