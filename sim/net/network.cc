#include "sim/net/network.h"

#include <array>
#include <cmath>
#include <cstdint>
#include <limits>
#include <queue>
#include <string>
#include <systemc>
#include <tuple>
#include <unordered_map>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "common/status_macros.h"

namespace tpusim::sim::net {
namespace {

using common::Picoseconds;

// Input ports of a chip: 0..5 the link directions packets arrive on, 6 the
// on-chip path, 7 + core a local device.
constexpr int kOnChipPort = 6;
constexpr int kLocalPort = 7;
constexpr int kNumPorts = 9;
// Outgoing links: 0..5 directions, 6 + core the on-chip path from `core`.
constexpr int kOnChipLink = 6;
constexpr int kNumLinks = 8;
// Order keys after the ports: link-free events, then timers.
constexpr uint32_t kLinkFreeOrder = 16;
constexpr uint32_t kTimerOrder = 32;
constexpr int64_t kNever = std::numeric_limits<int64_t>::max();

struct Packet {
  uint64_t msg_id = 0;
  int32_t src_dev = 0;
  int32_t dst_dev = 0;
  int64_t bytes = 0;
  int64_t msg_bytes = 0;
  uint32_t index = 0;
  uint32_t count = 1;
  MessageTag tag;
  int64_t head = 0;  // first byte available here
  int64_t tail = 0;  // last byte available here
};

enum class EventType : uint8_t { kArrive, kLinkFree, kTimer };

struct Event {
  int64_t time = 0;
  uint32_t order = 0;  // input port, or a link-free / timer key
  uint32_t sub = 0;    // packet index, link, or core
  uint64_t id = 0;     // message id or timer token
  EventType type = EventType::kArrive;
  uint32_t slot = 0;  // kArrive: the packet's slot in the chip's pool
};

struct Later {
  bool operator()(const Event& a, const Event& b) const {
    return std::tie(a.time, a.order, a.id, a.sub) >
           std::tie(b.time, b.order, b.id, b.sub);
  }
};

// A packet waiting for a link: its input port and its slot in the pool.
struct Waiting {
  uint32_t port;
  uint32_t slot;
};

}  // namespace

class ChipNode : public sc_core::sc_module {
 public:
  SC_HAS_PROCESS(ChipNode);

  ChipNode(const sc_core::sc_module_name& name, int chip,
           const Topology* topology, const NetConfig* config,
           CollectiveDataPath* data_path)
      : sc_core::sc_module(name),
        chip_(chip),
        topology_(topology),
        config_(config) {
    heap_ = std::priority_queue<Event, std::vector<Event>, Later>();
    const int cores = topology->devices_per_chip();
    next_msg_.assign(cores, 0);
    for (int core = 0; core < cores; ++core) {
      transports_.push_back(std::make_unique<Transport>(this, core));
    }
    for (int core = 0; core < cores; ++core) {
      endpoints_.push_back(std::make_unique<CollectiveEndpoint>(
          topology->device_at(chip, core), topology, transports_[core].get(),
          data_path));
    }
    SC_METHOD(Run);
    sensitive << wake_;
    dont_initialize();
  }

  // Connects the links to their destination chips.
  void Wire(const std::vector<std::unique_ptr<ChipNode>>& chips) {
    for (int dir = 0; dir < kNumDirections; ++dir) {
      const int to = topology_->Neighbor(chip_, dir);
      if (to < 0) continue;
      Link& l = links_[dir];
      l.dst = chips[to].get();
      l.dst_port = dir;
      l.ps_per_byte = 1e12 / config_->link_bytes_per_second;
      l.latency = config_->hop_latency.count();
    }
    if (topology_->devices_per_chip() == 2) {
      for (int core = 0; core < 2; ++core) {
        Link& l = links_[kOnChipLink + core];
        l.dst = this;
        l.dst_port = kOnChipPort;
        l.ps_per_byte = 1e12 / config_->on_chip_bytes_per_second;
        l.latency = config_->on_chip_latency.count();
      }
    }
  }

