#include "strategy/config_proto.h"

namespace tpusim::strategy {

tensorflow::ClusterDef ClusterSpecToClusterDef(const ClusterSpec& spec) {
  tensorflow::ClusterDef cluster_def;
  for (const auto& [name, addresses] : spec) {
    tensorflow::JobDef* job = cluster_def.add_job();
    job->set_name(name);
    for (size_t t = 0; t < addresses.size(); ++t) {
      (*job->mutable_tasks())[static_cast<int>(t)] = addresses[t];
    }
  }
  return cluster_def;
}

tensorflow::ConfigProto UpdateConfigProto(const tensorflow::ConfigProto& config,
                                          const TPUClusterResolver& resolver) {
  tensorflow::ConfigProto updated = config;
  updated.set_isolate_session_state(true);
  const ClusterSpec spec = resolver.cluster_spec();
  if (!spec.empty())
    *updated.mutable_cluster_def() = ClusterSpecToClusterDef(spec);
  return updated;
}

}  // namespace tpusim::strategy
