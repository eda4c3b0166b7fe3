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
    p->set_mxu_busy_ps(d.mxu_busy_ps);
    p->set_busy_ps(d.busy_ps);
    p->set_hbm_bytes(d.hbm_bytes);
    p->set_peak_hbm_bytes(d.peak_hbm_bytes);
    p->set_hbm_capacity_bytes(d.hbm_capacity_bytes);
  }
  for (const TimelineSpan& s : profile.spans) {
    proto::TimelineSpanProto* p = out->add_spans();
    p->set_device_id(s.device_id);
    p->set_name(s.name);
    p->set_start_ps(s.start_ps);
    p->set_end_ps(s.end_ps);
    p->set_category(s.category);
    p->set_host(s.host);
  }
  for (const LinkProfile& l : profile.links) {
    proto::LinkProfileProto* p = out->add_links();
    p->set_chip(l.chip);
    for (int c : l.coords) p->add_coords(c);
    p->set_dim(l.dim);
    p->set_direction(l.direction);
    p->set_bytes(l.bytes);
    p->set_busy_ps(l.busy_ps);
  }
  for (const StepProfile& st : profile.steps) {
    proto::StepProfileProto* p = out->add_steps();
    p->set_start_ps(st.start_ps);
    p->set_end_ps(st.end_ps);
    p->set_steps(st.steps);
    p->set_exposed_collective_ps(st.exposed_collective_ps);
    p->set_hidden_collective_ps(st.hidden_collective_ps);
    p->set_infeed_wait_ps(st.infeed_wait_ps);
    p->set_host_overhead_ps(st.host_overhead_ps);
  }
  out->set_end_ps(profile.end_ps);
}

}  // namespace tpusim::runtime
