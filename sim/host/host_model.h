// sim/host/host_model.h
//
// One host's input pipeline and PCIe infeed, in simulated time. Pure
// arithmetic, no SystemC: the SimBackend asks it when each per-replica batch
// is on its device, and how long a step waited for it.
//
//   HostOptions o;
//   o.threads = 4;
//   o.prefetch_depth = 2;
//   o.pcie_bytes_per_second = 16e9;
//   TPUSIM_ASSIGN_OR_RETURN(HostModel host,
//                           HostModel::Create(o, /*device_links=*/{0, 1}));
//   // The strategy side declares the host work of each batch, stage by stage.
//   TPUSIM_ASSIGN_OR_RETURN(int64_t i, host.AddBatch(
//       /*device=*/0, {{"map", Picoseconds::FromMicroseconds(2), 128}},
//       /*bytes=*/1 << 20));
//   // The device is ready for its next step at `ready`: it starts at
//   // taken.start, after taken.input_wait + taken.infeed_wait.
//   TPUSIM_ASSIGN_OR_RETURN(Taken taken, host.Take(0, i, ready));
//
// The model (tpusim's):
// * The host runs one input pipeline (a worker's tf.data iterator) that
//   produces the per-replica batches of its devices one after another, in the
//   order they were added (AddBatch order: step by step, replica by replica,
//   as a distributed iterator does). A batch's host work is the sum over its
//   stages of per-element cost x elements. The host's threads share each
//   batch's elements (as map with num_parallel_calls = threads): producing it
//   takes ceil(work / threads).
// * Prefetch depth P: at most P batches of one device are in flight (being
//   produced, queued for PCIe, on the wire, or waiting on the device). Batch i
//   of a device cannot start before the device has taken batch i - P; since
//   the pipeline is in order, every later batch waits with it.
// * PCIe: a finished batch is copied to its device over its link (a DMA queue,
//   first come first served in pipeline order) at pcie_bytes_per_second.
//   Which link a device uses is the caller's choice (device_links): one per
//   chip (the preset's rate is per chip) or one shared by the host.
// * A step that needs batch i starts at max(device ready, arrival). The wait
//   splits into input wait (the pipeline had not finished the batch: the host
//   is the bottleneck) and infeed wait (the batch was produced but still
//   queued for or crossing PCIe).
//
// Timing is evaluated lazily in pipeline order, because a batch's start can
// depend on when an earlier one was taken: asking for batch i of a device
// whose batch i - P has not been taken yet is FailedPrecondition (so is any
// batch queued behind it). A caller that adds one batch per device per step
// (a step's argument tensors summed: bytes and host work) and takes step s on
// every device before step s + 1 never hits it. AddBatch itself carries no
// time, so it may be called when the step executes.

#ifndef TPUSIM_SIM_HOST_HOST_MODEL_H_
#define TPUSIM_SIM_HOST_HOST_MODEL_H_

#include <cstdint>
#include <deque>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "common/units.h"
#include "strategy/runtime/slice.h"

namespace tpusim::sim {

struct HostOptions {
  // Host CPU threads working on the input pipeline (>= 1). tpusim choice for
  // the default: 1, the pipeline's own thread, unless the scenario says more.
  int threads = 1;
  // Batches per device in flight ahead of the device (>= 1). tpusim choice for
  // the default: 2 (double buffering, as an infeed queue of two).
  int prefetch_depth = 2;
  // Bytes per second of one PCIe link, one direction (> 0).
  double pcie_bytes_per_second = 16e9;  // sheet A.4 (v4): 16 GB/s per chip
  // Keep a BatchTiming per batch for the profile (history()); a long run can
  // turn it off and memory stays bounded by the batches in flight.
  bool keep_history = true;
};

// One dataset stage's declared work for one batch.
struct StageCost {
  std::string stage;                // e.g. "map", for messages
  common::Picoseconds per_element;  // >= 0
  int64_t elements = 0;             // >= 0: elements the stage processes
};

// When one batch went through the host and PCIe.
struct BatchTiming {
  int device = 0;     // the host's local device index
  int64_t index = 0;  // the device's batch number (0, 1, ...)
  int link = 0;       // the PCIe link it crossed
  int64_t bytes = 0;
  common::Picoseconds work;           // host CPU work (all threads' sum)
  common::Picoseconds produce_start;  // the pipeline started it
  common::Picoseconds produce_end;    // ... and finished it
  common::Picoseconds dma_start;      // the link started copying it
  common::Picoseconds arrival;        // it is in the device's HBM
  bool taken = false;
  common::Picoseconds taken_at;  // the step that used it started
};

struct Taken {
  common::Picoseconds start;        // max(ready, arrival)
  common::Picoseconds input_wait;   // of start - ready: pipeline not done
  common::Picoseconds infeed_wait;  // of start - ready: PCIe queue and copy
  BatchTiming batch;
};

class HostModel {
 public:
  // `device_links[d]`: the PCIe link of local device d (links are 0, 1, ...,
  // max). `device_ids[d]`: the id messages and BatchTiming::device give local
  // device d (empty: d itself). Errors: InvalidArgument naming the field, its
  // value and what is allowed (threads < 1, prefetch_depth < 1, rate <= 0 or
  // not finite, no devices, a negative link).
  static absl::StatusOr<HostModel> Create(HostOptions options,
                                          std::vector<int> device_links,
                                          std::vector<int> device_ids = {});

