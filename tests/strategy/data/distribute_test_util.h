// tests/strategy/data/distribute_test_util.h
//
// Helpers for the distribution tests: run a distributed iterator to its end and
// render every step as replica → int64 values, so expectations read like the
// spec's tables.

#ifndef TPUSIM_TESTS_STRATEGY_DATA_DISTRIBUTE_TEST_UTIL_H_
#define TPUSIM_TESTS_STRATEGY_DATA_DISTRIBUTE_TEST_UTIL_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "strategy/data/dataset.h"
#include "strategy/data/distribute.h"

namespace tpusim::data::testing {

using Values = std::vector<int64_t>;
using Step = std::vector<Values>;  // one entry per replica

// The int64 values of a single-tensor element (any integer dtype).
inline Values ValuesOf(const Element& e) {
  const runtime::Tensor& t = *e.Flatten().at(0);
  Values out;
  for (int64_t i = 0; i < t.num_elements(); ++i) out.push_back(t.AsInt64(i));
  return out;
}

inline Values ValuesOf(const runtime::Tensor& t) {
  Values out;
  for (int64_t i = 0; i < t.num_elements(); ++i) out.push_back(t.AsInt64(i));
  return out;
}

inline Step StepValues(const strategy::PerReplica<Element>& step) {
  Step out;
  for (const Element& e : step.values()) out.push_back(ValuesOf(e));
  return out;
}

struct RunResult {
  std::vector<Step> steps;
  absl::Status
      end;  // the status that stopped the run (OutOfRange at a clean end)
};

// Calls GetNext until it fails (or max_steps steps).
inline RunResult RunToEnd(DistributedIterator& it, int max_steps = 1000) {
  RunResult result;
  for (int s = 0; s < max_steps; ++s) {
    absl::StatusOr<strategy::PerReplica<Element>> step = it.GetNext();
    if (!step.ok()) {
      result.end = step.status();
      return result;
    }
    result.steps.push_back(StepValues(*step));
  }
  result.end = absl::InternalError("max_steps reached");
  return result;
}

inline RunResult RunToEnd(const DistributedDataset& dist,
                          int max_steps = 1000) {
  absl::StatusOr<DistributedIterator> it = dist.MakeIterator();
  if (!it.ok()) return RunResult{{}, it.status()};
  return RunToEnd(*it, max_steps);
}

// All elements of a dataset as value lists; the error (if any) in `status`.
inline std::vector<Values> DatasetValues(const Dataset& ds,
                                         absl::Status* status = nullptr) {
  std::vector<Values> out;
  absl::StatusOr<IteratorPtr> it = ds.MakeIterator();
  if (!it.ok()) {
    if (status) *status = it.status();
    return out;
  }
  while (true) {
    absl::StatusOr<std::optional<Element>> e = (*it)->GetNext();
    if (!e.ok()) {
      if (status) *status = e.status();
      return out;
    }
    if (!e->has_value()) break;
    out.push_back(ValuesOf(**e));
  }
  if (status) *status = absl::OkStatus();
  return out;
}

inline std::string StepsToString(const std::vector<Step>& steps) {
  std::vector<std::string> parts;
  for (const Step& s : steps) {
    std::vector<std::string> reps;
    for (const Values& v : s)
      reps.push_back(absl::StrCat("[", absl::StrJoin(v, ","), "]"));
    parts.push_back(absl::StrJoin(reps, " / "));
  }
  return absl::StrJoin(parts, " | ");
}

}  // namespace tpusim::data::testing

#endif  // TPUSIM_TESTS_STRATEGY_DATA_DISTRIBUTE_TEST_UTIL_H_
