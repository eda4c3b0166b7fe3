// strategy/runtime/profile.h
//
// Profile: what a backend ran — counters per device and per op name, plus
// (for timing backends) timeline spans, per-step figures and ICI link
// counters. One definition: the Profile IS its proto
// (strategy/runtime/profile.proto, the source); the names below are aliases,
// so report writers print it as textproto or JSON directly.
//
//   absl::StatusOr<Profile> p = backend.CollectProfile();
//   int64_t flops = p->devices(0).total().flops();
//   int64_t dots = p->devices(0).per_op().at("dot").count();

#ifndef TPUSIM_STRATEGY_RUNTIME_PROFILE_H_
#define TPUSIM_STRATEGY_RUNTIME_PROFILE_H_

#include "strategy/runtime/profile.pb.h"

namespace tpusim::runtime {

using Profile = proto::ProfileProto;
using DeviceProfile = proto::DeviceProfileProto;
using OpCounters = proto::OpCountersProto;
using TimelineSpan = proto::TimelineSpanProto;
using CollectiveSpan = proto::CollectiveSpanProto;
using HbmSplit = proto::HbmSplitProto;
using LinkProfile = proto::LinkProfileProto;
using StepProfile = proto::StepProfileProto;

}  // namespace tpusim::runtime

#endif  // TPUSIM_STRATEGY_RUNTIME_PROFILE_H_
