#include "sim/net/network.h"

#include <algorithm>
#include <array>
#include <atomic>
#include <chrono>
#include <cmath>
#include <condition_variable>
#include <exception>
#include <cstdint>
#include <limits>
#include <memory>
#include <mutex>
#include <string>
#include <systemc>
#include <thread>
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

// One event of a chip's queue. Arrivals carry their packet inline (no pool
// and no indirection: a chip's pending events are one small array).
enum class EventType : uint8_t { kArrive, kLinkFree, kTimer };

struct Event {
  int64_t time = 0;    // kArrive: the packet's head here
  uint32_t order = 0;  // input port, or a link-free / timer key
  uint32_t sub = 0;    // packet index, link, or core
  uint64_t id = 0;     // message id or timer token
  // kArrive: the packet.
  int64_t tail = 0;  // last byte available here
  int64_t bytes = 0;
  int32_t dst_dev = 0;
  uint32_t count = 1;
  MessageTag tag;
  EventType type = EventType::kArrive;
};
static_assert(sizeof(Event) == 64, "an event is one cache line");

// A total order on a chip's events: no two share (time, order, id, sub). An
// arrival is one packet (message id: source device and count; sub: packet
// index) on one port, and a packet is at one chip at a time; a link has at
// most one link-free event pending (free_pending); a timer is one
// collective's end (token = its sequence number) on one core. So the pop
// order never depends on the order events were pushed.
inline bool Before(const Event& a, const Event& b) {
  if (a.time != b.time) return a.time < b.time;
  if (a.order != b.order) return a.order < b.order;
  if (a.id != b.id) return a.id < b.id;
  return a.sub < b.sub;
}

struct Later {
  bool operator()(const Event& a, const Event& b) const { return Before(b, a); }
};

// The packets waiting for a busy link: one FIFO per input port (a linked
// list through a pool of slots), and a bit per port that has any. A slot
// holds the first packet (an arrival event's fields) and, from a local port,
// `run` consecutive packets of one message (packet.sub onwards) that reached
// the link one after another with nothing else from that port between them:
// they leave in that order, so one slot stands for them all and the queue
// grows with the messages waiting, not with their packets. From any other
// port run is 1.
class WaitQueue {
 public:
  WaitQueue() {
    head_.fill(-1);
    tail_.fill(-1);
  }

  // Appends `p` to `port`'s FIFO; `merge`: as one more packet of the run
  // at its tail when that run is p's message and ends just before p.
  void Push(int port, const Event& p, bool merge) {
    const int32_t last = tail_[port];
    if (merge && last >= 0) {
      Slot& t = slots_[last];
      if (t.packet.id == p.id && t.packet.sub + t.run == p.sub) {
        ++t.run;
        return;
      }
    }
    int32_t i = free_;
    if (i >= 0) {
      free_ = slots_[i].next;
    } else {
      i = static_cast<int32_t>(slots_.size());
      slots_.emplace_back();
    }
    slots_[i] = Slot{-1, 1, p};
    if (last >= 0) {
      slots_[last].next = i;
    } else {
      head_[port] = i;
      ports_ |= 1u << port;
    }
    tail_[port] = i;
  }

  // The first port at or after `rr` (cyclically) with a packet waiting; -1
  // when none has.
  int NextPort(int rr) const {
    if (ports_ == 0) return -1;
    const uint32_t at_or_after = ports_ & ~((1u << rr) - 1);
    return __builtin_ctz(at_or_after != 0 ? at_or_after : ports_);
  }

  // Takes the first packet of `port`'s FIFO (which has one); `next` makes
  // the packet after it in a run.
  template <typename Next>
  Event Pop(int port, Next next) {
    const int32_t i = head_[port];
    Slot& s = slots_[i];
    const Event p = s.packet;
    if (s.run > 1) {
      --s.run;
      s.packet = next(p);
      return p;
    }
    head_[port] = s.next;
    if (s.next < 0) {
      tail_[port] = -1;
      ports_ &= ~(1u << port);
    }
    s.next = free_;
    free_ = i;
    return p;
  }

 private:
  struct Slot {
    int32_t next;  // in its port's FIFO, or in the free list
    uint32_t run;
    Event packet;
  };
  std::vector<Slot> slots_;
  std::array<int32_t, kNumPorts> head_;
  std::array<int32_t, kNumPorts> tail_;
  int32_t free_ = -1;
  uint32_t ports_ = 0;
};

// Smallest batch run on several threads (chosen: below it the hand-over
// costs about as much as the chips' work).
constexpr size_t kMinParallelBatch = 128;
// Most threads a network may use (chosen: far above any machine it runs on,
// low enough that a typo cannot exhaust the process's threads).
constexpr int kMaxThreads = 1024;

// How long a thread that waits for the others spins before it sleeps
// (chosen: longer than the SystemC thread's work between two batches, short
// enough not to burn a shared core).
constexpr auto kSpin = std::chrono::microseconds(30);

inline void CpuRelax() {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#endif
}

