// sim/host/host_model.cc

#include "sim/host/host_model.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <optional>
#include <utility>

#include "absl/strings/str_cat.h"
#include "common/int_math.h"
#include "common/status_macros.h"
#include "sim/chip/kernel_timing.h"

namespace tpusim::sim {

using common::Picoseconds;

namespace {

Picoseconds Max(Picoseconds a, Picoseconds b) { return a < b ? b : a; }
Picoseconds Min(Picoseconds a, Picoseconds b) { return a < b ? a : b; }

}  // namespace

absl::StatusOr<HostModel> HostModel::Create(HostOptions options,
                                            std::vector<int> device_links,
                                            std::vector<int> device_ids) {
  if (options.threads < 1) {
    return absl::InvalidArgumentError(
        absl::StrCat("HostOptions.threads is ", options.threads,
                     "; a host needs at least 1 thread"));
  }
  if (options.prefetch_depth < 1) {
    return absl::InvalidArgumentError(
        absl::StrCat("HostOptions.prefetch_depth is ", options.prefetch_depth,
                     "; allowed: 1 or more batches in flight per device"));
  }
  if (!(options.pcie_bytes_per_second > 0) ||
      !std::isfinite(options.pcie_bytes_per_second)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "HostOptions.pcie_bytes_per_second is ", options.pcie_bytes_per_second,
        "; allowed: a finite rate > 0"));
  }
  if (device_links.empty()) {
    return absl::InvalidArgumentError(
        "device_links is empty; a host feeds at least 1 device");
  }
  int num_links = 0;
  for (size_t d = 0; d < device_links.size(); ++d) {
    if (device_links[d] < 0) {
      return absl::InvalidArgumentError(
          absl::StrCat("device_links[", d, "] is ", device_links[d],
                       "; allowed: a link number >= 0"));
    }
    num_links = std::max(num_links, device_links[d] + 1);
  }
  if (device_ids.empty()) {
    for (size_t d = 0; d < device_links.size(); ++d) {
      device_ids.push_back(static_cast<int>(d));
    }
  } else if (device_ids.size() != device_links.size()) {
    return absl::InvalidArgumentError(
        absl::StrCat("device_ids has ", device_ids.size(),
                     " entries; allowed: none or one per device (",
                     device_links.size(), ")"));
  }
  return HostModel(std::move(options), std::move(device_links),
                   std::move(device_ids), num_links);
}

HostModel::HostModel(HostOptions options, std::vector<int> links,
                     std::vector<int> ids, int num_links)
    : options_(std::move(options)),
      links_(std::move(links)),
      ids_(std::move(ids)),
      devices_(links_.size()),
      link_free_(num_links, Picoseconds(0)),
      pipeline_free_(0) {}

absl::StatusOr<int64_t> HostModel::AddBatch(int device,
                                            absl::Span<const StageCost> stages,
                                            int64_t bytes,
                                            Picoseconds not_before) {
  int64_t work = 0;
  for (const StageCost& s : stages) {
    if (s.per_element.count() < 0) {
      return absl::InvalidArgumentError(absl::StrCat(
          "host cost of stage '", s.stage, "' is ", s.per_element.count(),
          " ps per element; allowed: >= 0"));
    }
    if (s.elements < 0) {
      return absl::InvalidArgumentError(
          absl::StrCat("element count of stage '", s.stage, "' is ", s.elements,
                       "; allowed: >= 0"));
    }
    std::optional<int64_t> stage_work =
        common::CheckedMul(s.per_element.count(), s.elements);
    std::optional<int64_t> total =
        stage_work ? common::CheckedAdd(work, *stage_work) : std::nullopt;
    if (!total) {
      return absl::InvalidArgumentError(absl::StrCat(
          "host work of the batch overflows int64 picoseconds at stage '",
          s.stage, "' (", s.per_element.count(), " ps x ", s.elements,
          " elements)"));
    }
    work = *total;
  }
  return AddBatch(device, Picoseconds(work), bytes, not_before);
}

absl::StatusOr<int64_t> HostModel::AddBatch(int device, Picoseconds work,
                                            int64_t bytes,
                                            Picoseconds not_before) {
  if (device < 0 || device >= num_devices()) {
    return absl::InvalidArgumentError(
        absl::StrCat("device ", device, " is not on this host; allowed: 0..",
                     num_devices() - 1));
  }
  if (work.count() < 0) {
    return absl::InvalidArgumentError(absl::StrCat(
        "host cost of batch ", devices_[device].added, " of device ",
        ids_[device], " is ", work.count(), " ps; allowed: >= 0"));
  }
  if (bytes < 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("batch ", devices_[device].added, " of device ",
                     ids_[device], " has ", bytes, " bytes; allowed: >= 0"));
  }
  if (not_before.count() < 0) {
    return absl::InvalidArgumentError(absl::StrCat(
        "not_before of batch ", devices_[device].added, " of device ",
        ids_[device], " is ", not_before.count(), " ps; allowed: >= 0"));
  }
  const int64_t index = devices_[device].added++;
  pending_.push_back({device, index, bytes, work, not_before});
  return index;
}

