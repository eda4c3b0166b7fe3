// strategy/distributed_input.h
//
// DistributedInputIterator: a distributed dataset's iterator
// (strategy/data/distribute.h) seen through the facade's InputIterator
// interface, so TPUStrategy::ExperimentalRun and the steps_per_run runner can
// pull from it. This is what `iter(strategy.
// experimental_distribute_dataset(ds))`, make_dataset_iterator and
// make_input_fn_iterator give in tpusim.
//
//   TPUSIM_ASSIGN_OR_RETURN(data::DistributedDataset dist,
//                           strategy.ExperimentalDistributeDataset(ds));
//   TPUSIM_ASSIGN_OR_RETURN(std::unique_ptr<DistributedInputIterator> it,
//                           DistributedInputIterator::Create(dist));
//   while (true) {
//     absl::StatusOr<ValueNest> loss = strategy.ExperimentalRun(step,
//     it.get()); if (absl::IsOutOfRange(loss.status())) break;
//   }

#ifndef TPUSIM_STRATEGY_DISTRIBUTED_INPUT_H_
#define TPUSIM_STRATEGY_DISTRIBUTED_INPUT_H_

#include <memory>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "strategy/data/distribute.h"
#include "strategy/input_iterator.h"

namespace tpusim::strategy {

class DistributedInputIterator final : public InputIterator {
 public:
  // A fresh iterator over every worker's pipeline of `dataset`. Errors: those
  // of making the workers' iterators.
  static absl::StatusOr<std::unique_ptr<DistributedInputIterator>> Create(
      const data::DistributedDataset& dataset);
  // Wraps an iterator made elsewhere (make_dataset_iterator,
  // make_input_fn_iterator).
  explicit DistributedInputIterator(data::DistributedIterator iterator)
      : iterator_(std::move(iterator)) {}

  // One step: replica r's element at index r. kOutOfRange at the end; pipeline
  // errors (e.g. the require-non-empty shard's InvalidArgument) propagate
  // unchanged.
  absl::StatusOr<PerReplica<ReplicaElement>> GetNext() override {
    return iterator_.GetNext();
  }
  // TF1 iterator.initialize(): restarts every worker's pipeline (the same
  // sequence again).
  absl::Status Initialize() { return iterator_.Initialize(); }
  // The per-replica element spec.
  const data::ElementSpec& element_spec() const {
    return iterator_.element_spec();
  }

 private:
  data::DistributedIterator iterator_;
};

}  // namespace tpusim::strategy

#endif  // TPUSIM_STRATEGY_DISTRIBUTED_INPUT_H_
