// strategy/config_proto.h
//
// TPUStrategy.update_config_proto (spec (h)): a copy of a session ConfigProto
// with isolate_session_state set and the cluster definition taken from the
// resolver.
//
//   tensorflow::ConfigProto updated = UpdateConfigProto(config, resolver);
//   updated.isolate_session_state();          // true
//   updated.cluster_def().job(0).name();      // "worker"
//
// The proto (strategy/config.proto) is wire-compatible with TensorFlow's for
// the fields it declares; other fields of a parsed ConfigProto are kept as
// unknown fields.

#ifndef TPUSIM_STRATEGY_CONFIG_PROTO_H_
#define TPUSIM_STRATEGY_CONFIG_PROTO_H_

#include "strategy/cluster_resolver.h"
#include "strategy/config.pb.h"

namespace tpusim::strategy {

// The ClusterDef of `spec`: one JobDef per job in name order, tasks keyed by
// task index.
tensorflow::ClusterDef ClusterSpecToClusterDef(const ClusterSpec& spec);

// Returns a copy of `config` (unknown fields included) with
// isolate_session_state = true and, when resolver.cluster_spec() is non-empty,
// cluster_def replaced by it. Nothing else is changed; `config` is not
// modified. TF 2.1 tpu_strategy._update_config_proto.
tensorflow::ConfigProto UpdateConfigProto(const tensorflow::ConfigProto& config,
                                          const TPUClusterResolver& resolver);

}  // namespace tpusim::strategy

#endif  // TPUSIM_STRATEGY_CONFIG_PROTO_H_
