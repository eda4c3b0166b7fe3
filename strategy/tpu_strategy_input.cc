// TPUStrategy's input entry points: the facade over strategy/data/distribute.h.
// The strategy contributes what TF's TPUStrategy contributes: N =
// num_replicas_in_sync as split_batch_by, one input worker per host of the
// replica devices (spec (a), (l)), and the semantics version.

#include "common/status_macros.h"
#include "strategy/tpu_strategy.h"

namespace tpusim::strategy {
namespace {

data::DistributeOptions DistributeOptionsFor(
    const TPUStrategyOptions& options) {
  data::DistributeOptions out;
  out.semantics_version = options.semantics_version;
  // TPUStrategy forces experimental_enable_get_next_as_optional on (spec (l)).
  out.enable_get_next_as_optional = true;
  return out;
}

}  // namespace

data::InputWorkers TPUStrategy::data_input_workers() const {
  return data::InputWorkers{mapping_.replicas_per_worker,
                            mapping_.worker_devices};
}

absl::StatusOr<data::DistributedDataset>
TPUStrategy::ExperimentalDistributeDataset(const data::Dataset& dataset) const {
  return data::DistributeDataset(dataset, data_input_workers(),
                                 DistributeOptionsFor(options_));
}

absl::StatusOr<data::DistributedDataset>
TPUStrategy::ExperimentalDistributeDatasetsFromFunction(
    const data::DatasetFunction& dataset_fn) const {
  return data::DistributeDatasetsFromFunction(dataset_fn, data_input_workers(),
                                              DistributeOptionsFor(options_));
}

absl::StatusOr<std::unique_ptr<DistributedInputIterator>>
TPUStrategy::MakeDatasetIterator(const data::Dataset& dataset) const {
  TPUSIM_ASSIGN_OR_RETURN(
      data::DistributedIterator it,
      data::MakeDatasetIterator(dataset, data_input_workers(),
                                DistributeOptionsFor(options_)));
  return std::make_unique<DistributedInputIterator>(std::move(it));
}

absl::StatusOr<std::unique_ptr<DistributedInputIterator>>
TPUStrategy::MakeInputFnIterator(
    const data::InputFn& input_fn,
    data::InputReplicationMode replication_mode) const {
  TPUSIM_ASSIGN_OR_RETURN(data::DistributedIterator it,
                          data::MakeInputFnIterator(
                              input_fn, data_input_workers(), replication_mode,
                              DistributeOptionsFor(options_)));
  return std::make_unique<DistributedInputIterator>(std::move(it));
}

absl::StatusOr<data::NumpyDataset> TPUStrategy::ExperimentalMakeNumpyDataset(
    const data::Element& numpy_input) const {
  return data::MakeNumpyDataset(numpy_input, data_input_workers());
}

}  // namespace tpusim::strategy