  CollectiveEndpoint& endpoint(int core) { return *endpoints_[core]; }
  int64_t events() const { return events_; }
  int64_t activations() const { return activations_; }

  void AppendLinks(std::vector<LinkStats>& out) const {
    for (int i = 0; i < kNumLinks; ++i) {
      const Link& l = links_[i];
      if (l.dst == nullptr) continue;
      LinkStats s;
      s.chip = chip_;
      s.dir = i;
      s.packets = l.packets;
      s.bytes = l.bytes;
      s.busy = Picoseconds(l.busy_ps);
      s.peak_queue = l.peak_queue;
      out.push_back(s);
    }
  }

 private:
  struct Link {
    ChipNode* dst = nullptr;
    int dst_port = 0;
    double ps_per_byte = 0;
    int64_t latency = 0;
    int64_t busy_until = 0;     // the current packet's finish
    bool free_pending = false;  // a link-free event is scheduled
    int rr = 0;
    int64_t queued = 0;
    // Waiting packets in arrival order (FIFO within a port).
    std::vector<Waiting> waiting;
    int64_t packets = 0;
    int64_t bytes = 0;
    int64_t busy_ps = 0;
    int64_t peak_queue = 0;
  };

  class Transport : public EndpointTransport {
   public:
    Transport(ChipNode* node, int core) : node_(node), core_(core) {}
    Picoseconds Now() const override { return Picoseconds(node_->Now()); }
    void Send(int dst_device, int64_t bytes, const MessageTag& tag,
              Picoseconds head_ready, Picoseconds tail_ready) override {
      node_->Send(core_, dst_device, bytes, tag, head_ready.count(),
                  tail_ready.count());
    }
    void ScheduleTimer(Picoseconds at, uint64_t token) override {
      Event e;
      e.time = std::max(at.count(), node_->Now());
      e.order = kTimerOrder + core_;
      e.id = token;
      e.sub = core_;
      e.type = EventType::kTimer;
      node_->Push(e);
    }

   private:
    ChipNode* node_;
    int core_;
  };

  static int64_t Now() {
    return static_cast<int64_t>(sc_core::sc_time_stamp().value());
  }

  // Queues the arrival of `p` (a copy) on input `port` at p.head.
  void PushPacket(const Packet& p, int port) {
    const uint32_t slot = Store(p);
    Event e;
    e.time = p.head;
    e.order = static_cast<uint32_t>(port);
    e.id = p.msg_id;
    e.sub = p.index;
    e.type = EventType::kArrive;
    e.slot = slot;
    Push(e);
  }

  void Push(const Event& e) {
    heap_.push(e);
    if (!running_ && e.time < wake_time_) {
      wake_time_ = e.time;
      wake_.notify(sc_core::sc_time::from_value(
          static_cast<sc_dt::uint64>(e.time - Now())));
    }
  }

  void Run() {
    ++activations_;
    const int64_t now = Now();
    running_ = true;
    while (!heap_.empty() && heap_.top().time <= now) {
      const Event e = heap_.top();
      heap_.pop();
      ++events_;
      Handle(e, now);
    }
    running_ = false;
    if (heap_.empty()) {
      wake_time_ = kNever;
    } else {
      wake_time_ = heap_.top().time;
      wake_.notify(sc_core::sc_time::from_value(
          static_cast<sc_dt::uint64>(wake_time_ - now)));
    }
  }

  void Handle(const Event& e, int64_t now) {
    switch (e.type) {
      case EventType::kArrive: {
        const Packet p = pool_[e.slot];
        free_slots_.push_back(e.slot);
        Route(p, static_cast<int>(e.order), now);
        break;
      }
      case EventType::kLinkFree:
        links_[e.sub].free_pending = false;
        TryStart(static_cast<int>(e.sub), now);
        break;
      case EventType::kTimer:
        endpoints_[e.sub]->OnTimer(e.id);
        break;
    }
  }