// Spins until pred() holds or kSpin has passed; returns pred().
template <typename Pred>
bool SpinFor(Pred pred) {
  const auto until = std::chrono::steady_clock::now() + kSpin;
  for (;;) {
    for (int i = 0; i < 64; ++i) {
      if (pred()) return true;
      CpuRelax();
    }
    if (std::chrono::steady_clock::now() >= until) return pred();
    // Let a thread with work have this core when there are more threads
    // than cores.
    std::this_thread::yield();
  }
}

// A test-and-test-and-set lock (a chip's inbox; held for a few pushes).
class SpinLock {
 public:
  void lock() {
    for (int spins = 0; locked_.exchange(true, std::memory_order_acquire);) {
      while (locked_.load(std::memory_order_relaxed)) {
        if (++spins < 256) {
          CpuRelax();
        } else {
          std::this_thread::yield();
        }
      }
    }
  }
  void unlock() { locked_.store(false, std::memory_order_release); }

 private:
  std::atomic<bool> locked_{false};
};

// A collective done callback raised during a batch, run after it.
struct PendingDone {
  size_t position;  // of the chip in the batch
  CollectiveDoneCallback done;
  CollectiveResult result;
};

// What the chips of one slice of a batch leave for after it (a line of its
// own per slice: slices run on different threads).
struct alignas(64) RunContext {
  // Several threads run this batch: calendar wake-ups go to `wakeups`, and
  // packets for chips outside [own_lo, own_hi) (the chip ids of this slice
  // and the ids between them: no other thread runs those chips now) go to
  // their inboxes.
  bool parallel = false;
  int32_t own_lo = 0;
  int32_t own_hi = 0;
  size_t position = 0;  // of the chip running, in the batch
  std::vector<std::pair<int64_t, int32_t>> wakeups;  // (time, chip)
  std::vector<PendingDone> dones;
};

// The worker threads of a scheduler. Run(job) runs job(0) on the calling
// thread and, at the same time, job(t) on each worker t = 1..n-1 that wakes
// up before job(0) returns; it then waits for those workers only. So a job
// must let any thread take any part of its work (a worker late or
// descheduled is not waited for: the calling thread takes its part).
// Waiting threads spin for kSpin, then sleep.
class WorkerPool {
 public:
  explicit WorkerPool(int threads) {
    for (int t = 1; t < threads; ++t) {
      workers_.emplace_back([this, t] { Work(t); });
    }
  }
  ~WorkerPool() {
    {
      std::lock_guard<std::mutex> lock(mu_);
      stop_ = true;
    }
    work_cv_.notify_all();
    for (std::thread& w : workers_) w.join();
  }

  template <typename Job>
  void Run(Job& job) {
    // No worker is in a job (state_ is kClosed): publish this one.
    job_ = &job;
    call_ = [](void* j, int t) { (*static_cast<Job*>(j))(t); };
    state_.store(0, std::memory_order_release);
    epoch_.fetch_add(1, std::memory_order_seq_cst);
    if (sleeping_.load(std::memory_order_seq_cst) > 0) {
      { std::lock_guard<std::mutex> lock(mu_); }
      work_cv_.notify_all();
    }
    std::exception_ptr error;
    try {
      job(0);
    } catch (...) {
      error = std::current_exception();
    }
    // Close it and wait for the workers that joined.
    state_.fetch_or(kClosed, std::memory_order_seq_cst);
    auto done = [this] {
      return state_.load(std::memory_order_seq_cst) == kClosed;
    };
    if (!SpinFor(done)) {
      std::unique_lock<std::mutex> lock(mu_);
      main_sleeping_.store(true, std::memory_order_seq_cst);
      done_cv_.wait(lock, done);
      main_sleeping_.store(false, std::memory_order_relaxed);
    }
    // An exception of the job (std::bad_alloc when memory runs out), on this
    // thread or a worker, comes out here once every part has stopped.
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (error == nullptr) error = worker_error_;
      worker_error_ = nullptr;
    }
    if (error != nullptr) std::rethrow_exception(error);
  }

 private:
  static constexpr uint32_t kClosed = 1u << 31;

  void Work(int t) {
    uint64_t seen = 0;
    for (;;) {
      auto ready = [&] {
        return epoch_.load(std::memory_order_seq_cst) != seen;
      };
      if (!SpinFor(ready)) {
        std::unique_lock<std::mutex> lock(mu_);
        sleeping_.fetch_add(1, std::memory_order_seq_cst);
        work_cv_.wait(lock, [&] { return stop_ || ready(); });
        sleeping_.fetch_sub(1, std::memory_order_relaxed);
        if (stop_) return;
      }
      seen = epoch_.load(std::memory_order_acquire);
      // Join the open job (the newest one, whichever epoch woke us), or
      // wait for the next if it is closed.
      uint32_t state = state_.load(std::memory_order_acquire);
      bool joined = false;
      while ((state & kClosed) == 0 && !joined) {
        joined = state_.compare_exchange_weak(state, state + 1,
                                              std::memory_order_acq_rel);
      }
      if (!joined) continue;
      try {
        call_(job_, t);
      } catch (...) {
        std::lock_guard<std::mutex> lock(mu_);
        if (worker_error_ == nullptr) worker_error_ = std::current_exception();
      }
      if (state_.fetch_sub(1, std::memory_order_seq_cst) - 1 == kClosed &&
          main_sleeping_.load(std::memory_order_seq_cst)) {
        { std::lock_guard<std::mutex> lock(mu_); }
        done_cv_.notify_one();
      }
    }
  }

  std::vector<std::thread> workers_;
  std::mutex mu_;
  std::condition_variable work_cv_;
  std::condition_variable done_cv_;
  bool stop_ = false;  // guarded by mu_
  std::exception_ptr worker_error_;  // guarded by mu_
  std::atomic<uint64_t> epoch_{0};
  // kClosed once job(0) has returned, plus the workers in the job.
  std::atomic<uint32_t> state_{kClosed};
  std::atomic<int> sleeping_{0};
  std::atomic<bool> main_sleeping_{false};
  void* job_ = nullptr;
  void (*call_)(void*, int) = nullptr;
};

}  // namespace

