#include "strategy/runtime/host_backend.h"

#include <atomic>
#include <condition_variable>
#include <exception>
#include <functional>
#include <mutex>
#include <thread>

#include "absl/container/inlined_vector.h"
#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "strategy/runtime/kernels.h"

namespace tpusim::runtime {

// A persistent pool: ParallelFor hands out indices to the workers and the
// calling thread. Which thread runs which index never affects results (every
// index writes its own slot).
class WorkerPool {
 public:
  explicit WorkerPool(int num_threads) {
    for (int i = 0; i < num_threads; ++i)
      threads_.emplace_back([this] { Loop(); });
  }
  ~WorkerPool() {
    {
      std::lock_guard<std::mutex> lock(mu_);
      stop_ = true;
    }
    cv_.notify_all();
    for (std::thread& t : threads_) t.join();
  }

  // Runs fn(0) ... fn(count - 1) and returns when all have finished. An
  // exception of fn (std::bad_alloc when memory runs out) on any thread is
  // rethrown here, on the calling thread, once every index has finished (the
  // first one thrown; a worker thread never lets one escape).
  void ParallelFor(int count, const std::function<void(int)>& fn) {
    {
      std::lock_guard<std::mutex> lock(mu_);
      fn_ = &fn;
      count_ = count;
      next_ = 0;
      done_ = 0;
      error_ = nullptr;
      ++generation_;
    }
    cv_.notify_all();
    Work();
    std::unique_lock<std::mutex> lock(mu_);
    // Also wait until no worker is inside Work(): a worker still holding this
    // job's function must not claim an index of the next job.
    done_cv_.wait(lock, [&] { return done_ == count_ && active_ == 0; });
    fn_ = nullptr;
    if (error_ != nullptr) {
      std::exception_ptr error = error_;
      error_ = nullptr;
      std::rethrow_exception(error);
    }
  }

 private:
  // Claims and runs indices of the current job until none are left.
  void Work() {
    const std::function<void(int)>* fn;
    int count;
    {
      std::lock_guard<std::mutex> lock(mu_);
      fn = fn_;
      count = count_;
      if (fn == nullptr) return;
      ++active_;
    }
    int ran = 0;
    std::exception_ptr error;
    for (int i = next_.fetch_add(1); i < count; i = next_.fetch_add(1)) {
      try {
        (*fn)(i);
      } catch (...) {
        if (error == nullptr) error = std::current_exception();
      }
      ++ran;
    }
    std::lock_guard<std::mutex> lock(mu_);
    if (error != nullptr && error_ == nullptr) error_ = error;
    done_ += ran;
    --active_;
    if (done_ == count_ && active_ == 0) done_cv_.notify_all();
  }

  void Loop() {
    uint64_t seen = 0;
    while (true) {
      {
        std::unique_lock<std::mutex> lock(mu_);
        cv_.wait(lock, [&] { return stop_ || generation_ != seen; });
        if (stop_) return;
        seen = generation_;
      }
      Work();
    }
  }

  std::mutex mu_;
  std::condition_variable cv_;
  std::condition_variable done_cv_;
  std::vector<std::thread> threads_;
  const std::function<void(int)>* fn_ = nullptr;  // guarded by mu_
  std::exception_ptr error_;                      // guarded by mu_
  int count_ = 0;                                 // guarded by mu_
  int done_ = 0;                                  // guarded by mu_
  int active_ = 0;                                // guarded by mu_
  uint64_t generation_ = 0;                       // guarded by mu_
  bool stop_ = false;                             // guarded by mu_
  std::atomic<int> next_{0};
};

namespace {

class HostBuffer final : public Buffer {
 public:
  HostBuffer(const HostBackend* owner, const Device* device, Tensor value)
      : owner_(owner),
        device_(device),
        value_(std::move(value)),
        spec_(value_.spec()) {}
  const Device& device() const override { return *device_; }
  const TensorSpec& spec() const override { return spec_; }
  bool has_data() const override { return value_.has_data(); }
  const HostBackend* owner() const { return owner_; }
  const Tensor& value() const { return value_; }

