#include "tools/scale_batch.h"

#include <array>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "common/status_macros.h"
#include "strategy/runtime/slice.h"

namespace tpusim::tools {

absl::StatusOr<ScaleBatch> ParseScaleBatchFlag(const ParsedArgs& args) {
  if (!args.Has("scale-batch")) return ScaleBatch::kGlobal;
  const std::string value = args.Get("scale-batch");
  if (value == "global") return ScaleBatch::kGlobal;
  if (value != "per-replica") {
    return UsageError(absl::StrCat("--scale-batch=", value,
                                   " must be per-replica or global"));
  }
  for (const std::string& set : args.GetAll("set")) {
    if (absl::StartsWith(set, "global_batch_size=")) {
      return UsageError(absl::StrCat(
          "--scale-batch=per-replica sets global_batch_size itself (the "
          "file's per-replica batch times the replicas); drop --set ",
          set, " or use --scale-batch=global"));
    }
  }
  return ScaleBatch::kPerReplica;
}

absl::StatusOr<int64_t> RunReplicas(const scenarios::LoadedScenario& s) {
  const scenarios::Scenario& sc = s.proto;
  if (sc.run().has_device_assignment()) {
    const scenarios::DeviceAssignmentSpec& da = sc.run().device_assignment();
    return da.has_num_replicas() ? da.num_replicas() : 1;
  }
  const proto::PodSpec& pod = sc.run().pod();
  if (pod.has_slice()) {
    TPUSIM_ASSIGN_OR_RETURN(runtime::SliceLayout layout,
                            runtime::ParseSlice(pod.slice()));
    return layout.num_devices();
  }
  if (pod.has_generation()) {
    TPUSIM_ASSIGN_OR_RETURN(const runtime::TpuGeneration* g,
                            runtime::FindTpuGeneration(pod.generation()));
    int64_t chips = 1;
    for (int d : pod.shape()) chips *= d;
    return chips * g->devices_per_chip;
  }
  TPUSIM_ASSIGN_OR_RETURN(scenarios::ClusterLayout cluster,
                          scenarios::ResolveCluster(s));
  if (!cluster.slice.empty()) {
    TPUSIM_ASSIGN_OR_RETURN(runtime::SliceLayout layout,
                            runtime::ParseSlice(cluster.slice));
    return layout.num_devices();
  }
  return cluster.num_replicas();
}

absl::StatusOr<scenarios::LoadedScenario> LoadRunScenario(
    const std::string& path, const std::vector<std::string>& sets,
    ScaleBatch mode) {
  TPUSIM_ASSIGN_OR_RETURN(scenarios::LoadedScenario scenario,
                          scenarios::LoadScenarioFile(path, sets));
  if (mode == ScaleBatch::kGlobal) return scenario;
  TPUSIM_ASSIGN_OR_RETURN(scenarios::LoadedScenario file,
                          scenarios::LoadScenarioFile(path));
  TPUSIM_ASSIGN_OR_RETURN(int64_t file_replicas, RunReplicas(file));
  const int64_t global = file.proto.global_batch_size();
  if (file_replicas < 1 || global % file_replicas != 0) {
    return absl::InvalidArgumentError(absl::StrCat(
        "--scale-batch=per-replica: ", path, ": global_batch_size=", global,
        " is not divisible by its ", file_replicas,
        " replicas, so it has no per-replica batch"));
  }
  TPUSIM_ASSIGN_OR_RETURN(int64_t replicas, RunReplicas(scenario));
  std::vector<std::string> scaled = sets;
  scaled.push_back(absl::StrCat("global_batch_size=",
                                global / file_replicas * replicas));
  return scenarios::LoadScenarioFile(path, scaled);
}

}  // namespace tpusim::tools
