// models/models.h
//
// The builders the registry (workload.h) maps names to. Each validates its
// typed parameters (InvalidArgument naming the parameter, its value and what is
// allowed).

#ifndef TPUSIM_MODELS_MODELS_H_
#define TPUSIM_MODELS_MODELS_H_

#include <memory>

#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "models/workload.h"

namespace tpusim::models {

absl::StatusOr<std::unique_ptr<Workload>> MakeMlp(const WorkloadParams& p);
absl::StatusOr<std::unique_ptr<Workload>> MakeResNet50(const WorkloadParams& p);
absl::StatusOr<std::unique_ptr<Workload>> MakeBert(const WorkloadParams& p);
absl::StatusOr<std::unique_ptr<Workload>> MakeTransformerLm(
    const WorkloadParams& p);

}  // namespace tpusim::models

#endif  // TPUSIM_MODELS_MODELS_H_
