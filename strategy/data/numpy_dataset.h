// strategy/data/numpy_dataset.h
//
// experimental_make_numpy_dataset (spec (g)): an ordinary (not distributed)
// dataset of the slices along dimension 0 of host arrays, placed on the host of
// replica 0.
//
//   TPUSIM_ASSIGN_OR_RETURN(NumpyDataset np,
//                           MakeNumpyDataset(Element(Tensor::Zeros(DType::kF32,
//                           Shape({10}))),
//                                            workers));
//   // np.dataset: 10 float32 scalars; np.host_device:
//   ".../task:0/device:CPU:0"

#ifndef TPUSIM_STRATEGY_DATA_NUMPY_DATASET_H_
#define TPUSIM_STRATEGY_DATA_NUMPY_DATASET_H_

#include <string>

#include "absl/status/statusor.h"
#include "strategy/data/dataset.h"
#include "strategy/data/input_context.h"

namespace tpusim::data {

struct NumpyDataset {
  Dataset dataset;  // from_tensor_slices(arrays)
  std::string
      host_device;  // the host CPU device of the worker feeding replica 0
};

// Errors (InvalidArgument): invalid workers; a nest without arrays; an array of
// rank 0; arrays whose dimension 0 differs (the message names each path and its
// dimension 0).
absl::StatusOr<NumpyDataset> MakeNumpyDataset(const Element& arrays,
                                              const InputWorkers& workers);

}  // namespace tpusim::data

#endif  // TPUSIM_STRATEGY_DATA_NUMPY_DATASET_H_