  // Queues the next batch of `device` (the device's batch number is
  // returned). The pipeline cannot start it before `not_before` (e.g. when
  // the input iterator was created). InvalidArgument for a device out of
  // range, negative bytes, a negative per-element cost or element count
  // (naming the stage), or a work total that overflows.
  absl::StatusOr<int64_t> AddBatch(
      int device, absl::Span<const StageCost> stages, int64_t bytes,
      common::Picoseconds not_before = common::Picoseconds(0));
  // The same with the batch's total host work given directly (>= 0).
  absl::StatusOr<int64_t> AddBatch(
      int device, common::Picoseconds work, int64_t bytes,
      common::Picoseconds not_before = common::Picoseconds(0));

  // When batch `index` of `device` goes through the pipeline and PCIe.
  // NotFound for a batch not added (or already dropped from the history);
  // FailedPrecondition when it depends on a take that has not happened;
  // OutOfRange when its times pass int64 picoseconds.
  absl::StatusOr<BatchTiming> Timing(int device, int64_t index);

  // The device, ready for its next step at `ready`, takes batch `index` (the
  // next one it has not taken: FailedPrecondition otherwise).
  absl::StatusOr<Taken> Take(int device, int64_t index,
                             common::Picoseconds ready);

  // Every taken batch, in the order taken (empty without keep_history).
  const std::vector<BatchTiming>& history() const { return history_; }
  void ClearHistory() { history_.clear(); }

  int num_devices() const { return static_cast<int>(links_.size()); }
  const HostOptions& options() const { return options_; }
  // Batches added to `device` so far / taken by it.
  int64_t added(int device) const { return devices_[device].added; }
  int64_t taken(int device) const { return devices_[device].taken; }

 private:
  struct Pending {
    int device;
    int64_t index;
    int64_t bytes;
    common::Picoseconds work;
    common::Picoseconds not_before;
  };
  struct DeviceState {
    int64_t added = 0;
    int64_t taken = 0;
    // Timed but not yet taken, oldest first (indices taken..taken+size-1).
    std::deque<BatchTiming> timed;
    // When the last taken batches were taken: taken_at of batches
    // taken - taken_times.size() .. taken - 1 (at most prefetch_depth).
    std::deque<common::Picoseconds> taken_times;
  };

  HostModel(HostOptions options, std::vector<int> links, std::vector<int> ids,
            int num_links);
  // Times the oldest pending batch; FailedPrecondition if it must wait for a
  // take that has not happened.
  absl::Status TimeNext();

  HostOptions options_;
  std::vector<int> links_;
  std::vector<int> ids_;
  std::vector<DeviceState> devices_;
  std::deque<Pending> pending_;  // added, not yet timed, pipeline order
  std::vector<common::Picoseconds> link_free_;
  common::Picoseconds pipeline_free_;  // the pipeline finished its last batch
  std::vector<BatchTiming> history_;
};

// The hosts of a slice: one HostModel per host (TF task), fed by global device
// ids. Every chip has its own PCIe link (the preset's rate is per chip, sheet
// A.8), so the two cores of a v2/v3 chip share one DMA queue and the chips of
// a host copy in parallel; the host's one pipeline produces for all of them.
//
//   TPUSIM_ASSIGN_OR_RETURN(SliceHosts hosts, SliceHosts::Create(layout, o));
//   TPUSIM_ASSIGN_OR_RETURN(int64_t i, hosts.AddBatch(device_id, work, bytes));
//   TPUSIM_ASSIGN_OR_RETURN(Taken t, hosts.Take(device_id, i, ready));
//
// Device ids in the answers and messages are global.
class SliceHosts {
 public:
  // InvalidArgument for a layout without devices and HostModel::Create's.
  static absl::StatusOr<SliceHosts> Create(const runtime::SliceLayout& layout,
                                           HostOptions options);

  absl::StatusOr<int64_t> AddBatch(
      int device_id, absl::Span<const StageCost> stages, int64_t bytes,
      common::Picoseconds not_before = common::Picoseconds(0));
  absl::StatusOr<int64_t> AddBatch(
      int device_id, common::Picoseconds work, int64_t bytes,
      common::Picoseconds not_before = common::Picoseconds(0));
  absl::StatusOr<BatchTiming> Timing(int device_id, int64_t index);
  absl::StatusOr<Taken> Take(int device_id, int64_t index,
                             common::Picoseconds ready);

  int num_hosts() const { return static_cast<int>(hosts_.size()); }
  int num_devices() const { return static_cast<int>(place_.size()); }
  // Batches queued for / taken by a device so far. Require a valid id.
  int64_t added(int device_id) const {
    return hosts_[place_[device_id].host].added(place_[device_id].local);
  }
  int64_t taken(int device_id) const {
    return hosts_[place_[device_id].host].taken(place_[device_id].local);
  }
  // The host (task) of a device, and its index on that host. Requires a valid
  // id.
  int host_of(int device_id) const { return place_[device_id].host; }
  int local_of(int device_id) const { return place_[device_id].local; }
  HostModel& host(int h) { return hosts_[h]; }
  const HostModel& host(int h) const { return hosts_[h]; }
  // Every host's taken batches (global device ids), host by host, each in the
  // order taken; and its clearing.
  std::vector<std::pair<int, BatchTiming>> History() const;
  void ClearHistory();

 private:
  struct Place {
    int host;
    int local;
  };
  SliceHosts(std::string name, std::vector<HostModel> hosts,
             std::vector<Place> place)
      : name_(std::move(name)),
        hosts_(std::move(hosts)),
        place_(std::move(place)) {}
  absl::Status CheckDevice(int device_id) const;

  std::string name_;
  std::vector<HostModel> hosts_;
  std::vector<Place> place_;  // by global device id
};

}  // namespace tpusim::sim

#endif  // TPUSIM_SIM_HOST_HOST_MODEL_H_