  void Send(int core, int dst_device, int64_t bytes, const MessageTag& tag,
            int64_t head, int64_t tail) {
    const int64_t now = Now();
    head = std::max(head, now);
    tail = std::max(tail, head);
    const int src = topology_->device_at(chip_, core);
    Packet p;
    p.msg_id = (static_cast<uint64_t>(src) << 40) | next_msg_[core]++;
    p.src_dev = src;
    p.dst_dev = dst_device;
    p.msg_bytes = bytes;
    p.tag = tag;
    const int64_t size = config_->packet_bytes;
    const int64_t count =
        (size == 0 || bytes <= size) ? 1 : (bytes + size - 1) / size;
    p.count = static_cast<uint32_t>(count);
    for (int64_t i = 0; i < count; ++i) {
      p.index = static_cast<uint32_t>(i);
      p.bytes = count == 1 ? bytes : std::min(size, bytes - i * size);
      // Bytes become available evenly between head and tail.
      p.head = head + (tail - head) * i / count;
      p.tail = head + (tail - head) * (i + 1) / count;
      if (p.head == now) {
        Route(p, kLocalPort + core, now);  // ready now: no event needed
      } else {
        PushPacket(p, kLocalPort + core);
      }
    }
  }

  void Route(const Packet& p, int port, int64_t now) {
    const int dst_chip = topology_->chip_of_device(p.dst_dev);
    if (dst_chip == chip_) {
      if (port >= kLocalPort) {
        // Between the two cores of this chip: the on-chip path.
        Enqueue(kOnChipLink + (port - kLocalPort), p, port, now);
      } else {
        Deliver(p);
      }
      return;
    }
    Enqueue(topology_->NextDirection(chip_, dst_chip), p, port, now);
  }

  uint32_t Store(const Packet& p) {
    if (free_slots_.empty()) {
      pool_.push_back(p);
      return static_cast<uint32_t>(pool_.size() - 1);
    }
    const uint32_t slot = free_slots_.back();
    free_slots_.pop_back();
    pool_[slot] = p;
    return slot;
  }

  void Enqueue(int link, const Packet& p, int port, int64_t now) {
    Link& l = links_[link];
    l.waiting.push_back(Waiting{static_cast<uint32_t>(port), Store(p)});
    ++l.queued;
    if (l.queued > l.peak_queue) l.peak_queue = l.queued;
    if (l.free_pending) return;
    if (l.busy_until <= now) {
      TryStart(link, now);
    } else {
      ScheduleLinkFree(link, l.busy_until);
    }
  }

  // A link-free event exists only while packets wait for a busy link.
  void ScheduleLinkFree(int link, int64_t at) {
    links_[link].free_pending = true;
    Event free;
    free.time = at;
    free.order = kLinkFreeOrder + link;
    free.sub = static_cast<uint32_t>(link);
    free.type = EventType::kLinkFree;
    Push(free);
  }

  void TryStart(int link, int64_t now) {
    Link& l = links_[link];
    if (l.queued == 0) return;
    {
      // Round-robin between ports: the first waiting packet of the first
      // port at or after rr (cyclically).
      size_t pick = 0;
      int best = kNumPorts;
      for (size_t i = 0; i < l.waiting.size(); ++i) {
        const int distance =
            (static_cast<int>(l.waiting[i].port) - l.rr + kNumPorts) %
            kNumPorts;
        if (distance < best) {
          best = distance;
          pick = i;
          if (distance == 0) break;
        }
      }
      const Waiting w = l.waiting[pick];
      l.waiting.erase(l.waiting.begin() + static_cast<std::ptrdiff_t>(pick));
      Packet p = pool_[w.slot];
      free_slots_.push_back(w.slot);
      const int port = static_cast<int>(w.port);
      --l.queued;
      l.rr = (port + 1) % kNumPorts;
      const int64_t tx = static_cast<int64_t>(
          std::ceil(static_cast<double>(p.bytes) * l.ps_per_byte));
      const int64_t finish = std::max(now + tx, p.tail);
      l.busy_until = finish;
      ++l.packets;
      l.bytes += p.bytes;
      l.busy_ps += finish - now;
      p.head = now + l.latency;
      p.tail = finish + l.latency;
      l.dst->PushPacket(p, l.dst_port);
      if (l.queued > 0) ScheduleLinkFree(link, finish);
      return;
    }
  }