// The one SystemC process of a network: it wakes at the earliest pending chip
// event and runs every chip due then, in chip order. Each chip keeps its own
// event queue; the calendar only says which chips have work at which time.
// Chips at the same time cannot affect each other (a message takes at least
// one hop latency > 0), so the chip order is a fixed choice, not a
// dependency, and a large batch can run on several threads (network.h); a
// partitioned run would give each rank such a scheduler for the chips it
// owns.
class NetScheduler : public sc_core::sc_module {
 public:
  SC_HAS_PROCESS(NetScheduler);
  NetScheduler(const sc_core::sc_module_name& name,
               std::vector<ChipNode>* chips, int num_chips, int threads)
      : sc_core::sc_module(name),
        chips_(chips),
        threads_(threads),
        marks_((static_cast<size_t>(num_chips) + 63) / 64),
        contexts_(threads),
        claimed_(new std::atomic<bool>[static_cast<size_t>(threads)]) {
    SC_METHOD(Run);
    sensitive << wake_;
    dont_initialize();
  }

  static int64_t KernelNow() {
    return static_cast<int64_t>(sc_core::sc_time_stamp().value());
  }
  // The current simulated time: while the chips run (on any thread) the
  // batch's time, else the kernel's (read on the SystemC thread only).
  int64_t Now() const { return running_ ? now_ : KernelNow(); }

  // Chip `chip` has an event at `time` (>= now) earlier than any it had.
  // SystemC thread only.
  void Schedule(int64_t time, int chip) {
    calendar_.push_back(Wakeup{time, static_cast<int32_t>(chip)});
    std::push_heap(calendar_.begin(), calendar_.end(), LaterWakeup());
    if (!running_ && time < wake_time_) {
      wake_time_ = time;
      wake_.notify(sc_core::sc_time::from_value(
          static_cast<sc_dt::uint64>(time - KernelNow())));
    }
  }

  int threads() const { return threads_; }
  int64_t activations() const { return activations_; }
  int64_t parallel_batches() const { return parallel_batches_; }

 private:
  void Run();
  // Sets batch_ to the chips of `bucket` in order, once each.
  void TakeBucket(std::vector<int32_t>& bucket);
  // Runs the chips at positions [begin, end) of the batch.
  void RunRange(size_t begin, size_t end, RunContext& ctx);
  // After a batch: its calendar wake-ups and done callbacks.
  void FinishBatch(int contexts);

  // Chips between two prefetch stages of a batch (chosen: 1 measured ~7 %
  // faster than 2 on 4096 chips once the endpoint stages followed the due
  // messages; 3 was slower).
  static constexpr size_t kPrefetchSpacing = 1;
  std::vector<ChipNode>* chips_;
  const int threads_;
  // The chips to wake and when, possibly repeated: a binary heap, earliest
  // first. (A map of a bucket per time cost two allocations and a tree walk
  // per entry once HBM-paced chunks spread the events over many distinct
  // times: 28 % of ChipNode::Run on BERT-large over 1024 chips.)
  struct Wakeup {
    int64_t time;
    int32_t chip;
  };
  struct LaterWakeup {
    bool operator()(const Wakeup& a, const Wakeup& b) const {
      return a.time > b.time;
    }
  };
  std::vector<Wakeup> calendar_;
  std::vector<int32_t> bucket_;  // Run's scratch: the chips due at one time
  std::vector<int32_t> batch_;
  std::vector<uint64_t> marks_;  // TakeBucket's bit per chip (all clear)
  bool running_ = false;
  int64_t now_ = 0;  // while running
  int64_t wake_time_ = kNever;
  int64_t activations_ = 0;
  int64_t parallel_batches_ = 0;
  sc_core::sc_event wake_;
  std::vector<RunContext> contexts_;  // by slice of a parallel batch
  std::vector<PendingDone> dones_;
  std::unique_ptr<std::atomic<bool>[]> claimed_;  // by slice
  std::unique_ptr<WorkerPool> pool_;  // made at the first parallel batch
};

class ChipNode {
 public:
  ChipNode(int chip, NetScheduler* scheduler, const Topology* topology,
           const NetConfig* config)
      : chip_(chip),
        scheduler_(scheduler),
        topology_(topology),
        config_(config) {}
  ChipNode(ChipNode&&) = default;

