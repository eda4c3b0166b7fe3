#include "strategy/runtime/profile.h"

#include "strategy/runtime/profile.pb.h"

namespace tpusim::runtime {
namespace {

void CountersToProto(const OpCounters& c, proto::OpCountersProto* out) {
  out->set_count(c.count);
  out->set_flops(c.flops);
  out->set_transcendentals(c.transcendentals);
  out->set_bytes_read(c.bytes_read);
  out->set_bytes_written(c.bytes_written);
}

}  // namespace

void ProfileToProto(const Profile& profile, proto::ProfileProto* out) {
  out->Clear();
  out->set_backend(profile.backend);
  for (const DeviceProfile& d : profile.devices) {
    proto::DeviceProfileProto* p = out->add_devices();
    p->set_device_id(d.device_id);
    p->set_executions(d.executions);
    CountersToProto(d.total, p->mutable_total());
    for (const auto& [name, c] : d.per_op) {
      CountersToProto(c, &(*p->mutable_per_op())[name]);
    }
    p->set_host_to_device_bytes(d.host_to_device_bytes);
    p->set_device_to_host_bytes(d.device_to_host_bytes);
    p->set_cross_core_bytes(d.cross_core_bytes);
    p->set_collective_bytes(d.collective_bytes);
  }
  for (const TimelineSpan& s : profile.spans) {
    proto::TimelineSpanProto* p = out->add_spans();
    p->set_device_id(s.device_id);
    p->set_name(s.name);
    p->set_start_ps(s.start_ps);
    p->set_end_ps(s.end_ps);
  }
}

}  // namespace tpusim::runtime