  void Deliver(const Packet& p) {
    CollectiveEndpoint& ep = *endpoints_[topology_->core_of_device(p.dst_dev)];
    if (p.count == 1) {
      ep.OnMessage(p.tag, p.msg_bytes, Picoseconds(p.head),
                   Picoseconds(p.tail));
      return;
    }
    auto [it, inserted] = partial_.try_emplace(p.msg_id, p.head, 0);
    if (++it->second.second < p.count) return;
    const int64_t head = it->second.first;
    partial_.erase(it);
    ep.OnMessage(p.tag, p.msg_bytes, Picoseconds(head), Picoseconds(p.tail));
  }

  // The fields a message from another chip touches come first, together.
  const int chip_;
  bool running_ = false;
  int64_t wake_time_ = kNever;
  std::priority_queue<Event, std::vector<Event>, Later> heap_;
  // Packets of pending arrival events, and the free slots.
  std::vector<Packet> pool_;
  std::vector<uint32_t> free_slots_;
  int64_t events_ = 0;
  int64_t activations_ = 0;
  sc_core::sc_event wake_;
  const Topology* topology_;
  const NetConfig* config_;
  std::array<Link, kNumLinks> links_;
  std::vector<std::unique_ptr<Transport>> transports_;
  std::vector<std::unique_ptr<CollectiveEndpoint>> endpoints_;
  std::vector<uint64_t> next_msg_;
  // Packet mode: messages with some packets delivered (first head, count).
  std::unordered_map<uint64_t, std::pair<int64_t, uint32_t>> partial_;
};

Network::Network(const Topology& topology, const NetConfig& config)
    : topology_(topology), config_(config) {}

Network::~Network() = default;

absl::StatusOr<std::unique_ptr<Network>> Network::Create(
    const Topology& topology, const NetConfig& config, NetworkOptions options) {
  TPUSIM_RETURN_IF_ERROR(
      ValidateNetConfig(config, topology.devices_per_chip()));
  if (sc_core::sc_get_status() != sc_core::SC_ELABORATION) {
    return absl::FailedPreconditionError(
        "the ICI network must be built while the SystemC kernel elaborates "
        "(inside KernelSession::Create)");
  }
  std::unique_ptr<Network> net(new Network(topology, config));
  CollectiveDataPath* data_path = options.data_path;
  if (data_path == nullptr) {
    net->default_data_path_ = std::make_unique<VectorRateDataPath>(
        net->config_, topology.num_devices());
    data_path = net->default_data_path_.get();
  }
  const int chips = topology.num_chips();
  net->chips_.resize(chips);
  for (int i = 0; i < chips; ++i) {
    const int chip = options.reverse_construction ? chips - 1 - i : i;
    const std::string name = absl::StrCat(options.name, "_chip_", chip);
    net->chips_[chip] = std::make_unique<ChipNode>(
        name.c_str(), chip, &net->topology_, &net->config_, data_path);
  }
  for (const std::unique_ptr<ChipNode>& c : net->chips_) c->Wire(net->chips_);
  net->endpoints_.resize(topology.num_devices());
  for (int d = 0; d < topology.num_devices(); ++d) {
    net->endpoints_[d] = &net->chips_[topology.chip_of_device(d)]->endpoint(
        topology.core_of_device(d));
  }
  return net;
}

std::vector<LinkStats> Network::Links() const {
  std::vector<LinkStats> out;
  for (const std::unique_ptr<ChipNode>& c : chips_) c->AppendLinks(out);
  return out;
}

int64_t Network::activations() const {
  int64_t n = 0;
  for (const std::unique_ptr<ChipNode>& c : chips_) n += c->activations();
  return n;
}

int64_t Network::events() const {
  int64_t n = 0;
  for (const std::unique_ptr<ChipNode>& c : chips_) n += c->events();
  return n;
}

}  // namespace tpusim::sim::net