 private:
  const HostBackend* owner_;
  const Device* device_;
  Tensor value_;
  TensorSpec spec_;
};

// Counters one step adds to the device of one logical core.
struct CoreCounters {
  std::vector<std::pair<OpCode, OpTally>> per_op;  // non-empty op codes only
  int64_t cross_core_bytes = 0;
  int64_t collective_bytes = 0;
};

class HostExecutable final : public Executable {
 public:
  HostExecutable(const HostBackend* owner, Program program,
                 CompileOptions options)
      : owner_(owner), program_(std::move(program)), options_(options) {}

  const Program& program() const override { return program_; }
  const CompileOptions& options() const override { return options_; }
  OpCost cost() const override { return total_; }

  const HostBackend* owner_;
  Program program_;
  CompileOptions options_;
  OpCost total_;
  std::vector<OpCost> op_costs_;
  std::vector<bool> parallel_;  // per op: spread replicas over the pool
  // Per collective op: its resolved replica groups (empty for other ops).
  std::vector<std::vector<std::vector<int64_t>>> groups_;
  std::vector<CoreCounters> per_core_;
};

std::string ValueName(const Program& p, int id) {
  return absl::StrCat("op %", id, " (", OpCodeName(p.ops()[id].code), ")");
}

absl::Status AtOp(const absl::Status& s, const Program& p, int id,
                  int replica) {
  return absl::Status(
      s.code(), absl::StrCat("program ", p.name(), ", replica ", replica, ", ",
                             ValueName(p, id), ": ", s.message()));
}

}  // namespace

HostBackend::HostBackend(std::vector<DeviceDescription> devices,
                         HostBackendOptions options)
    : options_(options) {
  for (size_t i = 0; i < devices.size(); ++i) {
    TPUSIM_CHECK(devices[i].id == static_cast<int>(i))
        << "device ids must be 0..N-1 in order; device " << i << " has id "
        << devices[i].id;
    devices_.push_back(std::make_unique<Device>(std::move(devices[i])));
    device_ptrs_.push_back(devices_.back().get());
  }
  ResetProfile();
  if (options_.num_threads > 0)
    pool_ = std::make_unique<WorkerPool>(options_.num_threads);
}

namespace {
std::vector<DeviceDescription> PlainDevices(int n) {
  std::vector<DeviceDescription> out(n);
  for (int i = 0; i < n; ++i) {
    out[i].id = i;
    out[i].task = 0;
    out[i].ordinal = i;
    out[i].coords = {i, 0, 0};
    out[i].kind = "host";
  }
  return out;
}
}  // namespace

HostBackend::HostBackend(int num_devices, HostBackendOptions options)
    : HostBackend(PlainDevices(num_devices), options) {}

HostBackend::~HostBackend() = default;

absl::Status HostBackend::CheckDevice(int device_id,
                                      absl::string_view what) const {
  if (device_id < 0 || device_id >= static_cast<int>(devices_.size())) {
    return absl::InvalidArgumentError(absl::StrCat(
        what, ": device ", device_id, " does not exist; the host backend has ",
        devices_.size(), " devices"));
  }
  return absl::OkStatus();
}

absl::StatusOr<std::unique_ptr<Buffer>> HostBackend::TransferToDevice(
    int device_id, const Tensor& value, const TransferOptions& options) {
  TPUSIM_RETURN_IF_ERROR(CheckDevice(device_id, "TransferToDevice"));
  TPUSIM_RETURN_IF_ERROR(ValidateTransferOptions(options));
  profile_[device_id].host_to_device_bytes += value.byte_size();
  return std::unique_ptr<Buffer>(
      new HostBuffer(this, devices_[device_id].get(), value));
}

absl::StatusOr<Tensor> HostBackend::TransferFromDevice(const Buffer& buffer) {
  TPUSIM_ASSIGN_OR_RETURN(Tensor t, BufferTensor(buffer));
  profile_[buffer.device().id()].device_to_host_bytes += t.byte_size();
  return t;
}

absl::StatusOr<std::unique_ptr<Buffer>> HostBackend::WrapTensor(int device_id,
                                                                Tensor value) {
  TPUSIM_RETURN_IF_ERROR(CheckDevice(device_id, "WrapTensor"));
  return std::unique_ptr<Buffer>(
      new HostBuffer(this, devices_[device_id].get(), std::move(value)));
}

absl::StatusOr<Tensor> HostBackend::BufferTensor(const Buffer& buffer) const {
  const auto* hb = dynamic_cast<const HostBuffer*>(&buffer);
  if (hb == nullptr || hb->owner() != this) {
    return absl::InvalidArgumentError(
        absl::StrCat("buffer on ", buffer.device().DebugString(),
                     " was not made by this host backend"));
  }
  return hb->value();
}

absl::StatusOr<std::unique_ptr<Executable>> HostBackend::Compile(
    const Program& program, const CompileOptions& options) {
  if (options.num_replicas < 1 || options.num_cores_per_replica < 1) {
    return absl::InvalidArgumentError(absl::StrCat(
        "Compile ", program.name(), ": num_replicas=", options.num_replicas,
        " and num_cores_per_replica=", options.num_cores_per_replica,
        " must be >= 1"));
  }
  if (options.num_replicas != program.num_replicas() ||
      options.num_cores_per_replica != program.num_cores_per_replica()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "Compile ", program.name(), ": options ask for ", options.num_replicas,
        " replicas x ", options.num_cores_per_replica,
        " cores, the program was traced for ", program.num_replicas(), " x ",
        program.num_cores_per_replica()));
  }
  const int64_t needed = static_cast<int64_t>(options.num_replicas) *
                         options.num_cores_per_replica;
  if (needed > static_cast<int64_t>(devices_.size())) {
    return absl::InvalidArgumentError(absl::StrCat(
        "Compile ", program.name(), ": ", options.num_replicas, " replicas x ",
        options.num_cores_per_replica, " cores need ", needed,
        " devices, the host backend has ", devices_.size()));
  }
  auto exe = std::make_unique<HostExecutable>(this, program, options);
  const std::vector<Op>& ops = exe->program_.ops();
  const int n = static_cast<int>(ops.size());
  exe->op_costs_.resize(n);
  exe->parallel_.resize(n);
  exe->groups_.resize(n);
  exe->per_core_.resize(options.num_cores_per_replica);
  std::vector<std::vector<OpTally>> by_code(
      options.num_cores_per_replica, std::vector<OpTally>(kNumOpCodes));
  for (int i = 0; i < n; ++i) {
    const Op& op = ops[i];
    const OpCost c = exe->program_.CostOf(Value{i});
    exe->op_costs_[i] = c;
    exe->total_ += c;
    exe->parallel_[i] = pool_ != nullptr && options.num_replicas > 1 &&
                        (c.flops + c.bytes_read + c.bytes_written) >=
                            options_.parallel_threshold;
    if (IsCollective(op.code) && op.code != OpCode::kCollectivePermute) {
      TPUSIM_ASSIGN_OR_RETURN(
          exe->groups_[i],
          ResolveReplicaGroups(op.code, op.attrs.replica_groups,
                               options.num_replicas));
    }
    OpTally& k = by_code[op.logical_core][static_cast<int>(op.code)];
    k.count += 1;
    k.flops += c.flops;
    k.transcendentals += c.transcendentals;
    k.bytes_read += c.bytes_read;
    k.bytes_written += c.bytes_written;
    CoreCounters& core = exe->per_core_[op.logical_core];
    for (int o : op.operands) {
      if (ops[o].logical_core != op.logical_core)
        core.cross_core_bytes += ops[o].type.byte_size();
    }
    if (IsCollective(op.code))
      core.collective_bytes += ops[op.operands[0]].type.byte_size();
  }
  for (int c = 0; c < options.num_cores_per_replica; ++c) {
    for (int code = 0; code < kNumOpCodes; ++code) {
      if (by_code[c][code].count > 0) {
        exe->per_core_[c].per_op.emplace_back(static_cast<OpCode>(code),
                                              by_code[c][code]);
      }
    }
  }
  return std::unique_ptr<Executable>(std::move(exe));
}