  // Allocates the chip's endpoints and queue (separate from the constructor,
  // so that the network can do it in either order).
  void Init(CollectiveDataPath* data_path) {
    heap_.reserve(8);
    const int cores = topology_->devices_per_chip();
    for (int core = 0; core < cores; ++core) {
      transports_[core] = Transport(this, core);
    }
    for (int core = 0; core < cores; ++core) {
      endpoints_.push_back(std::make_unique<CollectiveEndpoint>(
          topology_->device_at(chip_, core), topology_,
          &transports_[core], data_path));
      ep_[core] = endpoints_.back().get();
    }
  }

  // Connects the links to their destination chips.
  void Wire(std::vector<ChipNode>& chips) {
    for (int dir = 0; dir < kNumDirections; ++dir) {
      const int to = topology_->Neighbor(chip_, dir);
      if (to < 0) continue;
      Link& l = links_[dir];
      l.dst = &chips[to];
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
  int64_t runs() const { return runs_; }
  int64_t wake_time() const { return wake_time_; }

  // Prefetches the state a run of this chip at `now` touches, one level of
  // pointers per stage (stage k reads what stage k-1 fetched). A hint only:
  // it changes no state.
  // The endpoint stages follow the messages this run will deliver (the due
  // arrivals among the first queue entries, which name the collective,
  // stream and step), not a guess: a device has several collectives in
  // flight.
  // In a parallel batch only the queues of neighbours that `ctx`'s thread
  // owns are looked at (packets for the others go to their inboxes).
  static constexpr int kPrefetchStages = 1 + CollectiveEndpoint::kPrefetchStages;
  // Queue entries looked at for due messages (chosen: a chip rarely has
  // more due at once).
  static constexpr size_t kPrefetchEvents = 3;
  void Prefetch(int stage, int64_t now, const RunContext& ctx) const {
    if (stage == 0) {
      // The whole node (header and links; about 1 KiB).
      const char* p = reinterpret_cast<const char*>(this);
      for (size_t off = 0; off < sizeof(ChipNode); off += 64) {
        __builtin_prefetch(p + off);
      }
      return;
    }
    if (stage == 1) {
      // The queue (one line per event) and a slot for one more.
      for (size_t i = 0; i <= heap_.size() && i < 16; ++i) {
        __builtin_prefetch(heap_.data() + i);
      }
      for (const CollectiveEndpoint* ep : ep_) {
        if (ep != nullptr) ep->Prefetch(0, MessageTag{});
      }
      // The neighbours this chip sends to: their queue headers.
      for (const Link& l : links_) {
        if (l.dst != nullptr) __builtin_prefetch(&l.dst->wake_time_);
      }
      return;
    }
    if (stage == 2) {
      // Where a packet sent to each neighbour lands in its queue.
      for (const Link& l : links_) {
        if (l.dst != nullptr &&
            (!ctx.parallel ||
             (l.dst->chip_ >= ctx.own_lo && l.dst->chip_ < ctx.own_hi))) {
          __builtin_prefetch(l.dst->heap_.data() + l.dst->heap_.size());
        }
      }
      for (const CollectiveEndpoint* ep : ep_) {
        if (ep != nullptr) ep->Prefetch(1, MessageTag{});
      }
      return;
    }
    const size_t n = std::min(heap_.size(), kPrefetchEvents);
    for (size_t i = 0; i < n; ++i) {
      const Event& e = heap_[i];
      if (e.time > now || e.type != EventType::kArrive) continue;
      if (topology_->chip_of_device(e.dst_dev) != chip_) continue;
      const CollectiveEndpoint* ep = ep_[topology_->core_of_device(e.dst_dev)];
      if (ep != nullptr) ep->Prefetch(stage - 1, e.tag);
    }
  }

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

  // Handles every event of this chip at or before `now` in the fixed key
  // order (events it adds for `now` included), after taking in the packets
  // its inbox holds. Does nothing (not a run) when no event is due: the
  // calendar entry was a repeat. What reaches beyond this chip goes through
  // `ctx` (see RunContext).
  void Run(int64_t now, RunContext& ctx) {
    TakeInbox();
    if (heap_.empty() || heap_.front().time > now) {
      wake_time_ = heap_.empty() ? kNever : heap_.front().time;
      return;
    }
    ++runs_;
    ctx_ = &ctx;
    wake_time_ = now;  // pushes during the run need no calendar entry
    while (!heap_.empty() && heap_.front().time <= now) {
      std::pop_heap(heap_.begin(), heap_.end(), Later());
      const Event e = heap_.back();
      heap_.pop_back();
      ++events_;
      Handle(e, now);
    }
    wake_time_ = heap_.empty() ? kNever : heap_.front().time;
    if (wake_time_ != kNever) {
      if (ctx.parallel) {
        ctx.wakeups.emplace_back(wake_time_, chip_);
      } else {
        scheduler_->Schedule(wake_time_, chip_);
      }
    }
    ctx_ = nullptr;
  }

 private:
  struct Link {
    ChipNode* dst = nullptr;
    int dst_port = 0;
    bool free_pending = false;  // a link-free event is scheduled
    int rr = 0;
    double ps_per_byte = 0;
    int64_t latency = 0;
    int64_t busy_until = 0;  // the current packet's finish
    // Packets waiting (made at the first), and how many.
    std::unique_ptr<WaitQueue> waiting;
    int64_t waiting_packets = 0;
    int64_t packets = 0;
    int64_t bytes = 0;
    int64_t busy_ps = 0;
    int64_t peak_queue = 0;
  };

  class Transport : public EndpointTransport {
   public:
    Transport() = default;
    Transport(ChipNode* node, int core) : node_(node), core_(core) {}
    Picoseconds Now() const override {
      return Picoseconds(node_->scheduler_->Now());
    }
    void Send(int dst_device, int64_t bytes, const MessageTag& tag,
              Picoseconds head_ready, Picoseconds tail_ready) override {
      node_->Send(core_, dst_device, bytes, tag, head_ready.count(),
                  tail_ready.count());
    }
    void ScheduleTimer(Picoseconds at, uint64_t token) override {
      Event e;
      e.time = std::max(at.count(), node_->scheduler_->Now());
      e.order = kTimerOrder + core_;
      e.id = token;
      e.sub = core_;
      e.type = EventType::kTimer;
      node_->Push(e);
    }
    // Inside a run: after the batch, on the SystemC thread (RunContext).
    void Finish(CollectiveDoneCallback done,
                const CollectiveResult& result) override {
      RunContext* ctx = node_->ctx_;
      if (ctx == nullptr) {
        done(result);
        return;
      }
      ctx->dones.push_back(PendingDone{ctx->position, std::move(done), result});
    }

   private:
    ChipNode* node_ = nullptr;
    int core_ = 0;
  };

  // Queues the arrival of packet `p` (its fields) on input `port` at p.time;
  // `ctx` as Push.
  void PushPacket(Event p, int port, RunContext* ctx = nullptr) {
    p.order = static_cast<uint32_t>(port);
    p.type = EventType::kArrive;
    Push(p, ctx);
  }

  // From this chip, the SystemC thread, or the run of a chip whose thread
  // owns this one (`ctx`: then the calendar entry goes to ctx's wake-ups);
  // other threads use Mail. During this chip's own run no calendar entry is
  // needed (wake_time_ is now).
  void Push(const Event& e, RunContext* ctx = nullptr) {
    heap_.push_back(e);
    std::push_heap(heap_.begin(), heap_.end(), Later());
    if (e.time < wake_time_) {
      wake_time_ = e.time;
      if (ctx != nullptr && ctx->parallel) {
        ctx->wakeups.emplace_back(e.time, chip_);
      } else {
        scheduler_->Schedule(e.time, chip_);
      }
    }
  }

  // From a run on another thread: packet `p` for this chip's input `port`,
  // kept in the inbox until this chip next runs (its time is at least one
  // hop latency after now). Adds the calendar entry to `ctx` unless the
  // last packet mailed was for the same time.
  void Mail(Event p, int port, RunContext& ctx) {
    p.order = static_cast<uint32_t>(port);
    p.type = EventType::kArrive;
    bool wake = false;
    {
      std::lock_guard<SpinLock> lock(inbox_.lock);
      inbox_.events.push_back(p);
      inbox_.nonempty.store(true, std::memory_order_relaxed);
      if (inbox_.wakeup != p.time) {
        inbox_.wakeup = p.time;
        wake = true;
      }
    }
    if (wake) ctx.wakeups.emplace_back(p.time, chip_);
  }

  // Moves the inbox into the queue (the key order makes the order they
  // arrived in irrelevant). wake_time_ does not count inbox packets; each
  // has its own calendar entry.
  void TakeInbox() {
    if (!inbox_.nonempty.load(std::memory_order_relaxed)) return;
    std::lock_guard<SpinLock> lock(inbox_.lock);
    for (const Event& e : inbox_.events) {
      heap_.push_back(e);
      std::push_heap(heap_.begin(), heap_.end(), Later());
    }
    inbox_.events.clear();
    inbox_.nonempty.store(false, std::memory_order_relaxed);
  }

  void Handle(const Event& e, int64_t now) {
    switch (e.type) {
      case EventType::kArrive:
        if (e.order >= kLocalPort && e.sub + 1 < e.count) {
          // A message's packets reach the chip's send port one event at a
          // time: the next one is queued when this one is due (its time is
          // at or after this one's), so the queue holds one per message.
          PushPacket(LocalPacket(e.id, e.sub + 1, e), e.order);
        }
        Route(e, static_cast<int>(e.order), now);
        break;
      case EventType::kLinkFree:
        links_[e.sub].free_pending = false;
        TryStart(static_cast<int>(e.sub), now);
        break;
      case EventType::kTimer:
        ep_[e.sub]->OnTimer(e.id);
        break;
    }
  }

  void Send(int core, int dst_device, int64_t bytes, const MessageTag& tag,
            int64_t head, int64_t tail) {
    const int64_t now = scheduler_->Now();
    head = std::max(head, now);
    tail = std::max(tail, head);
    const int src = topology_->device_at(chip_, core);
    Event p;
    p.id = (static_cast<uint64_t>(src) << 40) | next_msg_[core]++;
    p.dst_dev = dst_device;
    p.tag = tag;
    const int64_t size = config_->packet_bytes;
    const int64_t count =
        (size == 0 || bytes <= size) ? 1 : (bytes + size - 1) / size;
    p.count = static_cast<uint32_t>(count);
    p.bytes = bytes;
    p.time = head;
    p.tail = tail;
    if (count > 1) {
      outgoing_.emplace(p.id, Outgoing{head, tail, bytes});
      p = LocalPacket(p.id, 0, p);
    }
    // The packets ready now go at once (no event); the first later one is
    // queued, and brings the next when it is due (Handle).
    for (;;) {
      if (p.time != now) {
        PushPacket(p, kLocalPort + core);
        break;
      }
      Route(p, kLocalPort + core, now);
      if (p.sub + 1 >= p.count) break;
      p = LocalPacket(p.id, p.sub + 1, p);
    }
  }

  // Packet `sub` of the multi-packet message `id` sent from this chip, its
  // other fields as `like`: bytes become available evenly between the
  // message's head and tail.
  Event LocalPacket(uint64_t id, uint32_t sub, const Event& like) const {
    const Outgoing& m = outgoing_.at(id);
    const int64_t size = config_->packet_bytes;
    const int64_t count = like.count;
    const int64_t i = sub;
    const __int128 span = m.tail - m.head;
    Event p = like;
    p.sub = sub;
    p.bytes = std::min(size, m.bytes - i * size);
    p.time = m.head + static_cast<int64_t>(span * i / count);
    p.tail = m.head + static_cast<int64_t>(span * (i + 1) / count);
    return p;
  }

  void Route(const Event& p, int port, int64_t now) {
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

  void Enqueue(int link, const Event& p, int port, int64_t now) {
    Link& l = links_[link];
    if (l.waiting_packets == 0 && !l.free_pending && l.busy_until <= now) {
      // An idle link with nothing waiting starts the packet at once.
      if (l.peak_queue < 1) l.peak_queue = 1;
      l.rr = (port + 1) % kNumPorts;
      Transmit(l, link, port, p, now);
      return;
    }
    const int64_t queued = ++l.waiting_packets;
    if (l.waiting == nullptr) l.waiting = std::make_unique<WaitQueue>();
    l.waiting->Push(port, p, port >= kLocalPort && p.count > 1);
    if (queued > l.peak_queue) l.peak_queue = queued;
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
    if (l.waiting_packets == 0) return;
    // Round-robin between ports: the first waiting packet of the first port
    // at or after rr (cyclically).
    const int port = l.waiting->NextPort(l.rr);
    const Event p = l.waiting->Pop(port, [this](const Event& q) {
      return LocalPacket(q.id, q.sub + 1, q);
    });
    --l.waiting_packets;
    l.rr = (port + 1) % kNumPorts;
    Transmit(l, link, port, p, now);
    if (l.waiting_packets > 0) ScheduleLinkFree(link, l.busy_until);
  }

  // Starts packet `p` on link `l` now and queues its arrival at the far end.
  // `port`: the input it came from.
  void Transmit(Link& l, int link, int port, Event p, int64_t now) {
    (void)link;
    if (port >= kLocalPort && p.count > 1 && p.sub + 1 == p.count) {
      outgoing_.erase(p.id);  // its last packet leaves this chip's send port
    }
    const int64_t tx = static_cast<int64_t>(
        std::ceil(static_cast<double>(p.bytes) * l.ps_per_byte));
    const int64_t finish = std::max(now + tx, p.tail);
    l.busy_until = finish;
    ++l.packets;
    l.bytes += p.bytes;
    l.busy_ps += finish - now;
    p.time = now + l.latency;
    p.tail = finish + l.latency;
    if (ctx_ != nullptr && ctx_->parallel &&
        (l.dst->chip_ < ctx_->own_lo || l.dst->chip_ >= ctx_->own_hi)) {
      l.dst->Mail(p, l.dst_port, *ctx_);
      return;
    }
    l.dst->PushPacket(p, l.dst_port, ctx_);
  }

  void Deliver(const Event& p) {
    CollectiveEndpoint& ep = *ep_[topology_->core_of_device(p.dst_dev)];
    if (p.count == 1) {
      ep.OnMessage(p.tag, p.bytes, Picoseconds(p.time), Picoseconds(p.tail));
      return;
    }
    // Packets of one message: its bytes are the sum of theirs.
    auto [it, inserted] = partial_.try_emplace(p.id, Partial{p.time, 0, 0});
    // Its head holds the endpoint's floor back until the message is whole.
    if (inserted) ep.Hold(Picoseconds(p.time));
    Partial& part = it->second;
    part.bytes += p.bytes;
    if (++part.count < p.count) return;
    const Partial done = part;
    partial_.erase(it);
    ep.OnMessage(p.tag, done.bytes, Picoseconds(done.head),
                 Picoseconds(p.tail));
    ep.Release(Picoseconds(done.head));
  }

  // The fields a message from another chip touches come first, together.
  int chip_;
  int64_t wake_time_ = kNever;  // earliest event; now while running
  NetScheduler* scheduler_;
  std::vector<Event> heap_;  // a binary heap, earliest first (Later)
  std::array<CollectiveEndpoint*, 2> ep_ = {nullptr, nullptr};  // by core
  // Messages sent, by core (the message ids). Inline: every send reads it,
  // and the node's lines are prefetched (a vector was a miss per send).
  std::array<uint64_t, 2> next_msg_ = {0, 0};
  int64_t events_ = 0;
  int64_t runs_ = 0;
  const Topology* topology_;
  const NetConfig* config_;
  std::array<Link, kNumLinks> links_;
  // Inline: every send goes through one, and the node's lines are
  // prefetched (they point at this node: set by Init, after which the node
  // never moves).
  std::array<Transport, 2> transports_;
  std::vector<std::unique_ptr<CollectiveEndpoint>> endpoints_;
  // Packet mode: messages with some packets delivered.
  struct Partial {
    int64_t head;   // the first packet's head
    int64_t bytes;  // delivered so far
    uint32_t count;
  };
  std::unordered_map<uint64_t, Partial> partial_;
  // Multi-packet messages sent from this chip, until their last packet has
  // left the send port (LocalPacket).
  struct Outgoing {
    int64_t head;
    int64_t tail;
    int64_t bytes;
  };
  std::unordered_map<uint64_t, Outgoing> outgoing_;
  RunContext* ctx_ = nullptr;  // while this chip runs
  // Packets from chips run on other threads (a line of its own: written by
  // those threads).
  struct Inbox {
    Inbox() = default;
    Inbox(Inbox&& o) noexcept : events(std::move(o.events)) {}
    SpinLock lock;
    std::atomic<bool> nonempty{false};  // events is not empty (a hint)
    std::vector<Event> events;
    int64_t wakeup = -1;  // time of the last calendar entry a Mail added
  };
  alignas(64) Inbox inbox_;
};

void NetScheduler::RunRange(size_t begin, size_t end, RunContext& ctx) {
  std::vector<ChipNode>& chips = *chips_;
  // Prefetch the chips ahead (the ones before `begin` are someone else's).
  constexpr size_t kAhead = ChipNode::kPrefetchStages * kPrefetchSpacing;
  const size_t start = begin >= kAhead ? begin - kAhead : 0;
  for (size_t i = start; i < end; ++i) {
    for (int stage = 0; stage < ChipNode::kPrefetchStages; ++stage) {
      const size_t ahead =
          i + static_cast<size_t>(ChipNode::kPrefetchStages - stage) *
                  kPrefetchSpacing;
      if (ahead >= begin && ahead < end) {
        chips[batch_[ahead]].Prefetch(stage, now_, ctx);
      }
    }
    if (i < begin) continue;
    ctx.position = i;
    chips[batch_[i]].Run(now_, ctx);
  }
}

void NetScheduler::TakeBucket(std::vector<int32_t>& bucket) {
  batch_.clear();
  if (bucket.size() * 16 < marks_.size()) {
    batch_.swap(bucket);
    std::sort(batch_.begin(), batch_.end());
    batch_.erase(std::unique(batch_.begin(), batch_.end()), batch_.end());
    return;
  }
  // A bit per chip, read back in order (linear, where sorting thousands of
  // repeated entries per batch was a serial cost).
  for (const int32_t chip : bucket) {
    marks_[static_cast<size_t>(chip) >> 6] |= uint64_t{1} << (chip & 63);
  }
  for (size_t w = 0; w < marks_.size(); ++w) {
    uint64_t bits = marks_[w];
    if (bits == 0) continue;
    marks_[w] = 0;
    while (bits != 0) {
      batch_.push_back(static_cast<int32_t>(w * 64 + __builtin_ctzll(bits)));
      bits &= bits - 1;
    }
  }
}

void NetScheduler::FinishBatch(int contexts) {
  for (int t = 0; t < contexts; ++t) {
    RunContext& ctx = contexts_[t];
    for (const auto& [time, chip] : ctx.wakeups) Schedule(time, chip);
    ctx.wakeups.clear();
    for (PendingDone& d : ctx.dones) dones_.push_back(std::move(d));
    ctx.dones.clear();
  }
  if (dones_.empty()) return;
  // Chip order (each thread's list is in order, and one chip's callbacks
  // come from one thread in the order raised).
  if (contexts > 1) {
    std::stable_sort(dones_.begin(), dones_.end(),
                     [](const PendingDone& a, const PendingDone& b) {
                       return a.position < b.position;
                     });
  }
  std::vector<PendingDone> dones;
  dones.swap(dones_);
  for (PendingDone& d : dones) d.done(d.result);
}

void NetScheduler::Run() {
  ++activations_;
  now_ = KernelNow();
  const int64_t now = now_;
  running_ = true;
  // The chips due now, in chip order (each time's bucket sorted), taken as a
  // batch so that the state of the chips ahead can be prefetched while one
  // runs: in a sweep every chip touches a few lines of its own state, and at
  // thousands of chips that state is no longer in cache. Chips can be added
  // for `now` while the batch runs or by its done callbacks (a timer at
  // now); the loop takes them next.
  while (!calendar_.empty() && calendar_.front().time <= now) {
    const int64_t time = calendar_.front().time;
    bucket_.clear();
    while (!calendar_.empty() && calendar_.front().time == time) {
      bucket_.push_back(calendar_.front().chip);
      std::pop_heap(calendar_.begin(), calendar_.end(), LaterWakeup());
      calendar_.pop_back();
    }
    TakeBucket(bucket_);
    const size_t n = batch_.size();
    if (threads_ > 1 && n >= kMinParallelBatch) {
      ++parallel_batches_;
      if (pool_ == nullptr) pool_ = std::make_unique<WorkerPool>(threads_);
      // Contiguous slices of the batch, one per thread (equal chip counts).
      const size_t threads = static_cast<size_t>(threads_);
      for (size_t t = 0; t < threads; ++t) {
        RunContext& ctx = contexts_[t];
        ctx.parallel = true;
        ctx.own_lo = t == 0 ? 0 : batch_[t * n / threads];
        ctx.own_hi = t + 1 == threads
                         ? std::numeric_limits<int32_t>::max()
                         : batch_[(t + 1) * n / threads];
      }
      // Slice s runs on whichever thread claims it first (with context s,
      // so the same rules hold whoever runs it): the SystemC thread takes
      // slice 0, then any slice no worker has started.
      for (size_t t = 0; t < threads; ++t) {
        claimed_[t].store(t == 0, std::memory_order_relaxed);
      }
      auto job = [this, n, threads](int t) {
        auto run = [&](size_t s) {
          RunRange(s * n / threads, (s + 1) * n / threads, contexts_[s]);
        };
        if (t == 0) run(0);
        for (size_t k = 0; k + 1 < threads; ++k) {
          const size_t s =
              1 + (static_cast<size_t>(t == 0 ? 0 : t - 1) + k) % (threads - 1);
          if (!claimed_[s].exchange(true, std::memory_order_acq_rel)) run(s);
        }
      };
      pool_->Run(job);
      FinishBatch(threads_);
    } else {
      contexts_[0].parallel = false;
      RunRange(0, n, contexts_[0]);
      FinishBatch(1);
    }
    batch_.clear();
  }
  running_ = false;
  if (calendar_.empty()) {
    wake_time_ = kNever;
  } else {
    wake_time_ = calendar_.front().time;
    wake_.notify(sc_core::sc_time::from_value(
        static_cast<sc_dt::uint64>(wake_time_ - now)));
  }
}

Network::Network(const Topology& topology, const NetConfig& config)
    : topology_(topology), config_(config) {}

Network::~Network() = default;

absl::StatusOr<std::unique_ptr<Network>> Network::Create(
    const Topology& topology, const NetConfig& config, NetworkOptions options) {
  TPUSIM_RETURN_IF_ERROR(
      ValidateNetConfig(config, topology.devices_per_chip()));
  if (options.threads < 0 || options.threads > kMaxThreads) {
    return absl::InvalidArgumentError(absl::StrCat(
        "NetworkOptions.threads=", options.threads, " is not allowed; expected 1..",
        kMaxThreads, ", or 0 for one per hardware thread"));
  }
  int threads = options.threads;
  if (threads == 0) {
    threads = std::max(1, static_cast<int>(std::thread::hardware_concurrency()));
  }
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
  net->scheduler_ = std::make_unique<NetScheduler>(
      options.name.c_str(), &net->chips_, chips, threads);
  net->chips_.reserve(chips);  // never reallocated: links point into it
  for (int chip = 0; chip < chips; ++chip) {
    net->chips_.emplace_back(chip, net->scheduler_.get(), &net->topology_,
                             &net->config_);
  }
  for (int i = 0; i < chips; ++i) {
    const int chip = options.reverse_construction ? chips - 1 - i : i;
    net->chips_[chip].Init(data_path);
  }
  for (ChipNode& c : net->chips_) c.Wire(net->chips_);
  net->endpoints_.resize(topology.num_devices());
  for (int d = 0; d < topology.num_devices(); ++d) {
    net->endpoints_[d] = &net->chips_[topology.chip_of_device(d)].endpoint(
        topology.core_of_device(d));
  }
  return net;
}

std::vector<LinkStats> Network::Links() const {
  std::vector<LinkStats> out;
  for (const ChipNode& c : chips_) c.AppendLinks(out);
  return out;
}

int64_t Network::activations() const { return scheduler_->activations(); }

int Network::threads() const { return scheduler_->threads(); }

int64_t Network::parallel_batches() const {
  return scheduler_->parallel_batches();
}

int64_t Network::chip_runs() const {
  int64_t n = 0;
  for (const ChipNode& c : chips_) n += c.runs();
  return n;
}

int64_t Network::events() const {
  int64_t n = 0;
  for (const ChipNode& c : chips_) n += c.events();
  return n;
}

}  // namespace tpusim::sim::net
