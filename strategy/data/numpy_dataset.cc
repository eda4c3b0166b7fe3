// strategy/data/numpy_dataset.cc

#include "strategy/data/numpy_dataset.h"

#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "common/status_macros.h"

namespace tpusim::data {

absl::StatusOr<NumpyDataset> MakeNumpyDataset(const Element& arrays,
                                              const InputWorkers& workers) {
  TPUSIM_RETURN_IF_ERROR(workers.Validate());
  const auto leaves = arrays.FlattenWithPaths();
  if (leaves.empty()) {
    return absl::InvalidArgumentError(
        "experimental_make_numpy_dataset: numpy_input holds no array");
  }
  std::vector<std::string> dims;
  bool equal = true;
  for (const auto& [path, t] : leaves) {
    if (t->rank() < 1) {
      return absl::InvalidArgumentError(absl::StrCat(
          "experimental_make_numpy_dataset: array ", path, " is a scalar (",
          t->spec().ToString(),
          "); arrays are sliced along dimension 0 and need rank >= 1"));
    }
    dims.push_back(absl::StrCat(path, ": ", t->shape().dim(0)));
    equal = equal && t->shape().dim(0) == leaves[0].second->shape().dim(0);
  }
  if (!equal) {
    return absl::InvalidArgumentError(absl::StrCat(
        "experimental_make_numpy_dataset: arrays must share dimension 0; got {",
        absl::StrJoin(dims, ", "), "}"));
  }
  TensorRefNest refs =
      arrays.Map([](const runtime::Tensor& t) { return TensorRef(t); });
  Dataset ds = Dataset::FromTensorSlices(std::move(refs));
  if (!ds.ok()) return ds.status();
  std::string host;
  for (int w = 0; w < workers.num_workers(); ++w) {
    for (int r : workers.replicas_per_worker[w]) {
      if (r == 0) host = workers.worker_devices[w];
    }
  }
  return NumpyDataset{std::move(ds), std::move(host)};
}

}  // namespace tpusim::data