absl::StatusOr<SpmdOutputs> HostBackend::ExecuteSpmd(
    const Executable& executable, const SpmdAssignment& assignment,
    absl::Span<const std::vector<Buffer*>> per_replica_args) {
  const auto* exe = dynamic_cast<const HostExecutable*>(&executable);
  if (exe == nullptr || exe->owner_ != this) {
    return absl::InvalidArgumentError(
        "ExecuteSpmd: the executable was not compiled by this "
        "host backend");
  }
  const Program& program = exe->program_;
  const int R = exe->options_.num_replicas;
  const int cores = exe->options_.num_cores_per_replica;
  // ---- validate the assignment and the arguments ----
  TPUSIM_RETURN_IF_ERROR(CheckSpmdCall(
      *this, program, R, cores, assignment, per_replica_args,
      [&](const Buffer& b) { return BufferTensor(b).status(); }));
  const std::vector<Value>& params = program.parameters();
  const std::vector<Op>& ops = program.ops();
  const int n = static_cast<int>(ops.size());
  // Per op, its value on every replica (allocated when the op runs, freed
  // after its last use; a uniform value, below, has one slot).
  std::vector<std::vector<Tensor>> values(n);
  auto val = [&](int r, int id) -> Tensor& { return values[id][r]; };
  const bool dynamic = program.has_dynamic_shapes();
  std::vector<ValueType> types;
  if (dynamic) types.resize(static_cast<size_t>(R) * n);
  auto typ = [&](int r, int id) -> ValueType& {
    return types[static_cast<size_t>(id) * R + r];
  };
  for (int r = 0; r < R; ++r) {
    const std::vector<Buffer*>& args = per_replica_args[r];
    for (size_t p = 0; p < params.size(); ++p) {
      TPUSIM_ASSIGN_OR_RETURN(Tensor t, BufferTensor(*args[p]));
      const ValueType& want = ops[params[p].id].type;
      if (dynamic)
        typ(r, params[p].id) =
            ValueType(t.dtype(), t.shape(), want.dynamic_dims);
      if (values[params[p].id].empty()) values[params[p].id].resize(R);
      val(r, params[p].id) = std::move(t);
    }
  }

  // A value that is the same on every replica is "uniform" and stored once
  // (replica 0's slot), so a replicated step holds one copy of it, not R:
  //  * abstract values of their op's type (pod-scale abstract runs): an op
  //    with an abstract uniform operand makes an abstract uniform value
  //    without running per replica (what RunKernel / RunCollective would
  //    return for abstract operands: Tensor::Abstract of the op's type);
  //  * replica-invariant real values: constants, and kernels whose operands
  //    are all uniform and real, computed once on replica 0 (a kernel's
  //    result depends on its operands only; replica_id, parameters,
  //    variables and collectives are never invariant by this rule).
  // Static shapes only.
  std::vector<char> uniform(n, 0);
  auto read = [&](int r, int id) -> const Tensor& {
    return uniform[id] ? val(0, id) : val(r, id);
  };
  if (!dynamic) {
    for (Value p : params) {
      bool all = true;
      for (int r = 0; all && r < R; ++r) all = !val(r, p.id).has_data();
      uniform[p.id] = all;
    }
  }

  // Variable slots the program assigns get their per-device table now (never
  // from the replica threads).
  for (const Op& op : ops) {
    if (op.code == OpCode::kVariableAssign) {
      variables_.try_emplace(static_cast<int>(op.attrs.variable_slot),
                             devices_.size());
    }
  }

  // ---- run op by op, in lockstep across replicas ----
  // Each value is dropped after its last use (outputs are kept), so a pod-scale
  // run holds the live values only, not every value of every replica.
  std::vector<int> last_use(n, -1);
  for (int i = 0; i < n; ++i) {
    for (int o : ops[i].operands) last_use[o] = std::max(last_use[o], i);
  }
  for (Value v : program.outputs()) last_use[v.id] = n;
  // An op's operands whose last use it is are freed once the op has run on
  // every replica.
  auto release = [&](int i) {
    for (int o : ops[i].operands) {
      if (last_use[o] == i) std::vector<Tensor>().swap(values[o]);
    }
  };
  std::vector<absl::Status> status(R);
  InferContext ctx{R};
  auto run_one = [&](int i, int r) -> absl::Status {
    const Op& op = ops[i];
    if (op.code == OpCode::kParameter) return absl::OkStatus();
    absl::InlinedVector<const Tensor*, 4> operands;
    for (int o : op.operands) operands.push_back(&read(r, o));
    const ValueType* result = &op.type;
    ValueType true_type;
    if (dynamic) {
      absl::InlinedVector<const ValueType*, 4> in_types;
      for (int o : op.operands) in_types.push_back(&typ(r, o));
      if (op.code == OpCode::kVariableRead || op.code == OpCode::kConstant ||
          op.code == OpCode::kReplicaId) {
        true_type = op.type;
      } else {
        TPUSIM_ASSIGN_OR_RETURN(true_type,
                                InferOpType(op.code, op.attrs, in_types, ctx));
      }
      result = &true_type;
    }
    const int device = assignment.replica_devices[r][op.logical_core];
    const int slot = static_cast<int>(op.attrs.variable_slot);
    Tensor out;
    switch (op.code) {
      case OpCode::kVariableRead:
      case OpCode::kVariableAssignAdd: {
        auto held = variables_.find(slot);
        if (held == variables_.end() || held->second[device] == nullptr) {
          return absl::FailedPreconditionError(
              absl::StrCat("variable slot ", slot,
                           " is not initialized on device ", device));
        }
        const Tensor& var = *held->second[device];
        if (var.dtype() != op.type.dtype || var.shape() != op.type.shape) {
          return absl::FailedPreconditionError(
              absl::StrCat("variable slot ", slot, " on device ", device,
                           " holds ", var.spec().ToString(),
                           ", the program declares ", op.type.ToString()));
        }
        if (op.code == OpCode::kVariableRead) {
          out = var;
        } else {
          const Tensor* add_operands[2] = {&var, operands[0]};
          TPUSIM_ASSIGN_OR_RETURN(
              out, RunKernel(op.code, op.attrs, add_operands, *result, r));
          held->second[device] = std::make_shared<const Tensor>(out);
        }
        break;
      }
      case OpCode::kVariableAssign:
        // The slot's table exists (made before the lockstep loop, so the
        // replica threads only look it up).
        out = *operands[0];
        variables_.find(slot)->second[device] =
            std::make_shared<const Tensor>(out);
        break;
      default:
        TPUSIM_ASSIGN_OR_RETURN(
            out, RunKernel(op.code, op.attrs, operands, *result, r));
    }
    val(r, i) = std::move(out);
    if (dynamic) typ(r, i) = *result;
    return absl::OkStatus();
  };

  // True when op i makes a uniform value (see `uniform`); performs the
  // variable writes of a uniform assign. Any doubt (a missing or real
  // variable, a partial replica group) leaves the op to the normal path, which
  // reports errors as before.
  auto make_uniform = [&](int i) -> bool {
    const Op& op = ops[i];
    if (dynamic || op.code == OpCode::kParameter ||
        op.code == OpCode::kConstant || op.code == OpCode::kReplicaId) {
      return false;
    }
    // A kernel or collective with an abstract operand returns an abstract
    // result whatever its other operands hold; so does a variable op on
    // abstract variables. An assign stores its operand: that must be uniform
    // and abstract.
    bool any = false;
    for (int o : op.operands) any = any || (uniform[o] && !val(0, o).has_data());
    if (op.code == OpCode::kVariableAssign && !any) return false;
    if (!any && op.code != OpCode::kVariableRead &&
        op.code != OpCode::kVariableAssignAdd) {
      return false;
    }
    const int slot = static_cast<int>(op.attrs.variable_slot);
    auto device_of = [&](int r) {
      return assignment.replica_devices[r][op.logical_core];
    };
    if (op.code == OpCode::kVariableRead ||
        op.code == OpCode::kVariableAssignAdd) {
      auto held = variables_.find(slot);
      if (held == variables_.end()) return false;
      for (int r = 0; r < R; ++r) {
        const HeldVariable& v = held->second[device_of(r)];
        if (v == nullptr || v->has_data() || v->dtype() != op.type.dtype ||
            v->shape() != op.type.shape) {
          return false;
        }
      }
      // AssignAdd of abstract values leaves the abstract variables as they are.
    } else if (op.code == OpCode::kVariableAssign) {
      const Tensor& value = val(0, op.operands[0]);
      std::vector<HeldVariable>& held = variables_.find(slot)->second;
      HeldVariable shared;  // one for every device that needs it
      for (int r = 0; r < R; ++r) {
        HeldVariable& v = held[device_of(r)];
        if (v == nullptr || v->has_data() || v->dtype() != value.dtype() ||
            v->shape() != value.shape()) {
          if (shared == nullptr) shared = std::make_shared<const Tensor>(value);
          v = shared;
        }
      }
    } else if (IsCollective(op.code) && op.code != OpCode::kCollectivePermute) {
      size_t members = 0;
      for (const auto& g : exe->groups_[i]) members += g.size();
      if (members != static_cast<size_t>(R)) return false;
    }
    values[i].assign(1, op.code == OpCode::kVariableAssign
                            ? val(0, op.operands[0])
                            : Tensor::Abstract(op.type.dtype, op.type.shape));
    uniform[i] = 1;
    return true;
  };

  // True when op i is a kernel of replica-invariant real operands (see
  // `uniform`): constants, and elementwise, linear-algebra, reduction and
  // data-movement ops whose operands are all uniform.
  auto invariant = [&](int i) -> bool {
    const Op& op = ops[i];
    if (dynamic || !DependsOnOperandsOnly(op.code)) return false;
    for (int o : op.operands) {
      if (!uniform[o] || !val(0, o).has_data()) return false;
    }
    return true;
  };

  for (int i = 0; i < n; ++i) {
    const Op& op = ops[i];
    if (invariant(i)) {
      // Replica 0 fails first wherever the op fails (the lowest replica's
      // error wins), so computing it once reports the same error.
      values[i].resize(1);
      absl::Status s = run_one(i, 0);
      if (!s.ok()) return AtOp(s, program, i, 0);
      uniform[i] = 1;
      release(i);
      continue;
    }
    if (make_uniform(i)) {
      release(i);
      continue;
    }
    values[i].resize(R);
    if (IsCollective(op.code)) {
      const int src = op.operands[0];
      std::vector<std::vector<int64_t>> permute_group;
      const std::vector<std::vector<int64_t>>* groups = &exe->groups_[i];
      if (op.code == OpCode::kCollectivePermute) {
        permute_group.emplace_back(R);
        for (int r = 0; r < R; ++r) permute_group[0][r] = r;
        groups = &permute_group;
      }
      for (const std::vector<int64_t>& g : *groups) {
        std::vector<const Tensor*> operands;
        std::vector<ValueType> results;
        for (int64_t r : g) {
          operands.push_back(&read(static_cast<int>(r), src));
          if (dynamic) {
            const ValueType* in = &typ(static_cast<int>(r), src);
            absl::StatusOr<ValueType> t =
                InferOpType(op.code, op.attrs, {in}, ctx);
            if (!t.ok())
              return AtOp(t.status(), program, i, static_cast<int>(r));
            results.push_back(*t);
          } else {
            results.push_back(op.type);
          }
        }
        absl::StatusOr<std::vector<Tensor>> outs =
            RunCollective(op.code, op.attrs, operands, results);
        if (!outs.ok())
          return AtOp(outs.status(), program, i, static_cast<int>(g[0]));
        for (size_t k = 0; k < g.size(); ++k) {
          const int r = static_cast<int>(g[k]);
          if (dynamic) {
            Tensor& t = (*outs)[k];
            typ(r, i) =
                ValueType(t.dtype(), t.shape(), results[k].dynamic_dims);
          }
          val(r, i) = std::move((*outs)[k]);
        }
      }
      release(i);
      continue;
    }
    if (exe->parallel_[i]) {
      pool_->ParallelFor(R, [&](int r) { status[r] = run_one(i, r); });
      for (int r = 0; r < R; ++r) {
        if (!status[r].ok()) return AtOp(status[r], program, i, r);
      }
    } else {
      for (int r = 0; r < R; ++r) {
        absl::Status s = run_one(i, r);
        if (!s.ok()) return AtOp(s, program, i, r);
      }
    }
    release(i);
  }

  // ---- counters ----
  for (int r = 0; r < R; ++r) {
    for (int c = 0; c < cores; ++c) {
      const int device = assignment.replica_devices[r][c];
      DeviceTally& dp = profile_[device];
      dp.executions += 1;
      const CoreCounters& cc = exe->per_core_[c];
      dp.cross_core_bytes += cc.cross_core_bytes;
      dp.collective_bytes += cc.collective_bytes;
      for (const auto& [code, k] : cc.per_op) {
        OpTally& t = per_op_[device][static_cast<int>(code)];
        t.count += k.count;
        t.flops += k.flops;
        t.transcendentals += k.transcendentals;
        t.bytes_read += k.bytes_read;
        t.bytes_written += k.bytes_written;
      }
    }
  }

  // ---- outputs ----
  SpmdOutputs outputs(R);
  for (int r = 0; r < R; ++r) {
    outputs[r].reserve(program.outputs().size());
    for (Value v : program.outputs()) {
      const int device = assignment.replica_devices[r][ops[v.id].logical_core];
      outputs[r].push_back(std::unique_ptr<Buffer>(
          new HostBuffer(this, devices_[device].get(), read(r, v.id))));
    }
  }
  return outputs;
}