absl::Status HostModel::TimeNext() {
  const Pending& p = pending_.front();
  DeviceState& dev = devices_[p.device];
  const int depth = options_.prefetch_depth;
  // Batch i may start once the device has taken batch i - depth.
  Picoseconds slot_free(0);
  const int64_t blocker = p.index - depth;
  if (blocker >= 0) {
    if (blocker >= dev.taken) {
      return absl::FailedPreconditionError(
          absl::StrCat("batch ", p.index, " of device ", ids_[p.device],
                       " cannot be timed before the device takes batch ",
                       blocker, " (prefetch depth ", depth, ")"));
    }
    // taken_times holds batches taken - size .. taken - 1.
    const int64_t first =
        dev.taken - static_cast<int64_t>(dev.taken_times.size());
    slot_free = dev.taken_times[blocker - first];
  }
  BatchTiming t;
  t.device = ids_[p.device];
  t.index = p.index;
  t.link = links_[p.device];
  t.bytes = p.bytes;
  t.work = p.work;
  t.produce_start = Max(Max(pipeline_free_, p.not_before), slot_free);
  // The threads share the batch's elements: ceil(work / threads).
  const int64_t threads = options_.threads;
  const int64_t produce_ps =
      p.work.count() / threads + (p.work.count() % threads != 0 ? 1 : 0);
  const double copy_ps =
      static_cast<double>(p.bytes) / options_.pcie_bytes_per_second * 1e12;
  std::optional<int64_t> produce_end =
      common::CheckedAdd(t.produce_start.count(), produce_ps);
  std::optional<int64_t> arrival;
  if (produce_end && copy_ps < 9e18) {
    t.produce_end = Picoseconds(*produce_end);
    t.dma_start = Max(t.produce_end, link_free_[t.link]);
    arrival = common::CheckedAdd(
        t.dma_start.count(),
        TimeAtRate(static_cast<double>(p.bytes), options_.pcie_bytes_per_second)
            .count());
  }
  if (!arrival) {
    return absl::OutOfRangeError(absl::StrCat(
        "batch ", p.index, " of device ", ids_[p.device],
        " would end past the simulated clock's range (int64 picoseconds, "
        "about 106 days): ",
        p.work.count(), " ps of host work, ", p.bytes, " bytes"));
  }
  t.arrival = Picoseconds(*arrival);
  pipeline_free_ = t.produce_end;
  link_free_[t.link] = t.arrival;
  dev.timed.push_back(t);
  pending_.pop_front();
  return absl::OkStatus();
}

absl::StatusOr<BatchTiming> HostModel::Timing(int device, int64_t index) {
  if (device < 0 || device >= num_devices()) {
    return absl::InvalidArgumentError(
        absl::StrCat("device ", device, " is not on this host; allowed: 0..",
                     num_devices() - 1));
  }
  DeviceState& dev = devices_[device];
  if (index < dev.taken || index >= dev.added) {
    return absl::NotFoundError(absl::StrCat(
        "batch ", index, " of device ", ids_[device], " is not queued (added ",
        dev.added, ", taken ", dev.taken, ")"));
  }
  while (dev.taken + static_cast<int64_t>(dev.timed.size()) <= index) {
    TPUSIM_RETURN_IF_ERROR(TimeNext());
  }
  return dev.timed[index - dev.taken];
}

absl::StatusOr<Taken> HostModel::Take(int device, int64_t index,
                                      Picoseconds ready) {
  if (device >= 0 && device < num_devices()) {
    const DeviceState& d = devices_[device];
    if (index >= 0 && index < d.taken) {
      return absl::FailedPreconditionError(absl::StrCat(
          "batch ", index, " of device ", ids_[device], " was taken already"));
    }
    if (index > d.taken && index < d.added) {
      return absl::FailedPreconditionError(absl::StrCat(
          "device ", ids_[device], " takes its batches in order: next is ",
          d.taken, ", asked for ", index));
    }
  }
  if (ready.count() < 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("ready time ", ready.count(), " ps of batch ", index,
                     " is negative; allowed: >= 0"));
  }
  TPUSIM_ASSIGN_OR_RETURN(BatchTiming t, Timing(device, index));
  DeviceState& dev = devices_[device];
  Taken out;
  out.start = Max(ready, t.arrival);
  // Of the wait [ready, start]: until the pipeline finished the batch it is
  // input wait, after that infeed (PCIe queue and copy).
  out.input_wait = Max(Picoseconds(0), Min(out.start, t.produce_end) - ready);
  out.infeed_wait = (out.start - ready) - out.input_wait;
  if (out.infeed_wait.count() < 0) out.infeed_wait = Picoseconds(0);
  t.taken = true;
  t.taken_at = out.start;
  out.batch = t;
  dev.timed.pop_front();
  ++dev.taken;
  dev.taken_times.push_back(out.start);
  while (static_cast<int>(dev.taken_times.size()) > options_.prefetch_depth) {
    dev.taken_times.pop_front();
  }
  if (options_.keep_history) history_.push_back(t);
  return out;
}