absl::Status HostBackend::WriteVariable(int device_id, int slot,
                                        const Tensor& value) {
  TPUSIM_RETURN_IF_ERROR(CheckDevice(device_id, "WriteVariable"));
  std::vector<HeldVariable>& held =
      variables_.try_emplace(slot, devices_.size()).first->second;
  // An abstract value the same as the one written last to the slot (on the
  // device before: initialisation writes every device in turn) is shared.
  if (!value.has_data() && device_id > 0) {
    const HeldVariable& before = held[device_id - 1];
    if (before != nullptr && !before->has_data() &&
        before->dtype() == value.dtype() && before->shape() == value.shape()) {
      held[device_id] = before;
      return absl::OkStatus();
    }
  }
  held[device_id] = std::make_shared<const Tensor>(value);
  return absl::OkStatus();
}

absl::StatusOr<Tensor> HostBackend::ReadVariable(int device_id,
                                                 int slot) const {
  TPUSIM_RETURN_IF_ERROR(CheckDevice(device_id, "ReadVariable"));
  auto it = variables_.find(slot);
  if (it == variables_.end() || it->second[device_id] == nullptr) {
    return absl::NotFoundError(absl::StrCat(
        "variable slot ", slot, " was never written on device ", device_id));
  }
  return *it->second[device_id];
}

absl::StatusOr<SpmdOutputs> HostBackend::ExecuteSpmdLoop(
    const Executable& executable, const SpmdAssignment& assignment,
    absl::Span<const std::vector<std::vector<Buffer*>>> per_iteration_args) {
  std::vector<int64_t> before;
  for (const DeviceTally& dp : profile_) before.push_back(dp.executions);
  absl::StatusOr<SpmdOutputs> out =
      Backend::ExecuteSpmdLoop(executable, assignment, per_iteration_args);
  // One device call: one execution per device that ran.
  for (size_t d = 0; d < profile_.size(); ++d) {
    if (profile_[d].executions > before[d]) {
      profile_[d].executions = before[d] + 1;
    }
  }
  return out;
}

absl::StatusOr<Profile> HostBackend::CollectProfile() const {
  Profile p;
  p.set_backend("host");
  for (size_t d = 0; d < profile_.size(); ++d) {
    const DeviceTally& t = profile_[d];
    DeviceProfile* dp = p.add_devices();
    dp->set_device_id(static_cast<int>(d));
    dp->set_executions(t.executions);
    dp->set_host_to_device_bytes(t.host_to_device_bytes);
    dp->set_device_to_host_bytes(t.device_to_host_bytes);
    dp->set_cross_core_bytes(t.cross_core_bytes);
    dp->set_collective_bytes(t.collective_bytes);
    OpCounters* total = dp->mutable_total();
    for (int code = 0; code < kNumOpCodes; ++code) {
      const OpTally& k = per_op_[d][code];
      if (k.count == 0) continue;
      OpCounters& c =
          (*dp->mutable_per_op())[std::string(OpCodeName(static_cast<OpCode>(code)))];
      c.set_count(k.count);
      c.set_flops(k.flops);
      c.set_transcendentals(k.transcendentals);
      c.set_bytes_read(k.bytes_read);
      c.set_bytes_written(k.bytes_written);
      total->set_count(total->count() + k.count);
      total->set_flops(total->flops() + k.flops);
      total->set_transcendentals(total->transcendentals() + k.transcendentals);
      total->set_bytes_read(total->bytes_read() + k.bytes_read);
      total->set_bytes_written(total->bytes_written() + k.bytes_written);
    }
  }
  return p;
}

void HostBackend::ResetProfile() {
  profile_.assign(devices_.size(), DeviceTally{});
  per_op_.assign(devices_.size(), std::vector<OpTally>(kNumOpCodes));
}

}  // namespace tpusim::runtime