absl::StatusOr<SliceHosts> SliceHosts::Create(
    const runtime::SliceLayout& layout, HostOptions options) {
  if (layout.devices.empty()) {
    return absl::InvalidArgumentError(
        absl::StrCat("slice '", layout.name, "' has no devices to feed"));
  }
  int num_hosts = 0;
  for (const runtime::DeviceDescription& d : layout.devices) {
    if (d.task < 0) {
      return absl::InvalidArgumentError(
          absl::StrCat("device ", d.id, " of slice '", layout.name,
                       "' has task ", d.task, "; allowed: >= 0"));
    }
    num_hosts = std::max(num_hosts, d.task + 1);
  }
  // Per host: its devices in id order, and a link per chip in order of first
  // appearance.
  std::vector<std::vector<int>> global_ids(num_hosts);  // [host][local]
  std::vector<std::vector<int>> links(num_hosts);
  std::vector<std::map<int, int>> chip_link(num_hosts);
  std::vector<Place> place(layout.devices.size());
  for (size_t id = 0; id < layout.devices.size(); ++id) {
    const runtime::DeviceDescription& d = layout.devices[id];
    const int h = d.task;
    auto [it, inserted] =
        chip_link[h].emplace(d.chip, static_cast<int>(chip_link[h].size()));
    place[id] = {h, static_cast<int>(global_ids[h].size())};
    global_ids[h].push_back(static_cast<int>(id));
    links[h].push_back(it->second);
  }
  std::vector<HostModel> hosts;
  hosts.reserve(num_hosts);
  for (int h = 0; h < num_hosts; ++h) {
    if (links[h].empty()) {
      return absl::InvalidArgumentError(absl::StrCat(
          "host ", h, " of slice '", layout.name, "' has no devices"));
    }
    TPUSIM_ASSIGN_OR_RETURN(HostModel host,
                            HostModel::Create(options, std::move(links[h]),
                                              std::move(global_ids[h])));
    hosts.push_back(std::move(host));
  }
  return SliceHosts(layout.name, std::move(hosts), std::move(place));
}

absl::Status SliceHosts::CheckDevice(int device_id) const {
  if (device_id < 0 || device_id >= num_devices()) {
    return absl::InvalidArgumentError(
        absl::StrCat("device ", device_id, " is not in slice '", name_,
                     "'; allowed: 0..", num_devices() - 1));
  }
  return absl::OkStatus();
}

std::vector<std::pair<int, BatchTiming>> SliceHosts::History() const {
  std::vector<std::pair<int, BatchTiming>> out;
  for (int h = 0; h < num_hosts(); ++h) {
    for (const BatchTiming& t : hosts_[h].history()) {
      out.emplace_back(h, t);
    }
  }
  return out;
}

void SliceHosts::ClearHistory() {
  for (HostModel& h : hosts_) h.ClearHistory();
}

absl::StatusOr<int64_t> SliceHosts::AddBatch(int device_id,
                                             absl::Span<const StageCost> stages,
                                             int64_t bytes,
                                             Picoseconds not_before) {
  TPUSIM_RETURN_IF_ERROR(CheckDevice(device_id));
  const Place p = place_[device_id];
  return hosts_[p.host].AddBatch(p.local, stages, bytes, not_before);
}

absl::StatusOr<int64_t> SliceHosts::AddBatch(int device_id, Picoseconds work,
                                             int64_t bytes,
                                             Picoseconds not_before) {
  TPUSIM_RETURN_IF_ERROR(CheckDevice(device_id));
  const Place p = place_[device_id];
  return hosts_[p.host].AddBatch(p.local, work, bytes, not_before);
}

absl::StatusOr<BatchTiming> SliceHosts::Timing(int device_id, int64_t index) {
  TPUSIM_RETURN_IF_ERROR(CheckDevice(device_id));
  const Place p = place_[device_id];
  return hosts_[p.host].Timing(p.local, index);
}

absl::StatusOr<Taken> SliceHosts::Take(int device_id, int64_t index,
                                       Picoseconds ready) {
  TPUSIM_RETURN_IF_ERROR(CheckDevice(device_id));
  const Place p = place_[device_id];
  return hosts_[p.host].Take(p.local, index, ready);
}

}  // namespace tpusim::sim
